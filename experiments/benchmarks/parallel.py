"""The parallel regime: many jobs in flight, in synchronous batches and on an asynchronous cluster.

Every method of a run (:mod:`experiments.benchmarks.parallel_methods`) starts from the same
scrambled-Sobol points, one per worker, and is then asked through its public API.

``--mode batch``: q workers, rounds of q proposals; each round is evaluated and observed before
the next (what ``Optimizer.suggest(q)`` in a loop does).

``--mode async`` (how the daemon really runs): W workers on a simulated clock. Each evaluation
takes a duration drawn from a lognormal of median ``--job-seconds`` (sigma 0.5), the same
draws for every method of a seed. Whenever jobs finish, all that have finished are observed and
one proposal is made for every free worker, with the other running jobs pending. The proposal's
measured wall time advances the clock, as one proposer thread would see it: workers that
finished while it ran wait. The idle share is the worker-time spent waiting for proposals over
all worker-time.

Reported per (problem, method): the median and spread over seeds of the best value after given
numbers of evaluations and, for async runs, at given simulated times; seconds per proposal
call; the idle share. Each run is its own process (``--workers`` at once); ``--json`` is
rewritten as each run ends, with each run's summary (:mod:`experiments.benchmarks.checkpoints`:
the best value's changes against evaluations and simulated time, proposal seconds, waiting),
which answers every table exactly; ``--traces`` writes the full runs too (every value and
proposal time, megabytes a run), to a file named ``*.traces.json`` that git ignores. ``--include`` adds the runs of earlier reports to the summary (a
run of the same problem, method and seed made now replaces theirs), so seeds run on different
days make one table, each included run keeping its origin (``sources``, see
:mod:`experiments.benchmarks.merge`); the async clock's proposal times are this machine's at the
time, so include only reports from the same machine and code.

    python -m experiments.benchmarks.parallel --mode async --problems hartmann6 --methods ours,sobol
        [--workers-in-flight 50] [--evals 500] [--job-seconds 60] [--seeds 0-7] [--json out.json]
        [--traces out.traces.json] [--include earlier.json ...]
"""
from __future__ import annotations

import heapq
import os
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from spearmint_nn.problem.space import Space

from .checkpoints import best_after, best_at_time, summarise_run
from .command_line import benchmark_parser
from .functions import FUNCTIONS
from .parallel_methods import check_method, make_method, split_methods
from .problems import get_function, is_function
from .runs import run_in_processes, sourced_runs, write_report

TRACES_SUFFIX = ".traces.json"
DURATION_SIGMA = 0.5  # of log duration: the slowest of 50 jobs takes about 3x the median


def _setup(problem_name: str, method_name: str, seed: int, budget: int, initial: int,
           q: int | None = None) -> tuple[Any, Any, list]:
    import torch

    torch.set_num_threads(1)
    problem = get_function(problem_name)
    space = Space.from_config(problem.variables)
    method = make_method(method_name, space, seed, budget, initial, q)
    return problem, method, space.decode(space.sobol(initial, seed=seed))


def run_batches(problem_name: str, method_name: str, seed: int, q: int, evals: int,
                timer: Callable[[], float] = time.perf_counter, initial: int | None = None) -> dict[str, Any]:
    """One synchronous run: the shared Sobol points (``initial``, q by default), then rounds of
    ``propose(q)``."""
    problem, method, batch = _setup(problem_name, method_name, seed, evals, initial or q, q)
    values: list[float] = []
    seconds: list[float] = []
    while True:
        for params in batch:
            value = problem(params)
            method.observe(params, value)
            values.append(value)
        if len(values) >= evals:
            break
        started = timer()
        batch = method.propose(min(q, evals - len(values)), [])
        seconds.append(timer() - started)
    return {"problem": problem_name, "method": method_name, "seed": seed, "mode": "batch", "workers": q,
            "values": values, "propose_seconds": seconds}


