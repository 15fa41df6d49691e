"""Conditional-space benchmark: conditional-aware encoding vs a flat encoding vs random search.

The synthetic problem has a known optimum. A branch switch selects which parameters exist:

* ``branch = "bowl"``: ``f = 1 + sum_i (u_i - 0.3)^2`` over ``u`` (size 2) in [0, 1]; best 1.0;
* ``branch = "branin"``: Branin on ``bx`` in [-5, 10], ``by`` in [0, 15]; best 0.397887;
* ``branch = "steps"``: ``depth`` layers (INT 1..3), each ``w_k`` (log scale, [1e-3, 1]) only
  for existing layers; ``f = 0.8 + sum_k (log10 w_k + 2)^2 / 4 + 0.1 (3 - depth)``; best 0.8.

Plus a shared log-scale ``rate`` in [1e-4, 1] adding ``0.05 (log10 rate + 2)^2``. The global
minimum is 0.397887 (Branin branch, rate = 0.01).

The *flat* encoding declares the same variables without ``when``: the optimizer sees every
parameter all the time and has to learn that most of them do not matter.

    python -m spearmint_nn.benchmarks.conditional --seeds 10 --evals 60 [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any, Callable, Mapping

import numpy as np

BEST_VALUE = 0.39788735772973816

CONDITIONAL_VARIABLES: dict[str, Any] = {
    "branch": {"type": "ENUM", "options": ["bowl", "branin", "steps"]},
    "u": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0, "when": {"branch": "bowl"}},
    "bx": {"type": "FLOAT", "min": -5.0, "max": 10.0, "when": {"branch": "branin"}},
    "by": {"type": "FLOAT", "min": 0.0, "max": 15.0, "when": {"branch": "branin"}},
    "depth": {"type": "INT", "min": 1, "max": 3, "when": {"branch": "steps"}},
    "w_1": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"depth": {">=": 1}}},
    "w_2": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"depth": {">=": 2}}},
    "w_3": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"depth": 3}},
    "rate": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"},
}


def flat_variables(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The same variables with every condition removed."""
    return {name: {k: v for k, v in spec.items() if k != "when"} for name, spec in variables.items()}


def branin(x: float, y: float) -> float:
    a, b, c, r, s, t = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    return a * (y - b * x**2 + c * x - r) ** 2 + s * (1 - t) * math.cos(x) + s


def conditional_objective(params: Mapping[str, Any]) -> float:
    """The synthetic conditional function; reads only the parameters active for its branch."""
    def first(name: str) -> Any:
        value = params[name]
        return value[0] if isinstance(value, (list, np.ndarray)) else value

    branch = first("branch")
    shared = 0.05 * (math.log10(first("rate")) + 2) ** 2
    if branch == "bowl":
        return 1.0 + float(np.sum((np.asarray(params["u"], dtype=float) - 0.3) ** 2)) + shared
    if branch == "branin":
        return branin(first("bx"), first("by")) + shared
    depth = int(first("depth"))
    layers = sum((math.log10(first(f"w_{k}")) + 2) ** 2 / 4 for k in range(1, depth + 1))
    return 0.8 + layers + 0.1 * (3 - depth) + shared


def run_once(variables: Mapping[str, Any], model: str, seed: int, evals: int,
             objective: Callable[[Mapping[str, Any]], float]) -> tuple[list[float], float]:
    """Best-so-far trace and mean seconds per suggestion of one sequential run."""
    from spearmint_nn.optimizer import Optimizer

    opt = Optimizer(variables, model=model, seed=seed)
    best, trace, spent = math.inf, [], 0.0
    for _ in range(evals):
        start = time.perf_counter()
        params = opt.suggest(1)[0]
        spent += time.perf_counter() - start
        value = objective(params)
        opt.observe(params, value)
        best = min(best, value)
        trace.append(best)
    return trace, spent / evals


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--evals", type=int, default=60)
    parser.add_argument("--model", default="dngo", help="surrogate for the two model-based arms")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)

    arms = {
        "conditional": (CONDITIONAL_VARIABLES, args.model),
        "flat": (flat_variables(CONDITIONAL_VARIABLES), args.model),
        "random": (CONDITIONAL_VARIABLES, "sobol"),
    }
    checkpoints = sorted({min(args.evals, c) for c in (20, 40, args.evals)})
    results: dict[str, Any] = {"evals": args.evals, "seeds": args.seeds, "best_value": BEST_VALUE, "arms": {}}
    print(f"conditional benchmark: {args.seeds} seeds x {args.evals} evaluations; global min {BEST_VALUE:.6f}")
    header = "arm".ljust(12) + "".join(f"median best @{c:<4} (IQR)".ljust(32) for c in checkpoints) + "s/suggest"
    print(header)
    for arm, (variables, model) in arms.items():
        traces, times = [], []
        for seed in range(args.seeds):
            trace, seconds = run_once(variables, model, seed, args.evals, conditional_objective)
            traces.append(trace)
            times.append(seconds)
        traces_arr = np.array(traces)
        row = {"checkpoints": {}, "seconds_per_suggest": float(np.mean(times))}
        line = arm.ljust(12)
        for c in checkpoints:
            q25, q50, q75 = np.percentile(traces_arr[:, c - 1], [25, 50, 75])
            row["checkpoints"][c] = {"median": q50, "q25": q25, "q75": q75}
            line += f"{q50:.4f} ({q25:.4f}-{q75:.4f})".ljust(32)
        print(line + f"{np.mean(times):.2f}")
        results["arms"][arm] = row
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return results


if __name__ == "__main__":
    main()
