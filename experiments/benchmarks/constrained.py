"""Constrained benchmark: Gramacy et al.'s toy problem, constrained DNGO against random search.

The problem (Gramacy et al. 2016, "Modeling an augmented Lagrangian for blackbox constrained
optimization", also Spearmint's ``examples/toy``) on [0, 1]^2:

    minimise  x1 + x2
    s.t.      c1 = 1.5 - x1 - 2 x2 - 0.5 sin(2 pi (x1^2 - 2 x2)) <= 0
              c2 = x1^2 + x2^2 - 1.5 <= 0

Best feasible value 0.5998 at (0.1954, 0.4044). Constraint values are passed in Spearmint's
convention (>= 0 satisfied), i.e. as -c1 and -c2, both NOISELESS. The feasible region is
disconnected and about 32% of the square.
Arms: the optimizer with its default model (``auto``: the GP at this size) and with DNGO, each
with one constraint network per explicit constraint (the default ``constraint-model``) and EI
times P(all constraints satisfied); and Sobol random search.

For each seed and arm the best feasible value after every evaluation is recorded; the table
gives its mean and standard error over seeds at a few budgets, and the number of seeds whose
best was feasible at all.

    python -m experiments.benchmarks.constrained [--seeds 10] [--evaluations 50] [--json out.json]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np
import torch

from spearmint_nn.search.optimizer import Optimizer

from .command_line import benchmark_parser
from .provenance import write_json
from .runs import run_in_processes

VARIABLES = {"x1": {"type": "FLOAT", "min": 0.0, "max": 1.0}, "x2": {"type": "FLOAT", "min": 0.0, "max": 1.0}}
TASKS = {"f": "OBJECTIVE", "c1": "CONSTRAINT", "c2": "CONSTRAINT"}
LIKELIHOODS = {"f": "NOISELESS", "c1": "NOISELESS", "c2": "NOISELESS"}
OPTIMUM = 0.5998
ARMS = {"default (auto: GP)": "auto", "DNGO": "dngo", "random search (Sobol)": "sobol"}


def gramacy_toy(x1: float, x2: float) -> dict[str, float]:
    """{task: value} with constraints as Spearmint expects them (>= 0 satisfied)."""
    c1 = 1.5 - x1 - 2.0 * x2 - 0.5 * math.sin(2 * math.pi * (x1**2 - 2.0 * x2))
    c2 = x1**2 + x2**2 - 1.5
    return {"f": x1 + x2, "c1": -c1, "c2": -c2}


def best_feasible_trace(model: str, seed: int, evaluations: int) -> list[float]:
    """Best feasible objective after each evaluation (NaN until one is feasible), length ``evaluations``."""
    torch.set_num_threads(1)
    optimizer = Optimizer(VARIABLES, model=model, seed=seed, tasks=TASKS, likelihoods=LIKELIHOODS,
                          budget=evaluations)
    trace, best = [], math.nan
    for _ in range(evaluations):
        params = optimizer.suggest(1)[0]
        values = gramacy_toy(float(params["x1"][0]), float(params["x2"][0]))
        optimizer.observe(params, values)
        if values["c1"] >= 0 and values["c2"] >= 0 and not values["f"] >= best:
            best = values["f"]
        trace.append(best)
    return trace


def summarise(traces: np.ndarray, budgets: list[int]) -> list[dict[str, float]]:
    """Per budget: mean and standard error of the best feasible value over seeds, and feasible count."""
    rows = []
    for budget in budgets:
        column = traces[:, budget - 1]
        found = column[np.isfinite(column)]
        rows.append({
            "evaluations": budget,
            "feasible_seeds": int(found.size),
            "mean": float(found.mean()) if found.size else math.nan,
            "stderr": float(found.std(ddof=1) / math.sqrt(found.size)) if found.size > 1 else math.nan,
        })
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser("constrained", __doc__.splitlines()[0], json=True, seeds="10", seed_count=True,
                              workers=True)
    parser.add_argument("--evaluations", type=int, default=50)
    args = parser.parse_args(argv)

    budgets = sorted({b for b in (10, 20, 30, 50, 100, args.evaluations) if b <= args.evaluations})
    start = time.perf_counter()
    traces: dict[str, dict[int, list[float]]] = {arm: {} for arm in ARMS}
    jobs = [(model, seed, args.evaluations) for model in ARMS.values() for seed in args.seeds]
    arm_of = {model: arm for arm, model in ARMS.items()}
    for (model, seed, _), trace in run_in_processes(best_feasible_trace, jobs, args.workers):
        traces[arm_of[model]][seed] = trace
        print(f"  {model} seed {seed}: best feasible {trace[-1]:.4f}", file=sys.stderr, flush=True)
        _write(args.json, args, traces, budgets)
    results = _results(traces, budgets)
    print(f"Gramacy toy (optimum {OPTIMUM}), best feasible value, mean +- s.e. over {len(args.seeds)} seeds"
          f" [seeds with a feasible point]; {time.perf_counter() - start:.0f} s")
    print(f"{'evaluations':>11} | " + " | ".join(f"{arm:>28}" for arm in ARMS))
    for i, budget in enumerate(budgets):
        cells = []
        for arm in ARMS:
            row = results[arm]["table"][i]
            cells.append(f"{row['mean']:.4f} +- {row['stderr']:.4f} [{row['feasible_seeds']:>2}]")
        print(f"{budget:>11} | " + " | ".join(f"{c:>28}" for c in cells))


def _results(traces: dict[str, dict[int, list[float]]], budgets: list[int]) -> dict[str, Any]:
    """Per arm: the traces in seed order and the summary table over the seeds that finished."""
    results = {}
    for arm, by_seed in traces.items():
        ordered = [by_seed[seed] for seed in sorted(by_seed)]
        results[arm] = {"traces": ordered, "table": summarise(np.asarray(ordered), budgets) if ordered else []}
    return results


def _write(path: str | None, args: argparse.Namespace, traces: dict[str, dict[int, list[float]]],
           budgets: list[int]) -> None:
    if path:
        write_json(path, {"problem": "gramacy_toy", "optimum": OPTIMUM, "seeds": args.seeds,
                          "evaluations": args.evaluations, "results": _results(traces, budgets)})


if __name__ == "__main__":
    main()
