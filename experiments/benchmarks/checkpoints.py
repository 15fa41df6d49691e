"""Per-run summaries of the parallel benchmark: what its tables read, small enough for git.

A full trace of an asynchronous run (every value, finish time and proposal time) at 800 workers
is about a megabyte; the tables of RESULTS.md and the README read only the best value after n
evaluations or at simulated time t, the seconds per proposal call and the waiting share. A
summary keeps exactly what answers those, for any n and t, not only for the checkpoints a table
uses today:

- ``best_by_evals``: ``[[n, best], ...]``, the running best after the n-th evaluation (in the
  order the evaluations finished) at every n where it changes; the best after any n is the last
  entry with a count up to n, exactly as the full trace gives it;
- ``best_by_time`` (asynchronous runs): ``[[t, best], ...]``, the same against simulated finish
  time;
- ``evals``: evaluations in the run;
- ``proposals``: ``calls``, ``points``, ``total_s``, ``median_s``, ``max_s`` of the proposal calls,
  ``max_points`` (the most points one call proposed), ``by_tenth_s``, the mean seconds per call
  in each tenth of the calls in order (fewer parts when there were fewer calls), which shows how
  proposals slow as N grows, and ``first_calls``, ``[seconds, points]`` of the first
  :data:`FIRST_CALLS` calls, where a search's start is decided;
- every other field of the run as it was (problem, method, seed, mode, workers, job seconds,
  idle share, simulated elapsed seconds).

``python -m experiments.benchmarks.checkpoints FILE...`` rewrites reports of the parallel
benchmark with their runs summarised (a summarised run is left as it is), keeping every other
field; the benchmark writes summaries itself and full traces only where ``--traces`` says.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Sequence

import numpy as np

from .command_line import benchmark_parser
from .provenance import dump_json
from .summary import best_so_far

Run = dict[str, Any]
TRACE_FIELDS = ("values", "finish_times", "propose_seconds", "proposed")
FIRST_CALLS = 10


def summarise_run(run: Run) -> Run:
    """The summary of one run of the parallel benchmark (a summary is returned as it is)."""
    if "values" not in run:
        return run
    summary = {k: v for k, v in run.items() if k not in TRACE_FIELDS}
    summary["evals"] = len(run["values"])
    summary["best_by_evals"] = _changes(np.arange(1, len(run["values"]) + 1), best_so_far(run["values"]))
    if "finish_times" in run:
        order = np.argsort(run["finish_times"], kind="stable")
        times = np.asarray(run["finish_times"], dtype=float)[order]
        summary["best_by_time"] = _changes(times, best_so_far(np.asarray(run["values"], dtype=float)[order]))
    seconds = np.asarray(run["propose_seconds"], dtype=float)
    # a batch run's calls each propose for every free worker but the last, which fills the budget
    points = run.get("proposed") or [min(run["workers"], len(run["values"]) - run["workers"] * (i + 1))
                                     for i in range(len(seconds))]
    summary["proposals"] = {
        "calls": len(seconds),
        "points": int(sum(points)),
        "max_points": int(max(points, default=0)),
        "total_s": _seconds(seconds.sum()),
        "median_s": _seconds(np.median(seconds)) if len(seconds) else 0.0,
        "max_s": _seconds(seconds.max()) if len(seconds) else 0.0,
        "by_tenth_s": [_seconds(part.mean()) for part in np.array_split(seconds, min(10, len(seconds)))]
        if len(seconds) else [],
        "first_calls": [[_seconds(s), int(n)] for s, n in zip(seconds[:FIRST_CALLS], points)],
    }
    return summary


def _changes(at: np.ndarray, best: np.ndarray) -> list[list[float]]:
    """``[[at, best], ...]`` where ``best`` (non-increasing) first takes each of its values."""
    keep = np.ones(len(best), dtype=bool)
    keep[1:] = best[1:] != best[:-1]
    return [[_number(a), float(b)] for a, b in zip(at[keep], best[keep])]


def _seconds(value: Any) -> float:
    """Measured seconds to 4 significant digits: the timer's noise is larger than what more
    digits say, and they are a fifth of a suite's result file."""
    return float(f"{float(value):.4g}")


def _number(value: Any) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def best_after(run: Run, n: int) -> float:
    """The best value among the first ``n`` evaluations of a (summarised or full) run."""
    return _last_up_to(summarise_run(run)["best_by_evals"], n)


def best_at_time(run: Run, t: float) -> float:
    """The best value among the evaluations finished by simulated time ``t`` (inf if none)."""
    return _last_up_to(summarise_run(run)["best_by_time"], t)


def _last_up_to(changes: Sequence[Sequence[float]], x: float) -> float:
    best = float("inf")
    for at, value in changes:
        if at > x:
            break
        best = value
    return best


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("checkpoints", __doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="reports of benchmarks.parallel, rewritten in place")
    args = parser.parse_args(argv)
    for path in args.files:
        with open(path) as handle:
            report = json.load(handle)
        runs = report.get("runs")
        if not runs or not all("mode" in run for run in runs):
            print(f"{path}: not a report of benchmarks.parallel, left as it is", file=sys.stderr)
            continue
        dump_json(path, {**report, "runs": [summarise_run(run) for run in runs]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
