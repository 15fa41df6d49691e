"""COCO-style reporting of BBOB runs: runtime ECDFs, their areas and ranks per problem.

Read from the per-run summaries of the parallel harness (:mod:`experiments.benchmarks.checkpoints`:
``best_by_evals`` and, for asynchronous runs, ``best_by_time``), nothing else. As COCO does
(Hansen, Auger, Brockhoff and Tusar, "Anytime performance assessment in blackbox optimization
benchmarking", IEEE TEVC 26(6), 2022):

- every run of a BBOB problem ``bbob-f<k>-d<dim>-i<inst>`` has 51 targets f_opt + 10^k
  (:func:`experiments.benchmarks.bbob.targets`); a (run, target) pair's *runtime* is the number of
  evaluations (or the simulated seconds) after which the run's best value first reached the
  target, infinite if it never did. A seed is one more run of its (function, instance), so every
  (function, instance, seed, target) counts once;
- the *runtime ECDF* at budget b is the share of a method's pairs with runtime at most b, over a
  dimension's function group (COCO's five, :data:`~experiments.benchmarks.bbob.GROUPS`) or over
  all 24 functions. Budgets in evaluations are given as multiples of the dimension, as COCO plots
  them, up to the fewest evaluations of a run of the dimension; budgets in time as seconds of the
  simulated clock, in multiples of the median job, up to the shortest run's simulated time;
- the *ECDF area* up to a budget B is the area under the ECDF against log budget from 1 to B,
  divided by log B: a pair reached after r <= B evaluations adds (log B - log r) / log B (one when
  reached at the first), an unreached one nothing; so it weighs early successes more and is one
  only when every target is reached at once;
- *ranks per problem*: on each (function, dimension, instance), methods are ranked by the share
  of their (seed, target) pairs reached within the common budget, the best first and ties sharing
  the mean of their ranks; a method's rank is the mean over problems.

``python -m experiments.benchmarks.ecdf REPORT.json...`` prints the tables; ``--json`` writes the
summary (no traces) with its provenance and each report's.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any, Iterable, Sequence

import numpy as np

from . import bbob
from .checkpoints import summarise_run
from .command_line import benchmark_parser
from .problems import get_function
from .provenance import write_json

Run = dict[str, Any]
#: Budgets of the tables, in evaluations per dimension (those within the runs' budgets are shown).
BUDGETS_PER_DIM = (1, 2, 5, 10, 20, 50, 100)
#: Budgets of the time tables, in median job durations of the simulated clock (those within the
#: runs' simulated time are shown).
TIMES_PER_JOB = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def runtimes(changes: Sequence[Sequence[float]], minimum: float) -> np.ndarray:
    """For each of COCO's 51 targets above ``minimum``, the first count (or time) in ``changes``
    (``[[at, best], ...]`` as a run summary keeps them) whose best value reaches it; inf if none."""
    return reach(changes, bbob.targets(minimum))


def reach(changes: Sequence[Sequence[float]], targets: np.ndarray) -> np.ndarray:
    """For each of ``targets``, the first count (or time) in ``changes`` whose best value is at
    most the target; inf if none."""
    found = np.full(len(targets), np.inf)
    for at, best in changes:
        reached = (targets >= best) & np.isinf(found)
        found[reached] = at
    return found


def ecdf(times: np.ndarray, budgets: Iterable[float]) -> list[float]:
    """Share of the runtimes ``times`` (any shape) at most each budget."""
    flat = np.ravel(times)
    return [float(np.mean(flat <= b)) if flat.size else 0.0 for b in budgets]


def area(times: np.ndarray, budget: float) -> float:
    """The normalised area under the ECDF against log budget from 1 to ``budget`` (module docstring)."""
    flat = np.ravel(times)
    if flat.size == 0 or budget <= 1:
        return float(np.mean(flat <= 1)) if flat.size else 0.0
    reached = flat[flat <= budget]
    return float(np.sum(np.log(budget) - np.log(np.maximum(reached, 1.0))) / (np.log(budget) * flat.size))


class Runtimes:
    """The runtimes of every BBOB run given, by method and problem, against evaluations and time."""

    def __init__(self, runs: Iterable[Run]):
        self.by_evals: dict[tuple[str, str], list[np.ndarray]] = defaultdict(list)  # (method, problem)
        self.by_time: dict[tuple[str, str], list[np.ndarray]] = defaultdict(list)
        self.evals: dict[str, int] = {}  # problem -> the fewest evaluations of any run of it
        self.elapsed: dict[str, float] = {}  # problem -> the shortest simulated time of a run of it
        self.job_seconds: float | None = None
        minima: dict[str, float] = {}
        for run in map(summarise_run, runs):
            problem = run["problem"]
            bbob.parse_name(problem)
            if problem not in minima:
                minima[problem] = run["minimum"] if "minimum" in run else get_function(problem).minimum
            key = (run["method"], problem)
            self.by_evals[key].append(runtimes(run["best_by_evals"], minima[problem]))
            if "best_by_time" in run:
                self.by_time[key].append(runtimes(run["best_by_time"], minima[problem]))
                self.job_seconds = run["job_seconds"]
                self.elapsed[problem] = min(self.elapsed.get(problem, run["elapsed_s"]), run["elapsed_s"])
            self.evals[problem] = min(self.evals.get(problem, run["evals"]), run["evals"])

    @property
    def methods(self) -> list[str]:
        return sorted({method for method, _ in self.by_evals})

    @property
    def dims(self) -> list[int]:
        return sorted({bbob.parse_name(problem)[1] for problem in self.evals})

    def pairs(self, method: str, dim: int, group: str | None, by_time: bool = False) -> np.ndarray:
        """The runtimes of ``method``'s (run, target) pairs in ``dim`` dimensions and ``group``
        (None: all functions), shape (runs, 51)."""
        source = self.by_time if by_time else self.by_evals
        rows = [times for (m, problem), runs in source.items() if m == method
                for times in runs if _in(problem, dim, group)]
        return np.array(rows).reshape(-1, len(bbob.TARGET_EXPONENTS))

    def ranks(self) -> dict[str, Any]:
        """Each method's rank on each problem and its mean rank (module docstring)."""
        per_problem: dict[str, dict[str, float]] = {}
        for problem, budget in sorted(self.evals.items()):
            shares = {m: float(np.mean(np.array(runs) <= budget)) for (m, p), runs in self.by_evals.items()
                      if p == problem}
            if len(shares) < 2:
                continue
            methods = sorted(shares)
            order = mean_ranks([-shares[m] for m in methods])
            per_problem[problem] = dict(zip(methods, order))
        mean = {m: float(np.mean([ranks[m] for ranks in per_problem.values() if m in ranks]))
                for m in self.methods if any(m in ranks for ranks in per_problem.values())}
        return {"mean": mean, "per_problem": per_problem}


