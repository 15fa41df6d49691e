"""DNGO vs the Spearmint GP (with and without input warping) vs Sobol random search.

Problems: Branin, Hartmann3, Hartmann6 and ``log4``, a 4-D bowl in log10(x) whose optimum sits
near the lower bounds of a linear-scale box (the case input warping is for). Every method runs
each problem once per seed to the largest budget; the best value after each smaller budget is
read from the same run. One table: median [IQR] over seeds of the best value at each budget and
of the number of evaluations to reach simple regret 1e-3, with the mean seconds per suggestion.
Then the seconds of one warm suggestion (refit + acquisition maximisation) at N observations of
Hartmann6, per model.

    python -m spearmint_nn.benchmarks.compare [--seeds 10] [--methods dngo,gp,gp-nowarp,sobol]
        [--evals branin:30,40 hartmann3:22,30 hartmann6:55,80 log4:30,40]
        [--timing-sizes 25,50,100,200] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time
from typing import Any, Sequence

import numpy as np
import torch

from .dngo import _fmt, run_once, summarise, time_suggestion
from .functions import FUNCTIONS, TestFunction

REGRET = 1e-3
LOG4_CENTRE = np.array([0.3, 0.5, 0.2, 0.6])  # optimum in u = log10(x) / 4 + 1 coordinates


def log4(x: Sequence[float]) -> float:
    """sum_d (u_d - c_d)^2 with u = log10(x) / 4 + 1, x in [1e-4, 1]^4: minimum 0 at x = 10^(4(c - 1))."""
    u = np.log10(np.asarray(x, dtype=float)) / 4.0 + 1.0
    return float(np.sum((u - LOG4_CENTRE) ** 2))


PROBLEMS: dict[str, TestFunction] = {
    **{name: FUNCTIONS[name] for name in ("branin", "hartmann3", "hartmann6")},
    "log4": TestFunction("log4", log4, ((1e-4, 1.0),) * 4, 0.0, tuple(10.0 ** (4 * (LOG4_CENTRE - 1)))),
}
DEFAULT_EVALS = ["branin:30,40", "hartmann3:22,30", "hartmann6:55,80", "log4:30,40"]
DEFAULT_METHODS = "dngo,gp,gp-nowarp,sobol"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="runs per problem and method (seeds 0..N-1)")
    parser.add_argument("--evals", nargs="+", default=DEFAULT_EVALS, help="problem:budget[,budget...] entries")
    parser.add_argument("--methods", default=DEFAULT_METHODS, help="comma-separated model names (sobol = random)")
    parser.add_argument("--timing-sizes", default="25,50,100,200", help="comma-separated N ('' to skip)")
    parser.add_argument("--timing-methods", default="gp,gp-nowarp,dngo", help="models timed against N")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--json", help="also write the results (with every run's values) as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.time()

    report: dict[str, Any] = {
        "command": "python -m spearmint_nn.benchmarks.compare " + " ".join(argv or []),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "torch_threads": args.threads, "torch": torch.__version__},
        "regret_threshold": REGRET, "quality": [], "runs": [], "timing": [],
    }

    def save() -> None:
        if args.json:
            report["wall_seconds"] = time.time() - started
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)

    print(f"{'problem':<10} {'method':<10} {'evals':>5}  {'best median [IQR]':<34} "
          f"{'evals to regret 1e-3 [IQR]':<24} {'reached':>7} {'s/suggest':>9}")
    for entry in args.evals:
        name, budgets_text = entry.split(":")
        problem, budgets = PROBLEMS[name], sorted(int(b) for b in budgets_text.split(","))
        for method in args.methods.split(","):
            runs = [run_once(problem, method, seed, budgets[-1]) for seed in range(args.seeds)]
            values = [r["values"] for r in runs]
            report["runs"] += [{"problem": name, "method": method, "seed": seed, **r} for seed, r in enumerate(runs)]
            mean_suggest = float(np.mean([np.mean(r["suggest_seconds"]) for r in runs]))
            for budget in budgets:
                s = summarise(values, problem, budget, threshold=REGRET)
                s.update(problem=name, method=method, mean_suggest_seconds=mean_suggest)
                report["quality"].append(s)
                best = f"{_fmt(s['best_median']):>9} [{_fmt(s['best_q25'])}, {_fmt(s['best_q75'])}]"
                hits = (f"{_fmt(s['evals_to_threshold_median']):>5} [{_fmt(s['evals_to_threshold_q25'])}, "
                        f"{_fmt(s['evals_to_threshold_q75'])}]")
                print(f"{name:<10} {method:<10} {budget:>5}  {best:<34} {hits:<24} "
                      f"{s['reached']:>3}/{s['runs']:<3} {mean_suggest:>9.2f}", flush=True)
            save()

    sizes = [int(n) for n in args.timing_sizes.split(",") if n.strip()]
    if sizes:
        print(f"\n{'N':>6} {'model':<10} {'suggest (warm) s':>17} {'refit part s':>13}")
    for n in sizes:
        for method in args.timing_methods.split(","):
            t = time_suggestion(n, model=method)
            t["model"] = method
            report["timing"].append(t)
            print(f"{n:>6} {method:<10} {t['warm_seconds']:>17.2f} {t['warm_fit_seconds']:>13.2f}", flush=True)
            save()
    save()
    return report


if __name__ == "__main__":
    main()
