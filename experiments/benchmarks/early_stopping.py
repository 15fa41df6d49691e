"""Early stopping: the same final quality for how much compute, and on a cluster of W workers how soon.

Every method (:mod:`experiments.benchmarks.stopping_methods`: ours without stopping and with
each rule, Optuna's TPE and GP samplers with three pruners each, ASHA with random sampling) runs
on each problem (:mod:`experiments.benchmarks.learning_curves`) with the same compute budget:
``--jobs`` full jobs, ``jobs x epochs`` epochs summed over all jobs. A method that stops jobs
early spends what it saves on more jobs. A run is simulated on W workers (``--workers-in-flight``,
1 and 20 by default): each epoch takes ``--epoch-seconds`` of simulated time, and each
proposal the wall time it really took, on one proposer (workers freed meanwhile wait). A free
worker gets a new job only while the budget has room for a full job beyond what the running jobs
may still spend, so a run without stopping spends exactly ``jobs x epochs`` and every run ends
within its budget. A run starts at most ``--max-starts`` x jobs jobs (5 by default: our
proposals, which treat stopped jobs as pending, take seconds each once hundreds are stopped, and
Optuna's GPSampler with the median pruner started 947 jobs of a 30-job budget in a first try): a
run that reaches the limit starts nothing more and leaves the rest of its budget unspent (it
shows in the ``capped`` column; its best stays where it was). Each epoch's value is reported to the method as it comes, and the job is
stopped when the method says so: the epoch is spent, no more. A job's values are computed epoch
by epoch only as far as it runs.

What a user sees is the best final value of the jobs that completed their last epoch (a stopped
job's final value is not known). Reported per problem, W and method, over the seeds:

* compute to target: the compute (a share of the budget) at which the run's best first reaches
  the final best of ``ours`` (no stopping) of the same seed and W; median, and in how many seeds
  it is reached at all;
* the median best at 1/4, 1/3, 1/2 and all of the budget's compute, and at the same shares of
  the simulated time that ``ours`` took (same seed and W);
* paired wins per seed of each of our methods against every other method at those compute
  shares (``wins-ties-losses``);
* the jobs started and those not completed (stopped, or for ASHA paused at a rung for good),
  the runs that reached ``--max-starts``, the share of the budget spent (median),
  seconds per proposal (wall time on this machine, as the clock charged it).

One torch thread and one BLAS thread per run; runs go to ``--workers`` processes, seed by seed,
and ``--json`` is rewritten as each run ends. The summary takes the seeds that every method and
W ran; ``--include`` adds the runs of earlier reports of the same sizes (``--seeds ""`` runs
nothing new: the tables of a report).

    python -m experiments.benchmarks.early_stopping --problems hartmann6-curves --jobs 60 \\
        --seeds 0-9 --workers-in-flight 1,20 --workers 2 --json out.json
"""
from __future__ import annotations

import heapq
import math
import os
import sys
import time
from dataclasses import replace
from typing import Any

from .command_line import benchmark_parser
from .learning_curves import PROBLEMS
from .runs import earlier_runs, run_in_processes, write_report
from .summary import quartiles
from .stopping_methods import METHODS, OURS, make_method, timed

SHARES = (0.25, 1 / 3, 0.5, 1.0)
SHARE_NAMES = ("1/4", "1/3", "1/2", "1")
REFERENCE = "ours"