def _in(problem: str, dim: int, group: str | None) -> bool:
    function, d, _ = bbob.parse_name(problem)
    return d == dim and (group is None or function in bbob.GROUPS[group])


def mean_ranks(scores: Sequence[float]) -> list[float]:
    """Ranks of ``scores`` (lowest first, from 1), tied scores sharing the mean of their ranks."""
    ranks = [0.0] * len(scores)
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def report(runs: Iterable[Run]) -> dict[str, Any]:
    """The compact summary: per dimension and group (and ``all``), each method's ECDF at the
    budgets (evaluations / d, and simulated time where runs have it), its area, and the ranks."""
    data = Runtimes(runs)
    out: dict[str, Any] = {"targets": "f_opt + 10^k, k = 2, 1.8, ..., -8", "dims": {}, "ranks": data.ranks()}
    for dim in data.dims:
        budget = min(n for p, n in data.evals.items() if bbob.parse_name(p)[1] == dim)
        per_dim = [b for b in BUDGETS_PER_DIM if b * dim <= budget]
        entry: dict[str, Any] = {"budget": budget, "budgets_per_dim": per_dim, "groups": {}}
        horizon = min((t for p, t in data.elapsed.items() if bbob.parse_name(p)[1] == dim), default=0.0)
        if data.job_seconds and horizon:
            entry["times_s"] = [k * data.job_seconds for k in TIMES_PER_JOB if k * data.job_seconds <= horizon]
        for group in [*bbob.GROUPS, None]:
            rows = {}
            for method in data.methods:
                times = data.pairs(method, dim, group)
                if not times.size:
                    continue
                row = {"runs": len(times), "ecdf": ecdf(times, [b * dim for b in per_dim]),
                       "area": area(times, budget)}
                timed = data.pairs(method, dim, group, by_time=True)
                if timed.size and "times_s" in entry:
                    row["ecdf_time"] = ecdf(timed, entry["times_s"])
                rows[method] = row
            if rows:
                entry["groups"]["all" if group is None else group] = rows
        out["dims"][str(dim)] = entry
    return out


def table(summary: dict[str, Any]) -> str:
    """The summary as text tables: one per dimension, a row per group and method."""
    lines = []
    for dim, entry in summary["dims"].items():
        head = ["group", "method", "runs", *[f"{b}d" for b in entry["budgets_per_dim"]], "area"]
        if "times_s" in entry:
            head += [f"{t:g}s" for t in entry["times_s"]]
        lines += [f"{dim}-D, budget {entry['budget']} evaluations: share of (run, target) pairs reached",
                  " | ".join(head), " | ".join("---" for _ in head)]
        for group, rows in entry["groups"].items():
            for method, row in rows.items():
                cells = [group, method, str(row["runs"]), *[f"{v:.3f}" for v in row["ecdf"]], f"{row['area']:.3f}"]
                if "times_s" in entry:
                    cells += [f"{v:.3f}" for v in row.get("ecdf_time", [])] or ["-"] * len(entry["times_s"])
                lines.append(" | ".join(cells))
        lines.append("")
    ranks = summary["ranks"]["mean"]
    if ranks:
        problems = len(summary["ranks"]["per_problem"])
        lines.append(f"mean rank over {problems} problems (1 = best): "
                     + ", ".join(f"{m} {r:.2f}" for m, r in sorted(ranks.items(), key=lambda item: item[1])))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("ecdf", __doc__.split("\n\n")[0], json=True)
    parser.add_argument("reports", nargs="+", help="JSON reports of the suite or of benchmarks.parallel")
    args = parser.parse_args(argv)
    runs, sources = [], {}
    for path in args.reports:
        with open(path) as handle:
            content = json.load(handle)
        runs += [run for run in content["runs"] if run["problem"].startswith(bbob.PREFIX)]
        sources[path] = content.get("provenance")  # where the runs were made, beside where this is
    if not runs:
        parser.error("no runs of BBOB problems in these reports")
    summary = report(runs)
    print(table(summary))
    if args.json:
        write_json(args.json, {"sources": sources, **summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
