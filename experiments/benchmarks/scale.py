"""Time and peak memory of one proposal with N finished and J pending jobs.

Each (model, N, J) point runs in a fresh Python process, so that its peak resident memory
(``ru_maxrss``) belongs to that point alone. In the process: uniformly random points of the
problem (``--problem``, Hartmann6 by default; any name of ``benchmarks.functions``, e.g. a BBOB
problem ``bbob-f21-d10-i1``) are observed, a first proposal fits the model from scratch (the cold
fit, reported but not the measured quantity), more results arrive up to N, and the measured call
is the next proposal of B points (``--batch``, 1 by default) with J jobs running: a warm refit
on the results since the cold fit plus the acquisition with the J pending outcomes
(:func:`measure_point`). The results since the cold fit are a round of them, the last B of the N
(at most half): with B = 1 the daemon's steady state, one completion and one call; with J = 0 and
B > 1 a synchronous round, which refits after B new results.

The GP baseline, and the reference methods ``optuna-gp`` and ``botorch-qlognei`` of the parallel
benchmark (the harness's requirements; the same steps through their own loops, the J jobs running as
Optuna RUNNING trials or BoTorch's X_pending), run the same points where they finish within
``--gp-timeout`` seconds (a larger N is skipped once a smaller one timed out); their time and
memory are shown as ratios to the first model's (DNGO's by default). A synchronous batch of 50
of the default search at small N, against qLogNEI's: ``--models gp,botorch-qlognei --gp-sizes
50,100,200 --gp-pending 0 --batch 50`` (the GP is the default below 200 finished jobs).

    python -m experiments.benchmarks.scale [--sizes 500,2000,5000,10000] [--pending 0,100,800]
        [--models dngo,gp,optuna-gp,botorch-qlognei] [--gp-sizes 500,2000] [--gp-pending 0,100,800]
        [--gp-timeout 300] [--batch 1] [--problem hartmann6] [--json out.json]

Times are given as wall clock and as the process's CPU time: torch runs one thread, so on a
shared machine the CPU time is what the same call takes on an idle core.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np

from spearmint_nn.problem.space import Space

from .command_line import benchmark_parser
from .parallel_methods import Ours, make_method
from .problems import get_function
from .provenance import write_json

DEFAULT_SIZES = (500, 2000, 5000, 10000)
DEFAULT_PENDING = (0, 100, 800)
DEFAULT_PROBLEM = "hartmann6"
# Reference methods a point can be measured for (from the harness's requirements), like the GP.
REFERENCES = ("optuna-gp", "botorch-qlognei")


def measure_point(model: str, n: int, n_pending: int, batch: int = 1, seed: int = 0,
                  problem_name: str = DEFAULT_PROBLEM) -> dict[str, Any]:
    """Run one point in this process (call it in a fresh one): seconds and MiB of the measured call,
    which proposes ``batch`` points with N finished and J running jobs.

    Every method, ours or a reference (through :mod:`experiments.benchmarks.parallel_methods`),
    takes the same steps: the first ``max(N - B, N // 2)`` random points observed, a cold proposal
    of one point (evaluated and observed, so nothing it handed out stays pending), random points
    observed up to N, then the measured proposal of B points with J random points running (ours:
    ``pending``; Optuna: RUNNING trials; BoTorch: X_pending). The measured call thus follows a
    round of results, the last B of the N (at most half of them), as a synchronous round does:
    ours refits its GP's chains in proportion to the new results, a reference refits anyway."""
    import torch

    torch.set_num_threads(1)
    problem = get_function(problem_name)
    space = Space.from_config(problem.variables)
    points = space.decode(np.random.default_rng(seed).random((n - 1 + n_pending, problem.dim)))
    name = model if model in REFERENCES else f"ours:model={model},restart_after=0"  # ours fits on all N
    method = make_method(name, space, seed, n + n_pending + batch, 0)
    before = max(n - batch, n // 2)
    for params in points[:before]:
        method.observe(params, problem(params))
    start = time.perf_counter()
    [first] = method.propose(1, [])
    cold = time.perf_counter() - start
    method.observe(first, problem(first))
    for params in points[before:n - 1]:
        method.observe(params, problem(params))
    running = points[n - 1:]
    result = {"model": model, "problem": problem_name, "n": n, "pending": len(running), "batch": batch,
              "new_results": n - before, "cold_suggest_s": cold}
    if isinstance(method, Ours):
        result["own_pending"] = len(method.optimizer.pending)  # handed out and not observed: none
    rss_before = _current_rss_mib()
    start, cpu = time.perf_counter(), time.process_time()
    method.propose(batch, running)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    result.update(suggest_s=seconds, suggest_cpu_s=cpu, rss_before_mib=rss_before, peak_rss_mib=_peak_rss_mib())
    if isinstance(method, Ours):
        fit = method.optimizer.last_fit_seconds or 0.0
        result.update(fantasies=method.optimizer.settings.fantasies, fit_s=fit, acquisition_s=seconds - fit)
    return result


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def _current_rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_point(model: str, n: int, n_pending: int, batch: int, timeout: float,
              problem: str = DEFAULT_PROBLEM) -> dict[str, Any]:
    """:func:`measure_point` in a fresh process; ``{"timeout": True}`` if it did not finish."""
    command = [sys.executable, "-m", "experiments.benchmarks.scale", "--point", model, str(n), str(n_pending),
               str(batch), problem]
    try:  # the point inherits the one-thread environment (see benchmarks.threads)
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": model, "n": n, "pending": n_pending, "batch": batch, "timeout": True, "limit_s": timeout}
    if done.returncode != 0:
        raise RuntimeError(f"point {model} N={n} J={n_pending} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(models: list[str], sizes: list[int], pendings: list[int], gp_sizes: list[int], gp_pendings: list[int],
        gp_timeout: float, dngo_timeout: float, batch: int = 1, problem: str = DEFAULT_PROBLEM) -> list[dict[str, Any]]:
    results = []
    for model in models:
        limit = dngo_timeout if model == "dngo" else gp_timeout
        for n_pending in pendings if model == "dngo" else gp_pendings:
            timed_out = False
            for n in sorted(sizes if model == "dngo" else gp_sizes):
                if timed_out:  # a larger N cannot finish where a smaller one did not
                    results.append({"model": model, "n": n, "pending": n_pending, "batch": batch, "timeout": True,
                                    "skipped": True, "limit_s": limit})
                    continue
                point = run_point(model, n, n_pending, batch, limit, problem)
                timed_out = bool(point.get("timeout"))
                results.append(point)
                print(_point_line(point), file=sys.stderr, flush=True)
    return results


def _point_line(p: dict[str, Any]) -> str:
    head = f"{p['model']:>15} N={p['n']:>6} J={p['pending']:>4}"
    if p.get("timeout"):
        return f"{head}  did not finish within {p['limit_s']:g} s" + (" (skipped)" if p.get("skipped") else "")
    parts = f"; fit {p['fit_s']:.2f}, acquisition {p['acquisition_s']:.2f}" if "fit_s" in p else ""
    return (f"{head}  suggest {p['suggest_s']:7.2f} s ({p['suggest_cpu_s']:.2f} s CPU{parts})"
            f"  peak {p['peak_rss_mib']:7.0f} MiB  (cold first suggest {p['cold_suggest_s']:.1f} s)")


def table(results: list[dict[str, Any]]) -> str:
    """Markdown table: one row per (N, J), the first model's numbers (DNGO's by default) and the
    others' as ratios to them."""
    by_key = {(r["model"], r["n"], r["pending"]): r for r in results}
    base = results[0]["model"]
    label = "DNGO" if base == "dngo" else base
    others = list(dict.fromkeys(r["model"] for r in results if r["model"] != base))
    head = "| N | J | suggest, wall (s) | suggest, CPU (s) | refit, wall (s) | acquisition, wall (s) | peak RSS (MiB) |"
    rule = "|---|---|---|---|---|---|---|"
    for other in others:
        head += f" {other} / {label} time | {other} / {label} memory |"
        rule += "---|---|"
    lines = [head, rule]
    for (model, n, n_pending), r in sorted(by_key.items(), key=lambda kv: (kv[0][2], kv[0][1])):
        if model != base:
            continue
        cells = ([f"{r['suggest_s']:.2f}", f"{r['suggest_cpu_s']:.2f}", f"{r['fit_s']:.2f}", f"{r['acquisition_s']:.2f}", f"{r['peak_rss_mib']:.0f}"]
                 if not r.get("timeout") else ["> " + f"{r['limit_s']:g}", "", "", "", ""])
        row = f"| {n} | {n_pending} | " + " | ".join(cells) + " |"
        for other in others:
            o = by_key.get((other, n, n_pending))
            if o is None or (r.get("timeout") and not o.get("timeout")):
                row += " | |"
            elif o.get("timeout"):
                row += f" did not finish in {o['limit_s']:g} s | |"
            else:
                row += (f" {o['suggest_cpu_s'] / r['suggest_cpu_s']:.1f} (CPU) |"
                        f" {o['peak_rss_mib'] / r['peak_rss_mib']:.2f} |")
        lines.append(row)
    return "\n".join(lines)


def growth(results: list[dict[str, Any]]) -> dict[str, float]:
    """CPU-time ratios that show the scaling: t(N_max)/t(N_min) per J, t(J_max)/t(0) per N."""
    ok = {(r["n"], r["pending"]): r["suggest_cpu_s"] for r in results if r["model"] == "dngo" and not r.get("timeout")}
    out = {}
    sizes = sorted({n for n, _ in ok})
    pendings = sorted({j for _, j in ok})
    for j in pendings:
        if (sizes[0], j) in ok and (sizes[-1], j) in ok and sizes[0] != sizes[-1]:
            out[f"t(N={sizes[-1]})/t(N={sizes[0]}) at J={j}"] = ok[(sizes[-1], j)] / ok[(sizes[0], j)]
    for n in sizes:
        if (n, pendings[0]) in ok and (n, pendings[-1]) in ok and pendings[0] != pendings[-1]:
            out[f"t(J={pendings[-1]})/t(J={pendings[0]}) at N={n}"] = ok[(n, pendings[-1])] / ok[(n, pendings[0])]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("scale", __doc__, json=True)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="N values, comma-separated")
    parser.add_argument("--pending", default=",".join(map(str, DEFAULT_PENDING)), help="J values, comma-separated")
    parser.add_argument("--models", default="dngo,gp", help="models to run (dngo first: the ratios are to it)")
    parser.add_argument("--gp-sizes", default="500,2000", help="N values for the GP")
    parser.add_argument("--gp-pending", default=",".join(map(str, DEFAULT_PENDING)), help="J values for the GP")
    parser.add_argument("--gp-timeout", type=float, default=300.0, help="seconds per GP point before giving up")
    parser.add_argument("--dngo-timeout", type=float, default=600.0, help="seconds per DNGO point before giving up")
    parser.add_argument("--batch", type=int, default=1, help="points the measured call proposes")
    parser.add_argument("--problem", default=DEFAULT_PROBLEM,
                        help="the function observed (a name of benchmarks.functions or a BBOB problem)")
    parser.add_argument("--point", nargs=5, metavar=("MODEL", "N", "J", "BATCH", "PROBLEM"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.point:
        model, n, n_pending, batch, problem = args.point
        print(json.dumps(measure_point(model, int(n), int(n_pending), int(batch), problem_name=problem)))
        return 0
    try:  # a wrong name fails here, before any point runs
        get_function(args.problem)
    except KeyError:
        parser.error(f"--problem: no problem called {args.problem!r} (a name of benchmarks.functions, a BBOB "
                     f"problem bbob-f<k>-d<dim>-i<instance> or a task hpo-<model>-<dataset>-<metric>)")
    except ValueError as error:
        parser.error(f"--problem: {error}")
    load_before = os.getloadavg()
    start = time.time()
    results = run(args.models.split(","), [int(v) for v in args.sizes.split(",")],
                  [int(v) for v in args.pending.split(",")], [int(v) for v in args.gp_sizes.split(",")],
                  [int(v) for v in args.gp_pending.split(",")], args.gp_timeout, args.dngo_timeout, args.batch,
                  args.problem)
    machine = {"cpus": os.cpu_count(), "platform": platform.platform(), "processor": platform.processor(),
               "load_average_before": load_before, "load_average_after": os.getloadavg(),
               "wall_s": time.time() - start, "torch_threads": 1}
    print(table(results))
    for name, ratio in growth(results).items():
        print(f"{name}: {ratio:.2f}")
    print(f"machine: {machine['cpus']} CPUs, load average {load_before[0]:.1f} before, "
          f"{machine['load_average_after'][0]:.1f} after; {machine['wall_s']:.0f} s in all")
    if args.json:
        write_json(args.json, {"machine": machine, "results": results, "growth": growth(results)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
