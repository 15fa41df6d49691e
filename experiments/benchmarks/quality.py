"""Optimisation quality and time per suggestion: the engine of the ``dngo`` and ``compare`` benchmarks.

For every problem, method, seed and budget, one sequential run is told its budget (the optimizer
restarts a stuck search only while half of it remains, so a run told 200 evaluations may by 50
stand where a run told 50 would not). Reported per (problem, method, budget): median and interquartile range over seeds of the best value found, and of the number of
evaluations needed to reach a simple regret below the problem's threshold (runs that never reach
it count as "not reached" and are shown as the share that did), with the mean seconds per
suggestion. Then the time of one ``suggest`` (refit + acquisition maximisation) at N finished
observations of Hartmann6, for the steady state of a run: the optimizer fits once, one more
observation arrives, and the second suggestion (a warm-started refit) is timed.

Runs go to ``--workers`` processes; ``--json`` is rewritten as each run ends, with every run's
values, so an interrupted benchmark keeps what finished.
"""
from __future__ import annotations

import math
import platform
import sys
import time
from typing import Any, Mapping

import numpy as np
import torch

from spearmint_nn.search.optimizer import Optimizer

from .command_line import benchmark_parser, invocation
from .functions import FUNCTIONS, TestFunction
from .reference import REFERENCE_METHODS, run_reference
from .provenance import write_json
from .runs import earlier_runs, reused_and_new, run_in_processes
from .summary import best_so_far, quartiles


def method_options(method: str) -> dict[str, Any]:
    """Optimizer keywords of a method name: a model, optionally "+kernel" for the GPs, "/transform"
    for the output transform and "@N" for an initial design of N Sobol points, in that order (e.g.
    "gp-nowarp+squared-exponential", "gp-nowarp+squared-exponential/standardise", "dngo@14").

    The options are part of the name, so runs with other options never stand in for each other
    under ``--reuse``.
    """
    name, _, design = method.partition("@")
    name, _, transform = name.partition("/")
    model, _, kernel = name.partition("+")
    options: dict[str, Any] = {"model": model}
    if kernel:
        options["kernel"] = kernel
    if transform:
        options["output_transform"] = transform
    if design:
        options["initial_design"] = int(design)
    return options


def is_reference(method: str) -> bool:
    """Whether a method name is an established library's loop (:mod:`.reference`), not our model."""
    return method_options(method)["model"] in REFERENCE_METHODS


def run_once(problem_name: str, method: str, seed: int, n_evals: int) -> dict[str, Any]:
    """One sequential optimisation run told its budget of n_evals; the values in order and the
    seconds of each suggestion. Methods of an established library go to :mod:`.reference`."""
    options = method_options(method)
    if is_reference(method):
        return run_reference(problem_name, seed=seed, n_evals=n_evals, **options)
    torch.set_num_threads(1)
    problem = FUNCTIONS[problem_name]
    opt = Optimizer(problem.variables, seed=seed, budget=n_evals, **options)
    values, seconds = [], []
    for _ in range(n_evals):
        params = opt.suggest(1)[0]
        seconds.append(opt.last_suggest_seconds)
        value = problem(params)
        opt.observe(params, value)
        values.append(value)
    return {"values": values, "suggest_seconds": seconds}


def summarise(values: list[list[float]], problem: TestFunction, budget: int, threshold: float) -> dict[str, Any]:
    """Median / IQR of the best value after ``budget`` evaluations and of evals-to-threshold."""
    running = [best_so_far(v[:budget]) for v in values]
    best = np.array([r[-1] for r in running])
    hits = []
    for r in running:
        reached = np.flatnonzero(r - problem.minimum <= threshold)
        hits.append(int(reached[0]) + 1 if reached.size else math.inf)
    best_q25, best_median, best_q75 = quartiles(best)
    hits_q25, hits_median, hits_q75 = quartiles(hits)  # not reached: +inf
    return {
        "budget": budget,
        "threshold": threshold,
        "best_median": best_median,
        "best_q25": best_q25,
        "best_q75": best_q75,
        "evals_to_threshold_median": hits_median,
        "evals_to_threshold_q25": hits_q25,
        "evals_to_threshold_q75": hits_q75,
        "reached": int(np.isfinite(hits).sum()),
        "runs": len(values),
    }


def time_suggestion(n: int, seed: int = 0, model: str = "dngo") -> dict[str, float]:
    """Seconds of one cold and one warm-started suggestion with N Hartmann6 observations."""
    problem = FUNCTIONS["hartmann6"]
    rng = np.random.default_rng(seed)
    # No restart: the model is timed on all N observations.
    opt = Optimizer(problem.variables, seed=seed, restart_after=0, **{**method_options(model), "initial_design": 1})
    for x in rng.random((n, problem.dim)):
        opt.observe({"x": x}, problem.function(x))
    opt.suggest(1)
    cold = opt.last_suggest_seconds
    x = rng.random(problem.dim)
    opt.observe({"x": x}, problem.function(x))
    opt.suggest(1)
    return {"n": n, "cold_seconds": cold, "warm_seconds": opt.last_suggest_seconds, "warm_fit_seconds": opt.last_fit_seconds}


def _fmt(value: float) -> str:
    return "-" if not math.isfinite(value) else (f"{value:.0f}" if value >= 10 and value == int(value) else f"{value:.4g}")


