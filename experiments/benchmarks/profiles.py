"""Data profiles of problems whose optimum is unknown (the real hyperparameter tasks of
:mod:`experiments.benchmarks.hpo`), reported as the suite reports BBOB.

Without f_opt, COCO's targets f_opt + 10^k do not exist. The targets are those of a data
profile (Moré and Wild, "Benchmarking derivative-free optimization algorithms", SIAM J. Optim.
20(1), 2009), derived from the runs themselves: on a problem and seed, with ``f_start`` the best
value of the shared start (the same for every method) and ``f_best`` the best value any run of
the problem found (any method, any seed), the 16 targets are ``f_best + tau (f_start - f_best)``
for tau = 1, 10^-0.2, ..., 10^-3: the share of the possible improvement over the start that a
run has made, down to 99.9% of it. A (run, target) pair's runtime is the evaluations, divided by
the problem's dimension, after which the run's best first reached the target. From there as
:mod:`experiments.benchmarks.ecdf`: the runtime ECDF at budgets of evaluations / d, its area
against log budget (one when every target is reached at once), and each method's mean rank over
the problems by the share of its (seed, target) pairs reached within the common budget.

Because ``f_best`` is the best of the runs reported together, a report's figures are relative to
the methods in it: merged reports are profiled again over all their runs.

    python -m experiments.benchmarks.profiles REPORT.json...
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any, Iterable, Sequence

import numpy as np

from .checkpoints import best_after, summarise_run
from .command_line import benchmark_parser
from .ecdf import area, ecdf, mean_ranks, reach
from .ecdf import report as coco_report

Run = dict[str, Any]
#: tau: the targets are f_best + tau (f_start - f_best), hardest last
TOLERANCES = 10.0 ** -np.linspace(0.0, 3.0, 16)
#: budgets of the table, in evaluations per dimension (those within the runs' budgets are shown)
BUDGETS_PER_DIM = (1, 2, 5, 10, 20, 50, 100)


def shared_start(run: Run) -> int:
    """How many evaluations of ``run`` were the shared start (those no proposal made)."""
    return run["evals"] - run["proposals"]["points"]


def report(runs: Iterable[Run]) -> dict[str, Any]:
    """The compact summary: each method's ECDF at the budgets, its area, and the mean ranks."""
    by_problem: dict[str, list[Run]] = defaultdict(list)
    for run in map(summarise_run, runs):
        by_problem[run["problem"]].append(run)
    pairs: dict[str, list[np.ndarray]] = defaultdict(list)  # method -> runtimes / d of each run
    per_problem_ranks: dict[str, dict[str, float]] = {}
    problems: dict[str, Any] = {}
    budget = np.inf  # evaluations / d: the fewest of any run
    for problem, problem_runs in sorted(by_problem.items()):
        dim = problem_runs[0]["dim"]
        winner = min(problem_runs, key=lambda run: run["best_by_evals"][-1][1])
        best = winner["best_by_evals"][-1][1]
        problems[problem] = {"dim": dim, "f_best": best, "found_by": winner["method"]}
        runtimes: dict[str, list[np.ndarray]] = defaultdict(list)
        for run in problem_runs:
            start = best_after(run, shared_start(run))
            runtimes[run["method"]].append(reach(run["best_by_evals"], best + TOLERANCES * (start - best)) / dim)
        own = min(run["evals"] for run in problem_runs) / dim
        budget = min(budget, own)
        for method, rows in runtimes.items():
            pairs[method] += rows
        if len(runtimes) > 1:
            methods = sorted(runtimes)
            per_problem_ranks[problem] = dict(zip(methods, mean_ranks(
                [-float(np.mean(np.array(runtimes[m]) <= own)) for m in methods])))
    shown = [b for b in BUDGETS_PER_DIM if b <= budget]
    rows = {method: {"runs": len(times), "ecdf": ecdf(np.array(times), shown), "area": area(np.array(times), budget)}
            for method, times in sorted(pairs.items())}
    mean = {m: float(np.mean([ranks[m] for ranks in per_problem_ranks.values() if m in ranks]))
            for m in rows if any(m in ranks for ranks in per_problem_ranks.values())}
    return {"targets": "f_best + tau (f_start - f_best), tau = 1, 10^-0.2, ..., 10^-3", "budget_per_dim": budget,
            "budgets_per_dim": shown, "methods": rows, "problems": problems,
            "ranks": {"mean": mean, "per_problem": per_problem_ranks}}


def suite_report(runs: Sequence[Run]) -> dict[str, Any]:
    """The suite's summary of ``runs``: their data profile when none records its optimum (the
    real tasks), COCO's runtime ECDFs (:func:`experiments.benchmarks.ecdf.report`) otherwise."""
    return (report if all(run["minimum"] is None for run in runs) else coco_report)(runs)


def table(summary: dict[str, Any]) -> str:
    """The summary as a text table: a row per method."""
    head = ["method", "runs", *[f"{b}d" for b in summary["budgets_per_dim"]], "area", "mean rank"]
    lines = [f"{len(summary['problems'])} problems, budget {summary['budget_per_dim']:g} x d evaluations: share of "
             f"(run, target) pairs reached (targets {summary['targets']})", " | ".join(head),
             " | ".join("---" for _ in head)]
    ranks = summary["ranks"]["mean"]
    for method, row in summary["methods"].items():
        lines.append(" | ".join([method, str(row["runs"]), *[f"{v:.3f}" for v in row["ecdf"]], f"{row['area']:.3f}",
                                 f"{ranks[method]:.2f}" if method in ranks else "-"]))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = benchmark_parser("profiles", __doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", help="suite reports (JSON) of real hyperparameter tasks")
    args = parser.parse_args(argv)
    runs = [run for path in args.reports for run in json.loads(open(path).read())["runs"]]
    print(table(report(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
