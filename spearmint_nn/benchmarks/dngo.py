"""DNGO + integrated EI against Sobol random search, and the time per suggestion vs N.

For every problem and seed, each method runs once to the largest budget; the best value after
each smaller budget is read from the same run. Reported per (problem, method, budget): median
and interquartile range over seeds of the best value found, and of the number of evaluations
needed to reach a simple regret below the problem's threshold (runs that never reach it count
as "not reached" and are shown as the share that did).

Then the time of one ``suggest`` (refit + acquisition maximisation) at N finished observations
of Hartmann6, for the steady state of a run: the optimizer fits once, one more observation
arrives, and the second suggestion (a warm-started refit) is timed.

    python -m spearmint_nn.benchmarks.dngo [--seeds 10] [--evals branin:50,200 hartmann6:100,200]
        [--methods dngo,sobol] [--timing-sizes 100,500,2000,5000] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import platform
from typing import Any

import numpy as np
import torch

from ..optimizer import Optimizer
from .functions import FUNCTIONS, TestFunction

REGRET_THRESHOLDS = {"branin": 1e-3, "hartmann3": 1e-3, "hartmann6": 1e-2}
DEFAULT_EVALS = ["branin:50,200", "hartmann6:100,200"]


def run_once(problem: TestFunction, method: str, seed: int, n_evals: int) -> dict[str, Any]:
    """One sequential optimisation run; returns the values in order and the time per suggestion."""
    opt = Optimizer(problem.variables, model=method, seed=seed)
    values, seconds = [], []
    for _ in range(n_evals):
        params = opt.suggest(1)[0]
        seconds.append(opt.last_suggest_seconds)
        value = problem(params)
        opt.observe(params, value)
        values.append(value)
    return {"values": values, "suggest_seconds": seconds}


def summarise(values: list[list[float]], problem: TestFunction, budget: int, threshold: float | None = None) -> dict[str, Any]:
    """Median / IQR of the best value after ``budget`` evaluations and of evals-to-threshold."""
    threshold = REGRET_THRESHOLDS.get(problem.name, 1e-3) if threshold is None else threshold
    best = np.array([np.min(v[:budget]) for v in values])
    hits = []
    for v in values:
        regret = np.minimum.accumulate(np.asarray(v[:budget])) - problem.minimum
        reached = np.flatnonzero(regret <= threshold)
        hits.append(int(reached[0]) + 1 if reached.size else math.inf)
    hits_arr = np.array(hits, dtype=float)
    # Not-reached runs are +inf; an interpolating percentile would turn inf - inf into NaN.
    q = lambda a, p: float(np.percentile(a, p, method="inverted_cdf"))
    return {
        "budget": budget,
        "threshold": threshold,
        "best_median": float(np.median(best)),
        "best_q25": float(np.percentile(best, 25)),
        "best_q75": float(np.percentile(best, 75)),
        "evals_to_threshold_median": q(hits_arr, 50),
        "evals_to_threshold_q25": q(hits_arr, 25),
        "evals_to_threshold_q75": q(hits_arr, 75),
        "reached": int(np.isfinite(hits_arr).sum()),
        "runs": len(values),
    }


def time_suggestion(n: int, seed: int = 0, model: str = "dngo") -> dict[str, float]:
    """Seconds of one cold and one warm-started suggestion with N Hartmann6 observations."""
    problem = FUNCTIONS["hartmann6"]
    rng = np.random.default_rng(seed)
    opt = Optimizer(problem.variables, model=model, seed=seed, initial_design=1)
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="runs per problem and method (seeds 0..N-1)")
    parser.add_argument("--evals", nargs="+", default=DEFAULT_EVALS,
                        help="problem:budget[,budget...] entries, e.g. branin:50,200 hartmann6:100")
    parser.add_argument("--methods", default="dngo,sobol", help="comma-separated models (sobol = random search)")
    parser.add_argument("--timing-sizes", default="100,500,2000,5000",
                        help="comma-separated N for the time per suggestion ('' to skip)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--json", help="also write the results as JSON to this path")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    report: dict[str, Any] = {
        "command": "python -m spearmint_nn.benchmarks.dngo " + " ".join(argv or []),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "torch_threads": args.threads, "torch": torch.__version__},
        "quality": [], "timing": [],
    }
    print(f"{'problem':<10} {'method':<6} {'evals':>5}  {'best median [IQR]':<34} {'evals to regret median [IQR]':<30} reached")
    for entry in args.evals:
        name, budgets_text = entry.split(":")
        problem, budgets = FUNCTIONS[name], sorted(int(b) for b in budgets_text.split(","))
        for method in args.methods.split(","):
            runs = [run_once(problem, method, seed, budgets[-1]) for seed in range(args.seeds)]
            values = [r["values"] for r in runs]
            mean_suggest = float(np.mean([np.mean(r["suggest_seconds"]) for r in runs]))
            for budget in budgets:
                s = summarise(values, problem, budget)
                s.update(problem=name, method=method, mean_suggest_seconds=mean_suggest)
                report["quality"].append(s)
                print(f"{name:<10} {method:<6} {budget:>5}  "
                      f"{_fmt(s['best_median']):>9} [{_fmt(s['best_q25'])}, {_fmt(s['best_q75'])}]".ljust(58)
                      + f"{_fmt(s['evals_to_threshold_median']):>5} [{_fmt(s['evals_to_threshold_q25'])}, "
                      f"{_fmt(s['evals_to_threshold_q75'])}] (regret {s['threshold']:g})".ljust(37)
                      + f"{s['reached']}/{s['runs']}", flush=True)
    sizes = [int(n) for n in args.timing_sizes.split(",") if n.strip()]
    if sizes:
        print(f"\n{'N':>6} {'suggest (warm) s':>17} {'refit part s':>13} {'first suggest (cold) s':>23}")
    for n in sizes:
        t = time_suggestion(n)
        report["timing"].append(t)
        print(f"{n:>6} {t['warm_seconds']:>17.2f} {t['warm_fit_seconds']:>13.2f} {t['cold_seconds']:>23.2f}", flush=True)
    by_n = {t["n"]: t["warm_seconds"] for t in report["timing"]}
    if 500 in by_n and 5000 in by_n:
        report["ratio_5000_500"] = by_n[5000] / by_n[500]
        print(f"t(5000) / t(500) = {report['ratio_5000_500']:.2f}  (linear scaling: about 10)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return report


if __name__ == "__main__":
    main()