def main(
    argv: list[str] | None,
    *,
    name: str,
    description: str,
    default_evals: list[str],
    default_methods: str,
    default_timing_sizes: str,
    default_timing_methods: str,
    thresholds: Mapping[str, float],
) -> dict[str, Any]:
    """Parse the command line of benchmark ``name`` (its defaults as given), run, print, write JSON.

    ``thresholds``: problem name -> regret threshold; problems not named use 1e-3.
    """
    parser = benchmark_parser(name, description, json=True, seeds="10", seed_count=True, workers=True, reuse=True)
    parser.add_argument("--evals", nargs="+", default=default_evals,
                        help=f"problem:budget[,budget...] entries; problems: {', '.join(FUNCTIONS)}")
    parser.add_argument("--methods", default=default_methods,
                        help="comma-separated models (sobol = random search); a GP may name its kernel after a "
                             "'+', e.g. gp-nowarp+squared-exponential, any of ours its output transform after a '/', e.g. "
                             "gp-nowarp+squared-exponential/standardise, and any model an initial design of N "
                             "Sobol points after an '@', e.g. dngo@14 (default: parameters + 1); botorch and "
                             "botorch-fixednoise run an established library's loop (pip install -r experiments/benchmarks/requirements.txt)")
    parser.add_argument("--timing-sizes", default=default_timing_sizes, help="comma-separated N ('' to skip)")
    parser.add_argument("--timing-methods", default=default_timing_methods, help="models timed against N")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    started = time.time()
    report: dict[str, Any] = {
        "command": invocation(name, argv),
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch_threads": 1,
                    "torch": torch.__version__, "workers": args.workers},
        "quality": [], "runs": [], "timing": [],
    }

    def save() -> None:
        if args.json:
            report["wall_seconds"] = time.time() - started
            write_json(args.json, report)

    plan = []
    for entry in args.evals:
        problem_name, budgets_text = entry.split(":")
        plan.append((FUNCTIONS[problem_name], sorted(int(b) for b in budgets_text.split(","))))
    methods = args.methods.split(",")
    planned = [((problem.name, method, seed, budget), budget, (problem.name, method, seed, budget))
               for problem, budgets in plan for method in methods for seed in args.seeds for budget in budgets]
    reused, jobs = reused_and_new(planned, earlier_runs(args.reuse, ("problem", "method", "seed", "budget")))
    report["runs"].extend(reused)
    for (problem_name, method, seed, budget), run in run_in_processes(run_once, jobs, args.workers):
        report["runs"].append({"problem": problem_name, "method": method, "seed": seed, "budget": budget, **run})
        print(f"  {problem_name} {method} seed {seed} budget {budget}: best {min(run['values']):.5g}",
              file=sys.stderr, flush=True)
        save()

    print(f"{'problem':<10} {'method':<10} {'evals':>5}  {'best median [IQR]':<34} "
          f"{'evals to regret [IQR]':<24} {'regret':>6} {'reached':>7} {'s/suggest':>9}")
    for problem, budgets in plan:
        threshold = thresholds.get(problem.name, 1e-3)
        for method in methods:
            for budget in budgets:
                runs = sorted((r for r in report["runs"] if r["problem"] == problem.name and r["method"] == method
                               and r["budget"] == budget), key=lambda r: r["seed"])
                mean_suggest = float(np.mean([np.mean(r["suggest_seconds"]) for r in runs]))
                s = summarise([r["values"] for r in runs], problem, budget, threshold)
                s.update(problem=problem.name, method=method, mean_suggest_seconds=mean_suggest)
                report["quality"].append(s)
                best = f"{_fmt(s['best_median']):>9} [{_fmt(s['best_q25'])}, {_fmt(s['best_q75'])}]"
                hits = (f"{_fmt(s['evals_to_threshold_median']):>5} [{_fmt(s['evals_to_threshold_q25'])}, "
                        f"{_fmt(s['evals_to_threshold_q75'])}]")
                print(f"{problem.name:<10} {method:<10} {budget:>5}  {best:<34} {hits:<24} {threshold:>6g} "
                      f"{s['reached']:>3}/{s['runs']:<3} {mean_suggest:>9.2f}", flush=True)
    save()

    sizes = [int(n) for n in args.timing_sizes.split(",") if n.strip()]
    if sizes:
        print(f"\n{'N':>6} {'model':<10} {'suggest (warm) s':>17} {'refit part s':>13} {'first suggest (cold) s':>23}")
    for n in sizes:
        for method in args.timing_methods.split(","):
            t = {"model": method, **time_suggestion(n, model=method)}
            report["timing"].append(t)
            print(f"{n:>6} {method:<10} {t['warm_seconds']:>17.2f} {t['warm_fit_seconds']:>13.2f} "
                  f"{t['cold_seconds']:>23.2f}", flush=True)
            save()
    for method in args.timing_methods.split(","):
        by_n = {t["n"]: t["warm_seconds"] for t in report["timing"] if t["model"] == method}
        if 500 in by_n and 5000 in by_n:
            report.setdefault("ratio_5000_500", {})[method] = by_n[5000] / by_n[500]
            print(f"{method}: t(5000) / t(500) = {by_n[5000] / by_n[500]:.2f}  (linear scaling: about 10)")
    save()
    return report
