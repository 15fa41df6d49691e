"""Batch quality: the same evaluation budget spent in synchronous batches vs one point at a time.

Hartmann6 (minimum -3.32237), ``--evals`` evaluations per run, for each batch size b in
``--batches``: ``evals / b`` rounds, each round one ``suggest(b)`` (the b points chosen one
after another, each fantasising the earlier ones as pending), then all b evaluated and observed.
b = 1 is the sequential run. ``--model`` is the surrogate (default "auto", the users' default:
the GP while fewer than 200 observations are finished and at most 50 jobs are in flight, so
batches of 10 and 50 use the GP and batches of 100 DNGO; "dngo" runs DNGO throughout). Reported per
batch size: the median over seeds of the best value after the whole budget and after each
quarter of it, and the difference to the sequential median (the target for b = 10 is within
0.05 at 200 evaluations).

Each (seed, batch size) run is its own process; ``--workers`` of them run at once. Results are
appended to ``--json`` as each run ends, so an interrupted benchmark keeps what ran.

    python -m experiments.benchmarks.batch [--seeds 0,1,2] [--evals 200] [--batches 1,10,50]
        [--model auto] [--thompson-every 10] [--workers 1] [--json out.json] [--sequential-from quality.json]
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import numpy as np

from .command_line import benchmark_parser
from .functions import FUNCTIONS
from .runs import earlier_runs, first_evaluations, run_in_processes, write_report

PROBLEM = "hartmann6"
TARGET_GAP = 0.05


def run_batches(seed: int, evals: int, batch: int, model: str = "auto", problem_name: str = PROBLEM,
                thompson_every: int | None = None) -> dict[str, Any]:
    """One run: ``evals // batch`` rounds of ``suggest(batch)``; the values in evaluation order.
    ``thompson_every`` None is the optimizer's default."""
    import torch

    from spearmint_nn.search.optimizer import Optimizer

    torch.set_num_threads(1)
    problem = FUNCTIONS[problem_name]
    options = {} if thompson_every is None else {"thompson_every": thompson_every}
    opt = Optimizer(problem.variables, model=model, seed=seed, budget=evals, **options)
    values: list[float] = []
    start = time.perf_counter()
    cpu = time.process_time()
    for _ in range(evals // batch):
        for params in opt.suggest(batch):
            value = problem(params)
            opt.observe(params, value)
            values.append(value)
    return {"seed": seed, "batch": batch, "model": model, "thompson_every": opt.settings.thompson_every,
            "evals": len(values), "values": values,
            "wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def summarise(runs: list[dict[str, Any]], evals: int) -> list[dict[str, Any]]:
    """Per batch size: median best at each quarter of the budget and the gap to sequential."""
    checkpoints = sorted({max(1, evals * q // 4) for q in (1, 2, 3, 4)})
    by_batch: dict[int, list[list[float]]] = {}
    for run in runs:
        by_batch.setdefault(run["batch"], []).append(run["values"])
    rows = []
    for batch, all_values in sorted(by_batch.items()):
        medians = {n: float(np.median([min(v[:n]) for v in all_values])) for n in checkpoints}
        rows.append({"batch": batch, "rounds": evals // batch, "seeds": len(all_values),
                     "median_best": medians,
                     "best_per_seed": [min(v) for v in all_values]})
    sequential = next((r for r in rows if r["batch"] == 1), None)
    for row in rows:
        if sequential is not None:
            row["gap_to_sequential"] = {n: row["median_best"][n] - sequential["median_best"][n] for n in checkpoints}
    return rows


def table(rows: list[dict[str, Any]], evals: int) -> str:
    checkpoints = sorted(rows[0]["median_best"]) if rows else []
    lines = ["| batch size | rounds | seeds | " + " | ".join(f"median best @{n}" for n in checkpoints)
             + f" | gap to sequential @{evals} |",
             "|---|---|---|" + "---|" * len(checkpoints) + "---|"]
    for row in rows:
        gap = row.get("gap_to_sequential", {}).get(checkpoints[-1]) if checkpoints else None
        lines.append(f"| {row['batch']} | {row['rounds']} | {row['seeds']} | "
                     + " | ".join(f"{row['median_best'][n]:.4f}" for n in checkpoints)
                     + f" | {'' if gap is None else f'{gap:+.4f}'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("batch", __doc__, json=True, seeds="0,1,2", workers=True)
    parser.add_argument("--evals", type=int, default=200)
    parser.add_argument("--batches", default="1,10,50", help="batch sizes, run in this order; 1 is the sequential run")
    parser.add_argument("--model", default="auto", help="surrogate of every run (auto, dngo, gp)")
    parser.add_argument("--thompson-every", type=int,
                        help="the optimizer's thompson_every (default: its default; 0: no Thompson samples)")
    parser.add_argument("--sequential-from", metavar="JSON",
                        help="take the sequential runs from this JSON of this benchmark (its batch-1 runs), of "
                             "`benchmarks.dngo` or of `benchmarks.compare` (Hartmann6 runs of the same model are "
                             "the same runs: same optimizer, seed and loop) instead of rerunning them")
    args = parser.parse_args(argv)
    seeds = args.seeds
    batches = [int(b) for b in args.batches.split(",")]
    bad = [b for b in batches if args.evals % b]
    if bad:
        parser.error(f"--evals {args.evals} is not a multiple of batch size(s) {bad}")
    load_before = os.getloadavg()
    runs: list[dict[str, Any]] = []
    start = time.time()
    if args.sequential_from:
        runs.extend(_sequential_runs(args.sequential_from, args.model, seeds, args.evals))
    batches = [b for b in batches if not (b == 1 and args.sequential_from)]
    # In the order given: with few workers, put first what must be known first.
    jobs = [(seed, args.evals, batch, args.model, PROBLEM, args.thompson_every) for batch in batches for seed in seeds]
    for _, run in run_in_processes(run_batches, jobs, args.workers):
        runs.append(run)
        print(f"seed {run['seed']} batch {run['batch']}: best {min(run['values']):.4f} "
              f"({run['wall_s']:.0f} s wall, {run['cpu_s']:.0f} s CPU)", file=sys.stderr, flush=True)
        if args.json:
            _write(args.json, runs, args.evals, load_before, start)
    rows = summarise(runs, args.evals)
    print(table(rows, args.evals))
    print(f"model {args.model}; Hartmann6 minimum {FUNCTIONS[PROBLEM].minimum:.5f}; target: batch 10 within {TARGET_GAP} of "
          f"sequential at {args.evals}. machine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} "
          f"before, {os.getloadavg()[0]:.1f} after, {time.time() - start:.0f} s")
    return 0


def _sequential_runs(path: str, model: str, seeds: list[int], evals: int) -> list[dict[str, Any]]:
    """The sequential Hartmann6 runs of ``model`` in an earlier report, as batch-1 runs of this
    benchmark: the batch-1 runs of this benchmark's own JSON, or the runs of a quality
    benchmark's (``benchmarks.dngo`` or ``benchmarks.compare``)."""
    with open(path) as handle:
        own_report = "batch" in json.load(handle)["runs"][0]
    # (key fields, the key's first part): batch size 1 of this benchmark, or the problem of a quality run
    key_fields, first = (("batch", "model", "seed"), 1) if own_report else (("problem", "method", "seed"), PROBLEM)
    found = earlier_runs([path], key_fields)
    runs = {seed: first_evaluations(found.get((first, model, seed)), evals) for seed in seeds}
    missing = [seed for seed, run in runs.items() if run is None]
    if missing:
        sys.exit(f"{path} has no {evals}-evaluation {PROBLEM} {model} run for seed(s) {missing}")
    return [{"seed": seed, "batch": 1, "model": model, "evals": evals, "values": run["values"]}
            for seed, run in runs.items()]


def _write(path: str, runs: list[dict[str, Any]], evals: int, load_before: tuple, start: float) -> None:
    write_report(path, load_before, start, summary=summarise(runs, evals), runs=runs)

if __name__ == "__main__":
    sys.exit(main())