def run_async(problem_name: str, method_name: str, seed: int, workers: int, evals: int, job_seconds: float,
              timer: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """One asynchronous run on the simulated clock (see the module docstring).

    Returns the values and simulated finish times (seconds) in the order the jobs finished, the
    wall seconds of each proposal call with how many points it made, and the idle share.
    """
    problem, method, first = _setup(problem_name, method_name, seed, evals, workers)
    durations = iter(np.random.default_rng(seed).lognormal(np.log(job_seconds), DURATION_SIGMA, evals))
    running: list[tuple[float, int, dict]] = []  # heap of (finish time, start order, params)
    started = 0

    def start(points: list[dict], now: float) -> None:
        nonlocal started
        for params in points:
            heapq.heappush(running, (now + next(durations), started, params))
            started += 1

    start(first, 0.0)
    clock = idle = 0.0
    values: list[float] = []
    times: list[float] = []
    calls: list[tuple[float, int]] = []
    while running:
        clock = max(clock, running[0][0])
        freed = []
        while running and running[0][0] <= clock:  # everything that finished while proposing
            finished_at, _, params = heapq.heappop(running)
            value = problem(params)
            method.observe(params, value)
            values.append(value)
            times.append(finished_at)
            freed.append(finished_at)
        n = min(len(freed), evals - started)
        if n <= 0:
            continue
        before = timer()
        points = method.propose(n, [params for _, _, params in running])
        spent = timer() - before
        calls.append((spent, n))
        clock += spent
        idle += sum(clock - t for t in freed[:n])  # these workers waited for the proposal
        start(points, clock)
    total = workers * clock
    return {"problem": problem_name, "method": method_name, "seed": seed, "mode": "async", "workers": workers,
            "job_seconds": job_seconds, "values": values, "finish_times": times,
            "propose_seconds": [s for s, _ in calls], "proposed": [n for _, n in calls],
            "idle_share": idle / total if total > 0 else 0.0, "elapsed_s": clock}


# ---- summaries ---------------------------------------------------------------------------------

def report_points(mode: str, q: int, evals: int, job_seconds: float) -> tuple[list[int], list[float]]:
    """The evaluation counts and simulated times a report's summary gives the best value at."""
    checkpoints = sorted({min(evals, c) for c in (q, 2 * q, evals // 2, evals)})
    return checkpoints, [job_seconds * k for k in (2, 5, 10)] if mode == "async" else []


def summarise(runs: list[dict[str, Any]], checkpoints: list[int], time_points: list[float]) -> list[dict[str, Any]]:
    """One row per (problem, method): medians and ranges over seeds, of full runs or of their
    summaries (:mod:`experiments.benchmarks.checkpoints`)."""
    runs = [summarise_run(r) for r in runs]
    rows = []
    for key in sorted({(r["problem"], r["method"]) for r in runs}):
        group = [r for r in runs if (r["problem"], r["method"]) == key]
        row: dict[str, Any] = {"problem": key[0], "method": key[1], "seeds": len(group)}
        for n in checkpoints:
            bests = [best_after(r, n) for r in group if r["evals"] >= n]
            if bests:
                row[f"best@{n}"] = (float(np.median(bests)), float(np.min(bests)), float(np.max(bests)))
        for t in time_points:
            bests = [best_at_time(r, t) for r in group if "best_by_time" in r]
            if bests:
                row[f"best@{t:g}s"] = (float(np.median(bests)), float(np.min(bests)), float(np.max(bests)))
        calls = sum(r["proposals"]["calls"] for r in group)
        row["s_per_call"] = sum(r["proposals"]["total_s"] for r in group) / calls if calls else 0.0
        if all("idle_share" in r for r in group):
            row["idle_share"] = float(np.median([r["idle_share"] for r in group]))
        rows.append(row)
    return rows


def check_sizes(runs: Sequence[dict[str, Any]], mode: str, workers: int, evals: int) -> list[str]:
    """What is wrong with ``runs`` for a report of ``mode``, ``workers`` in flight and ``evals``."""
    wrong = []
    for run in runs:
        n = summarise_run(run)["evals"]
        if (run["mode"], run["workers"], n) != (mode, workers, evals):
            wrong.append(f"{run['method']} seed {run['seed']} ran {run['mode']} with {run['workers']} in flight "
                         f"and {n} evaluations, not {mode}, {workers} and {evals}")
    return wrong


def table(rows: list[dict[str, Any]]) -> str:
    columns = [c for c in rows[0] if c.startswith("best@")] if rows else []
    head = ["problem", "method", "seeds", *columns, "s/call", "idle"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in rows:
        cells = [row["problem"], row["method"], str(row["seeds"])]
        cells += [f"{row[c][0]:.4g} [{row[c][1]:.3g}, {row[c][2]:.3g}]" if c in row else "-" for c in columns]
        cells += [f"{row['s_per_call']:.2f}", f"{100 * row['idle_share']:.1f}%" if "idle_share" in row else "-"]
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    # --json holds each run's summary (see benchmarks.checkpoints); --traces the full runs
    parser = benchmark_parser("parallel", __doc__, json=True, seeds="0-7", workers=True, include=True)
    parser.add_argument("--mode", choices=("batch", "async"), default="async")
    parser.add_argument("--problems", default="hartmann6",
                        help=f"comma-separated, from {', '.join(FUNCTIONS)} or bbob-f<k>-d<dim>-i<inst>")
    parser.add_argument("--methods", default="ours,sobol", help="comma-separated (see parallel_methods)")
    parser.add_argument("--workers-in-flight", type=int, default=50, help="q of a batch, or W workers")
    parser.add_argument("--evals", type=int, default=500)
    parser.add_argument("--job-seconds", type=float, default=60.0, help="median job duration (async)")
    parser.add_argument("--traces", metavar="NAME.traces.json",
                        help="also write every run's full trace here (values, finish times, each proposal's "
                             "seconds); git ignores *.traces.json")
    args = parser.parse_args(argv)
    if args.traces and not args.traces.endswith(TRACES_SUFFIX):
        parser.error(f"--traces: name the file *{TRACES_SUFFIX} (megabytes a run; git ignores that name)")
    # mistakes in the names are usage errors before any run starts, not a worker's traceback later
    problems, methods = args.problems.split(","), split_methods(args.methods)
    unknown = [p for p in problems if not is_function(p)]
    if unknown:
        parser.error(f"--problems: unknown {', '.join(unknown)} (choose from {', '.join(FUNCTIONS)} or "
                     f"bbob-f<1-24>-d<dim>-i<inst>)")
    for method in methods:
        try:
            check_method(method)
        except ValueError as error:
            parser.error(f"--methods: {error}")
    q, evals = args.workers_in_flight, args.evals
    checkpoints, time_points = report_points(args.mode, q, evals, args.job_seconds)
    function, sizes = (run_batches, (q, evals)) if args.mode == "batch" else (run_async, (q, evals, args.job_seconds))
    jobs = [(p, m, s, *sizes) for p in problems for m in methods for s in args.seeds]
    earlier, sources = sourced_runs(args.include)  # each included run keeps its invocation's provenance
    for job in jobs:  # what runs now replaces the earlier run of its problem, method and seed
        earlier.pop(job[:3], None)
    wrong = check_sizes(list(earlier.values()), args.mode, q, evals)
    if wrong:
        parser.error(f"--include: {wrong[0]}")
    load_before, start = os.getloadavg(), time.time()
    traces = [run for run in earlier.values() if "values" in run]  # included full traces stay full
    runs = [summarise_run(run) for run in earlier.values()]
    for _, run in run_in_processes(function, jobs, args.workers):
        traces.append(run)
        runs.append(summarise_run(run))
        print(f"{run['problem']} {run['method']} seed {run['seed']}: best {min(run['values']):.4f}", file=sys.stderr,
              flush=True)
        summary = summarise(runs, checkpoints, time_points)
        if args.json:
            write_report(args.json, load_before, start, arguments=vars(args), sources=sources, summary=summary,
                         runs=runs)
        if args.traces:
            write_report(args.traces, load_before, start, arguments=vars(args), sources=sources, summary=summary,
                         runs=traces)
    if not runs:
        parser.error("nothing to summarise: no seeds to run and no --include")
    print(table(summarise(runs, checkpoints, time_points)))
    print(f"mode {args.mode}, {q} in flight, {evals} evaluations; {os.cpu_count()} CPUs, load "
          f"{load_before[0]:.1f} before, {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
