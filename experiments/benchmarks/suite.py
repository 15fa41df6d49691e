"""The field's suite: COCO's BBOB functions in the parallel harness, reported as COCO does.

Every (function, dimension, instance, method, seed) is one run of the parallel harness
(:mod:`experiments.benchmarks.parallel`) on ``bbob-f<k>-d<dim>-i<inst>``
(:mod:`experiments.benchmarks.bbob`), each in its own process with one thread; the report is
COCO's runtime ECDFs per dimension and function group, their areas and the mean ranks per problem
(:mod:`experiments.benchmarks.ecdf`). Regimes:

- ``sequential``: one evaluation at a time after a shared Sobol start of d + 1 points;
- ``batch10``, ``batch50``: rounds of q = 10 or 50 after a shared start of q points;
- ``async50``, ``async200``: W = 50 or 200 workers on the simulated clock (jobs of median
  ``--job-seconds``, each proposal's wall time charged), after a shared start of W points.

Every run is also reported against simulated time. The synchronous regimes get the clock the
asynchronous ones have (:func:`batch_finish_times`): the jobs' durations are the same lognormal
draws of the seed, a round starts when the slowest job of the one before has finished and its
proposal has been made (its measured wall time), and each result counts from its job's end.

``--tasks`` runs real hyperparameter tasks instead (:mod:`experiments.benchmarks.hpo`:
Bayesmark's scikit-learn models on scikit-learn's datasets, ``all`` for its 24), each seed a run
from its own shared start, reported as data profiles against the best value any run found
(:mod:`experiments.benchmarks.profiles`).

``--quick`` checks the harness, not the quality, in about a minute: 2-D, the first function of
each of the five groups, instance 1, 5 x d evaluations or the shared start and two rounds of the
regime if more (the options it replaces are ignored).

The budget is ``--budget`` x d evaluations (the issue's 10 x d to 50 x d). The JSON report holds
the provenance, the arguments, the ECDF summary and every run's summary (no traces); it is
rewritten as each run ends, so an interrupted suite keeps what finished.

    python -m experiments.benchmarks.suite --dims 2,5 --functions 1-24 --instances 1-5
        --regime sequential --methods ours,sobol,turbo --seeds 1 [--budget 20] [--workers 1]
        [--json suite.json]
    python -m experiments.benchmarks.suite --quick --regime batch10 --methods ours,sobol
    python -m experiments.benchmarks.suite --tasks all --regime sequential --methods ours,sobol --seeds 5
"""
from __future__ import annotations

import itertools
import math
import os
import sys
import time
from typing import Any, Sequence

import numpy as np

from spearmint_nn.problem.space import Space

from . import bbob, ecdf, hpo, profiles
from .checkpoints import summarise_run
from .command_line import benchmark_parser
from .parallel import DURATION_SIGMA, run_async, run_batches
from .parallel_methods import check_method, make_method, split_methods
from .problems import get_function
from .runs import run_in_processes, seed_list, write_report

#: what ``--quick`` runs: the first function of each group, in 2-D, on instance 1 (its budget: :func:`quick_budget`)
QUICK = {"dims": "2", "functions": [min(members) for members in bbob.GROUPS.values()], "instances": [1]}

#: regime -> (harness mode, points in flight)
REGIMES = {"sequential": ("batch", 1), "batch10": ("batch", 10), "batch50": ("batch", 50),
           "async50": ("async", 50), "async200": ("async", 200)}


def run_one(problem: str, method: str, seed: int, regime: str, evals: int, job_seconds: float) -> dict[str, Any]:
    """One run of the suite: the harness's run of ``problem`` in ``regime``, summarised, with its
    regime and the problem's optimum (what the ECDFs' targets are counted from)."""
    mode, q = REGIMES[regime]
    function = get_function(problem)
    dim = function.dim
    if mode == "batch":
        initial = max(q, dim + 1)
        run = run_batches(problem, method, seed, q, evals, initial=initial)
        sizes = round_sizes(initial, q, evals)
        durations = np.random.default_rng(seed).lognormal(np.log(job_seconds), DURATION_SIGMA, evals)
        times = batch_finish_times(sizes, run["propose_seconds"], durations)
        run.update(job_seconds=job_seconds, finish_times=times, proposed=sizes[1:], elapsed_s=max(times))
    else:
        run = run_async(problem, method, seed, q, evals, job_seconds)
    # a real task's optimum is unknown (NaN): none recorded
    minimum = None if math.isnan(function.minimum) else function.minimum
    return {**summarise_run(run), "regime": regime, "dim": dim, "minimum": minimum}