def run_one(problem_name: str, method_name: str, seed: int, workers: int, jobs: int, epochs: int,
            epoch_seconds: float, max_starts: int | None = None) -> dict[str, Any]:
    """One run on the simulated clock (see the module docstring). Returns its accounting and the
    steps of its best final value: ``improvements``, [compute, simulated time, best] each."""
    import torch

    torch.set_num_threads(1)
    problem = replace(PROBLEMS[problem_name], max_epochs=epochs)
    method = make_method(method_name, problem, seed, jobs, workers)
    budget = jobs * epochs
    events: list[tuple[float, int, int]] = []  # (time its next epoch ends, order, job)
    trains: dict[int, Any] = {}
    done: dict[int, int] = {}  # job -> epochs trained
    until: dict[int, int] = {}  # running job -> the epoch its task ends at
    count = {"started": 0, "completed": 0, "stopped": 0, "asks": 0, "spent": 0}
    seconds = {"propose": 0.0, "decide": 0.0}
    proposer_free = end = 0.0
    improvements: list[list[float]] = []
    order = 0

    def fill(now: float) -> None:
        nonlocal proposer_free, order
        while len(until) < workers and budget - count["spent"] - sum(until[j] - done[j] for j in until) >= epochs:
            if max_starts is not None and count["started"] >= max_starts and not method.resumes:
                return
            task, spent = timed(lambda: method.ask(order))
            if task.job not in trains and max_starts is not None and count["started"] >= max_starts:
                return  # ASHA's ask would start a job: nothing more to promote
            seconds["propose"] += spent
            count["asks"] += 1
            proposer_free = max(proposer_free, now) + spent
            if task.job not in trains:
                trains[task.job], done[task.job] = problem.train(task.point, seed), 0
                count["started"] += 1
            until[task.job] = task.until
            heapq.heappush(events, (proposer_free + epoch_seconds, order, task.job))
            order += 1

    fill(0.0)
    while events:
        now, _, job = heapq.heappop(events)
        value = next(trains[job])
        done[job] += 1
        count["spent"] += 1
        stop, spent = timed(lambda: method.report(job, done[job], value))
        seconds["decide"] += spent
        if done[job] == epochs:
            method.finish(job, value)
            count["completed"] += 1
            if not improvements or value < improvements[-1][2]:
                improvements.append([count["spent"], now, value])
        elif stop:
            method.stopped(job)
            count["stopped"] += 1
        elif done[job] < until[job]:
            heapq.heappush(events, (now + epoch_seconds, order, job))
            order += 1
            continue
        del until[job]  # its worker is free (completed, stopped, or paused at a rung)
        if done[job] == epochs or stop:
            del trains[job]
        end = max(end, now)
        fill(now)
    return {"problem": problem_name, "method": method_name, "seed": seed, "workers": workers, "jobs": jobs,
            "epochs": epochs, "epoch_seconds": epoch_seconds, "budget": budget, "max_starts": max_starts,
            "capped": max_starts is not None and count["started"] >= max_starts, "compute": count["spent"], "started": count["started"],
            "completed": count["completed"], "stopped": count["stopped"], "asks": count["asks"],
            "end_time": end, "propose_s": round(seconds["propose"], 3), "decide_s": round(seconds["decide"], 3),
            "improvements": [[c, round(t, 2), float(f"{v:.6g}")] for c, t, v in improvements]}


# ---- summaries ---------------------------------------------------------------------------------

def _median(values: list[float]) -> float:
    return quartiles(values)[1]  # one of the values when some are inf


def best_by(run: dict[str, Any], limit: float, axis: int) -> float:
    """The run's best final value once ``axis`` (0: compute, 1: simulated time) reached ``limit``."""
    return min((step[2] for step in run["improvements"] if step[axis] <= limit * (1 + 1e-12)), default=math.inf)


def first_reach(run: dict[str, Any], target: float, axis: int) -> float:
    """Where on ``axis`` the run's best first reached ``target`` (inf: never)."""
    return next((step[axis] for step in run["improvements"] if step[2] <= target), math.inf)