def quick_budget(regime: str, dim: int = 2) -> int:
    """``--quick``'s evaluations per dimension: 5, or the regime's shared start and two rounds."""
    q = REGIMES[regime][1]
    return max(5, -(-(max(q, dim + 1) + 2 * q) // dim))


def round_sizes(initial: int, q: int, evals: int) -> list[int]:
    """Points of each round of a synchronous run: the shared start, then q (fewer in the last)."""
    return [initial] + [min(q, evals - n) for n in range(initial, evals, q)]


def batch_finish_times(sizes: Sequence[int], propose_seconds: Sequence[float],
                       durations: Sequence[float]) -> list[float]:
    """Simulated finish time of each evaluation of a synchronous run of rounds of ``sizes``
    (module docstring): the k-th proposal's seconds come before round k + 1."""
    times: list[float] = []
    start = 0.0
    for round_, size in enumerate(sizes):
        if round_:
            start += propose_seconds[round_ - 1]
        ends = [start + d for d in durations[len(times):len(times) + size]]
        times += ends
        start = max(ends)
    return times


def check_available(methods: list[str]) -> list[str]:
    """The mistakes in ``methods``: unknown names, and references whose library is not installed
    (each built once on a small space, which imports its library)."""
    space = Space.from_config({"x": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0}})
    mistakes = []
    for method in methods:
        try:
            check_method(method)
            make_method(method, space, 0, 10, 2)
        except (ValueError, ImportError) as error:
            mistakes.append(str(error))
    return mistakes


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("suite", __doc__, json=True, seeds="1", seed_count=True, workers=True)
    parser.add_argument("--dims", default="2,5", help="comma-separated dimensions (COCO's: 2,3,5,10,20,40)")
    parser.add_argument("--functions", type=seed_list, default="1-24", help="BBOB functions: a range A-B or a list")
    parser.add_argument("--instances", type=seed_list, default="1-5", help="a range A-B or a list")
    parser.add_argument("--regime", choices=REGIMES, default="sequential")
    parser.add_argument("--methods", default="ours,sobol", help="comma-separated (see parallel_methods)")
    parser.add_argument("--budget", type=int, default=20, help="evaluations per dimension")
    parser.add_argument("--job-seconds", type=float, default=60.0, help="median job duration (async regimes)")
    parser.add_argument("--tasks", default=None, help="real hyperparameter tasks instead of BBOB: 'all' ("
                        f"{len(hpo.TASKS)}) or a comma-separated list of hpo-<model>-<dataset>-<metric> (--dims, "
                        "--functions and --instances are then not used; the runs differ by --seeds)")
    parser.add_argument("--quick", action="store_true", help="a check of the harness, not the quality: " + ", ".join(
        f"{key} {value}" for key, value in QUICK.items()) + ", 5 x d evaluations or the start and two rounds")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK, budget=quick_budget(args.regime))
    dims = [int(d) for d in args.dims.split(",")]
    if any(d < 2 for d in dims) or any(f not in bbob.FUNCTIONS for f in args.functions) or min(args.instances) < 1:
        parser.error("BBOB has dimensions from 2, functions 1-24 and instances from 1")
    methods = split_methods(args.methods)
    mistakes = check_available(methods)
    if mistakes:
        parser.error("--methods: " + "; ".join(mistakes))
    if args.tasks is not None:
        tasks = list(hpo.TASKS) if args.tasks == "all" else args.tasks.split(",")
        try:
            sizes = {task: len(hpo.SPACES[hpo.parse_name(task)[0]]) for task in tasks}
        except ValueError as error:
            parser.error(f"--tasks: {error}")
        jobs = [(task, m, s, args.regime, args.budget * sizes[task], args.job_seconds)
                for s, task, m in itertools.product(args.seeds, tasks, methods)]
        summarise, print_table = profiles.report, profiles.table
    else:
        # the seeds, instances and functions vary slowest, so a partial report covers every method
        jobs = [(bbob.problem_name(f, d, i), m, s, args.regime, args.budget * d, args.job_seconds)
                for s, i, d, f, m in itertools.product(args.seeds, args.instances, dims, args.functions, methods)]
        summarise, print_table = ecdf.report, ecdf.table
    load_before, start = os.getloadavg(), time.time()
    runs = []
    for _, run in run_in_processes(run_one, jobs, args.workers):
        runs.append(run)
        best = run["best_by_evals"][-1][1]
        print(f"{run['problem']} {run['method']} seed {run['seed']}: "
              + (f"best {best:.4g}" if run["minimum"] is None else f"best - f_opt {best - run['minimum']:.3g}")
              + f", {run['proposals']['total_s']:.1f} s proposing", file=sys.stderr, flush=True)
        if args.json:
            write_report(args.json, load_before, start, arguments=vars(args), summary=summarise(runs), runs=runs)
    print(print_table(summarise(runs)))
    print(f"regime {args.regime}, budget {args.budget} x d, {len(runs)} runs; {os.cpu_count()} CPUs, load "
          f"{load_before[0]:.1f} before, {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