def complete_seeds(runs: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per problem, the seeds run by every method and W of that problem."""
    found = {}
    for problem in sorted({r["problem"] for r in runs}):
        here = [r for r in runs if r["problem"] == problem]
        kinds = {(r["method"], r["workers"]) for r in here}
        found[problem] = sorted(s for s in {r["seed"] for r in here}
                                if {(r["method"], r["workers"]) for r in here if r["seed"] == s} == kinds)
    return found


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows per (problem, W, method) and paired wins (see the module docstring), over the seeds
    that every method and W of the problem ran (a benchmark cut short leaves some seeds partial)."""
    seeds = complete_seeds(runs)
    runs = [r for r in runs if r["seed"] in seeds[r["problem"]]]
    rows, wins = [], []
    for problem, workers in sorted({(r["problem"], r["workers"]) for r in runs}):
        here = [r for r in runs if (r["problem"], r["workers"]) == (problem, workers)]
        reference = {r["seed"]: r for r in here if r["method"] == REFERENCE}
        by_method = {m: {r["seed"]: r for r in here if r["method"] == m} for m in METHODS}
        for method, group in by_method.items():
            seeds = [s for s in group if s in reference]
            if not seeds:
                continue
            row: dict[str, Any] = {"problem": problem, "workers": workers, "method": method, "seeds": len(seeds)}
            reach = [first_reach(group[s], reference[s]["improvements"][-1][2], 0) / group[s]["budget"]
                     for s in seeds]
            times = [first_reach(group[s], reference[s]["improvements"][-1][2], 1) / reference[s]["end_time"]
                     for s in seeds]
            row["compute_to_target"], row["reached"] = _median(reach), sum(math.isfinite(x) for x in reach)
            row["time_to_target"] = _median(times)
            for share, name in zip(SHARES, SHARE_NAMES):
                row[f"best@{name}"] = _median([best_by(group[s], share * group[s]["budget"], 0) for s in seeds])
                row[f"best@{name}t"] = _median([best_by(group[s], share * reference[s]["end_time"], 1) for s in seeds])
            row["started"] = _median([group[s]["started"] for s in seeds])
            row["capped"] = sum(bool(group[s].get("capped")) for s in seeds)
            row["spent"] = _median([group[s]["compute"] / group[s]["budget"] for s in seeds])
            # stopped, or (ASHA) paused at a rung and never promoted: started and not completed
            row["stopped"] = _median([group[s]["started"] - group[s]["completed"] for s in seeds])
            row["s_per_ask"] = sum(group[s]["propose_s"] for s in seeds) / max(sum(group[s]["asks"] for s in seeds), 1)
            rows.append(row)
        for mine in OURS:
            for other in METHODS:
                pairs = [s for s in by_method[mine] if s in by_method[other]] if other != mine else []
                if not pairs:
                    continue
                entry = {"problem": problem, "workers": workers, "method": mine, "against": other}
                for share, name in zip(SHARES, SHARE_NAMES):
                    a = [best_by(by_method[mine][s], share * by_method[mine][s]["budget"], 0) for s in pairs]
                    b = [best_by(by_method[other][s], share * by_method[other][s]["budget"], 0) for s in pairs]
                    entry[name] = [sum(x < y for x, y in zip(a, b)), sum(x == y for x, y in zip(a, b)),
                                   sum(x > y for x, y in zip(a, b))]
                wins.append(entry)
    return {"rows": rows, "wins": wins}


def _value(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else "-"


def tables(summary: dict[str, Any]) -> str:
    """The rows as markdown tables, one per (problem, W), and the wins at 1/3 and all of the compute."""
    out = []
    for problem, workers in sorted({(r["problem"], r["workers"]) for r in summary["rows"]}):
        rows = [r for r in summary["rows"] if (r["problem"], r["workers"]) == (problem, workers)]
        head = ["method", "seeds", "jobs", "not completed", "capped", "spent", "compute to target", *(f"best @{n} compute" for n in SHARE_NAMES),
                "time to target", *(f"best @{n} time" for n in SHARE_NAMES), "s/ask"]
        out += [f"\n{problem}, W = {workers}\n", " | ".join(head), " | ".join("---" for _ in head)]
        for r in rows:
            reach = f"{r['compute_to_target']:.2f} ({r['reached']}/{r['seeds']})" \
                if math.isfinite(r["compute_to_target"]) else f"- ({r['reached']}/{r['seeds']})"
            out.append(" | ".join([r["method"], str(r["seeds"]), f"{r['started']:.0f}", f"{r['stopped']:.0f}",
                                   str(r["capped"]), f"{r['spent']:.2f}", reach,
                                   *(_value(r[f"best@{n}"]) for n in SHARE_NAMES), _value(r["time_to_target"]),
                                   *(_value(r[f"best@{n}t"]) for n in SHARE_NAMES), f"{r['s_per_ask']:.3f}"]))
        for share in ("1/3", "1"):
            entries = [w for w in summary["wins"] if (w["problem"], w["workers"]) == (problem, workers)]
            others = [m for m in METHODS if any(w["against"] == m for w in entries)]
            out += [f"\nwins-ties-losses per seed at {share} of the compute, {problem}, W = {workers}\n",
                    " | ".join(["method", *others]), " | ".join("---" for _ in range(len(others) + 1))]
            for mine in OURS:
                cells = {w["against"]: "-".join(map(str, w[share])) for w in entries if w["method"] == mine}
                if cells:
                    out.append(" | ".join([mine, *(cells.get(m, "") for m in others)]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    # --seeds "" runs nothing new: the report of --include's runs alone
    parser = benchmark_parser("early_stopping", __doc__, json=True, seeds="0-9", workers=True, include=True)
    parser.add_argument("--problems", default="hartmann6-curves", help=f"comma-separated, from {', '.join(PROBLEMS)}")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, from " + ", ".join(METHODS))
    parser.add_argument("--jobs", type=int, default=60, help="the compute budget, in full jobs")
    parser.add_argument("--epochs", type=int, default=50, help="a full job's epochs")
    parser.add_argument("--epoch-seconds", type=float, default=60.0, help="simulated seconds per epoch")
    parser.add_argument("--workers-in-flight", default="1,20", help="W values, comma-separated")
    parser.add_argument("--max-starts", type=int, default=5,
                        help="at most this many times --jobs jobs started per run (0: no limit)")
    args = parser.parse_args(argv)
    problems, methods = args.problems.split(","), args.methods.split(",")
    unknown = [p for p in problems if p not in PROBLEMS] + [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown {', '.join(unknown)}")
    in_flight = [int(w) for w in args.workers_in_flight.split(",")]
    # seed by seed, so that a run cut short has every method and W of the seeds it finished
    max_starts = args.max_starts * args.jobs or None
    jobs = [(p, m, s, w, args.jobs, args.epochs, args.epoch_seconds, max_starts)
            for p in problems for s in args.seeds for w in in_flight for m in methods]
    earlier = earlier_runs(args.include, ("problem", "method", "seed", "workers"))
    for job in jobs:
        earlier.pop((job[0], job[1], job[2], job[3]), None)
    for run in earlier.values():
        # the limit on starts may differ (each run records it, and whether it reached it)
        ran = (run["jobs"], run["epochs"], run["epoch_seconds"])
        if ran != (args.jobs, args.epochs, args.epoch_seconds):
            parser.error(f"--include: {run['method']} seed {run['seed']} ran (jobs, epochs, epoch seconds) {ran}, "
                         f"not {(args.jobs, args.epochs, args.epoch_seconds)}")
    if not any(m == REFERENCE for m in methods) and not any(r["method"] == REFERENCE for r in earlier.values()):
        parser.error(f"--methods or --include must have {REFERENCE}: the targets are its results")
    load_before, start, runs = os.getloadavg(), time.time(), list(earlier.values())
    for _, run in run_in_processes(run_one, jobs, args.workers):
        runs.append(run)
        best = run["improvements"][-1][2] if run["improvements"] else math.inf
        print(f"{run['problem']} W={run['workers']} {run['method']} seed {run['seed']}: best {best:.4f}, "
              f"{run['started']} jobs, {run['stopped']} stopped, {run['propose_s']:.1f} s proposing",
              file=sys.stderr, flush=True)
        if args.json:
            write_report(args.json, load_before, start, arguments=vars(args),
                         seeds_run=complete_seeds(runs), summary=summarise(runs), runs=runs)
    print(tables(summarise(runs)))
    print(f"\nseeds with every method and W: {complete_seeds(runs)}")
    print(f"\n{args.jobs} jobs of {args.epochs} epochs of compute per run, {args.epoch_seconds:g} s per epoch; "
          f"{os.cpu_count()} CPUs, load {load_before[0]:.1f} before, {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
