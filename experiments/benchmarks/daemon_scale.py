"""The daemon's own cost at scale: many concurrent local jobs, a restart over 10,000 jobs, and
how busy two local slots are kept.

Five measurements, each on a fresh experiment folder under ``--workdir`` (a temporary folder
by default, removed afterwards):

0. **Job start overhead** (``--start-runs``). What every job pays before its wrapper runs: the
   median wall time of ``python -m spearmint_nn.runner`` on a wrapper that imports numpy and
   returns at once, minus the median wall time of a bare ``python -c pass``, over that many
   runs of each (interleaved, so both see the same load).
1. **Concurrent run.** ``--concurrent`` local jobs at once (each sleeps ``--job-seconds``,
   1-3 s by default, and returns a synthetic objective) until ``--finished`` have finished, with ``"model": "sobol"`` so that no
   model fit competes with the daemon. The daemon runs in this process with its main-loop steps
   timed, so the time the main thread spends per completion is split into detection and
   recording, writing proposals, submission bookkeeping, starting the job process (the local
   driver's ``Popen``), summaries and the rest. Also: the delay between a job's runner writing
   its result and the daemon recording it.
2. **Restart over 10,000 jobs** (``--restart-jobs``). The job files are created through the
   Store API (with fsync disabled while generating: ~10 ms per fsync on a VM disk would make
   generation take minutes, and generation is not what is measured). Then the wall time of
   ``spearmint-nn status`` and of ``spearmint-nn run`` from process start to its first
   proposal, as separate processes, with the Sobol chooser (the daemon's own cost) and with
   DNGO (plus a cold model fit on 10,000 observations).
3. **Completions during model fits.** The DNGO daemon of step 2 goes on for ``--fit-jobs``
   more jobs: every completion triggers a refit on 10,000+ observations in the background
   thread, and the recording delay of jobs that ended while a fit was running shows whether
   fits hold up the main loop.
4. **Slot use** (``--slot-use``, off by default). Two local slots, jobs of ``--slot-job-seconds``
   (3-5 s; each job's duration drawn from its id, so every run sees the same ones) and the GP,
   whose refit and proposal a slot may wait for, until that many jobs have finished; once with
   no point kept ready (``READY_POINTS`` 0: each proposal asked after a completion) and once
   as the daemon runs, for each of ``--slot-seeds`` seeds. A slot is busy from a job's
   submission to the recording of its result; the share is that time over both slots' time
   from the first submission to the last result.

    python -m experiments.benchmarks.daemon_scale [--start-runs 10] [--concurrent 200] [--finished 2000]
        [--job-seconds 1,3] [--restart-jobs 10000] [--fit-jobs 30] [--slot-use 0] [--slot-seeds 2]
        [--slot-job-seconds 3,5] [--json out.json]
"""
from __future__ import annotations

import io
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable
from unittest import mock

import numpy as np

from spearmint_nn.experiment.config import load_config
from spearmint_nn.daemon.policies import capacity
from spearmint_nn.daemon.build import build_daemon
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.runner import command_for
from spearmint_nn.experiment.jobs import FINAL_STATES, JobState
from spearmint_nn.experiment.store import Store
from spearmint_nn.files import atomic_write_json

from .command_line import benchmark_parser
from .provenance import write_json

SLEEPY_WRAPPER = """
import random
import time

def main(job_id, params):
    time.sleep({low} + ({high} - {low}) * random.Random(job_id).random())
    x = [float(v) for v in params["x"]]
    return sum((v - 0.3) ** 2 for v in x)
"""
INSTANT_WRAPPER = """
import numpy as np

def main(job_id, params):
    return float(np.sum(params["x"]))
"""
VARIABLES = {"x": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0}}
# Main-loop steps of Daemon timed in the concurrent run (names of its methods).
LOOP_STEPS = ("_intake", "_collect_results", "_poll_driver", "_handle_requests", "_take_proposal",
              "_submit_pending", "_ask")


def make_experiment(folder: Path, job_seconds: tuple[float, float] = (1.0, 3.0), **config: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    base = {"language": "PYTHON", "main-file": "wrapper.py", "variables": VARIABLES, "model": "sobol",
            "seed": 0, "polling-time": 1.0}
    (folder / "config.json").write_text(json.dumps({**base, **config}, indent=1))
    low, high = job_seconds
    (folder / "wrapper.py").write_text(textwrap.dedent(SLEEPY_WRAPPER).lstrip().format(low=low, high=high))
    return folder


# ---- 0. job start overhead -------------------------------------------------------------------

def _wall(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=120)
    return time.perf_counter() - start


def job_start_overhead(workdir: Path, runs: int) -> dict[str, Any]:
    """Median seconds a job of an instant wrapper takes beyond a bare interpreter start."""
    folder = make_experiment(workdir / "start")
    (folder / "wrapper.py").write_text(textwrap.dedent(INSTANT_WRAPPER).lstrip())
    paths = ExperimentPaths(folder)
    for directory in (paths.inputs, paths.results, paths.claims):
        directory.mkdir(parents=True, exist_ok=True)
    jobs, bare = [], []
    for job_id in range(1, runs + 1):
        atomic_write_json(paths.input_file(job_id), {"x": [0.25, 0.5]})
        bare.append(_wall([sys.executable, "-c", "pass"], folder))
        jobs.append(_wall(command_for(folder, job_id), folder))
        result = json.loads(paths.result_file(job_id).read_text())
        if result["status"] != "ok":
            raise RuntimeError(f"the instant job failed: {result.get('error')}")
    job_s, bare_s = float(np.median(jobs)), float(np.median(bare))
    return {"runs": runs, "job_s": job_s, "bare_interpreter_s": bare_s, "job_start_overhead_s": job_s - bare_s}


# ---- 1. concurrent run ------------------------------------------------------------------------

def _timed(function: Callable, wall: dict[str, float], cpu: dict[str, float], name: str) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        w, c = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            wall[name] += time.perf_counter() - w
            cpu[name] += time.thread_time() - c
    return wrapper


def concurrent_run(workdir: Path, concurrent: int, finished: int, job_seconds: tuple[float, float]) -> dict[str, Any]:
    folder = make_experiment(workdir / "concurrent", job_seconds,
                             **{"max-concurrent": concurrent, "max-finished-jobs": finished})
    daemon = build_daemon(load_config(folder), stream=io.StringIO())
    wall: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)
    for name in LOOP_STEPS:
        setattr(daemon, name, _timed(getattr(daemon, name), wall, cpu, name))
    daemon.summaries.write_if_due = _timed(daemon.summaries.write_if_due, wall, cpu, "summaries")
    daemon.driver.submit = _timed(daemon.driver.submit, wall, cpu, "driver.submit")
    peak_running = [0]
    real_poll = daemon.driver.poll

    def poll(ids: Any) -> Any:
        peak_running[0] = max(peak_running[0], len(ids))
        return real_poll(ids)

    daemon.driver.poll = poll
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    code = daemon.run()
    elapsed = time.perf_counter() - start
    usage_after = resource.getrusage(resource.RUSAGE_SELF)
    if code != 0:
        raise RuntimeError(f"daemon exited with {code}")
    jobs = Store(daemon.paths).load_all().jobs(FINAL_STATES)
    delays = np.array([j.finished - j.fields["ended"] for j in jobs if "ended" in j.fields])
    n = len(jobs)
    per_completion_ms = {
        "detect and record results": wall["_collect_results"] + wall["_poll_driver"] + wall["_intake"]
                                     + wall["_handle_requests"],
        "write proposed jobs": wall["_take_proposal"],
        "submission bookkeeping": wall["_submit_pending"] - wall["driver.submit"],
        "start the job process (Popen)": wall["driver.submit"],
        "summaries (results.csv, best.json)": wall["summaries"],
        "ask the proposer": wall["_ask"],
    }
    per_completion_ms = {k: 1e3 * v / n for k, v in per_completion_ms.items()}
    loop_wall = sum(wall[name] for name in LOOP_STEPS) + wall["summaries"]
    loop_cpu = sum(cpu[name] for name in LOOP_STEPS) + cpu["summaries"]
    return {
        "concurrent": concurrent, "job_seconds": list(job_seconds), "finished": n, "failed": sum(j.state is JobState.FAILED for j in jobs),
        "peak_running_in_one_poll": peak_running[0],
        "wall_s": elapsed, "completions_per_s": n / elapsed,
        "main_loop_ms_per_completion": 1e3 * loop_wall / n,
        "main_loop_cpu_ms_per_completion": 1e3 * loop_cpu / n,
        "breakdown_ms_per_completion": per_completion_ms,
        "daemon_process_cpu_ms_per_completion": 1e3 * ((usage_after.ru_utime + usage_after.ru_stime)
                                                       - (usage_before.ru_utime + usage_before.ru_stime)) / n,
        "record_delay_s": _quantiles(delays),
    }


def _quantiles(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {}
    return {"median": float(np.median(values)), "p90": float(np.quantile(values, 0.9)),
            "max": float(values.max())}


# ---- 2. restart over many job files ----------------------------------------------------------

def generate_jobs(folder: Path, n: int, seed: int = 0) -> float:
    """n complete jobs through the Store API (fsync disabled meanwhile); returns seconds taken."""
    store = Store(load_config(folder).paths)
    store.create_dirs()
    store.load_all(repair=True)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    with mock.patch.object(os, "fsync", lambda fd: None):
        for x in rng.random((n, 2)):
            value = float(((x - 0.3) ** 2).sum())
            store.new_job({"x": [float(v) for v in x]}, "import", JobState.COMPLETE, values={"main": value},
                          value=value, finished=time.time())
    return time.perf_counter() - start


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "spearmint_nn", *args]


def time_status(folder: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(_cli("status", str(folder)), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return time.perf_counter() - start


def run_until_done(folder: Path, timeout: float) -> dict[str, Any]:
    """``spearmint-nn run`` as a process; seconds from its start to the first proposal and to exit."""
    log = folder / ".spearmint" / "daemon.log"
    offset = log.stat().st_size if log.exists() else 0
    start = time.perf_counter()
    process = subprocess.Popen(_cli("run", str(folder)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = None
    try:
        while process.poll() is None:
            if first is None and log.exists():
                with open(log, "rb") as handle:
                    handle.seek(offset)
                    if b" proposed " in handle.read():
                        first = time.perf_counter() - start
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"daemon did not finish within {timeout:g} s")
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return {"to_first_proposal_s": first, "to_exit_s": time.perf_counter() - start, "exit_code": process.returncode,
            "log_offset": offset}


def restart(workdir: Path, n_jobs: int, fit_jobs: int) -> dict[str, Any]:
    folder = make_experiment(workdir / "restart", **{"max-concurrent": 10})
    generated = generate_jobs(folder, n_jobs)
    out: dict[str, Any] = {"jobs": n_jobs, "generate_s_without_fsync": generated}
    out["status_s"] = time_status(folder)
    start = time.perf_counter()
    Store(load_config(folder).paths).load_all()
    out["store_load_all_s"] = time.perf_counter() - start

    make_experiment(folder, **{"max-concurrent": 10, "max-finished-jobs": n_jobs + 1})
    out["sobol"] = run_until_done(folder, timeout=600)

    # DNGO: a cold fit on n_jobs observations before the first proposal, then fit_jobs completions
    # whose every arrival triggers a background refit.
    make_experiment(folder, **{"max-concurrent": 10, "max-finished-jobs": n_jobs + 1 + fit_jobs, "model": "dngo",
                               "polling-time": 1.0})
    dngo = run_until_done(folder, timeout=1800)
    out["dngo"] = dngo
    out["during_fits"] = _fit_overlap(folder, dngo["log_offset"], first_id=n_jobs + 2)
    return out


_SUGGEST_LINE = re.compile(rb"suggested \d+ point\(s\) in ([0-9.]+) s")


def _fit_overlap(folder: Path, log_offset: int, first_id: int) -> dict[str, Any]:
    """Recording delays of the DNGO run's jobs, and the suggest durations from its log."""
    with open(folder / ".spearmint" / "daemon.log", "rb") as handle:
        handle.seek(log_offset)
        suggests = [float(m.group(1)) for m in _SUGGEST_LINE.finditer(handle.read())]
    jobs = [j for j in Store(load_config(folder).paths).load_all().jobs(FINAL_STATES)
            if j.id >= first_id and "ended" in j.fields]
    delays = np.array([j.finished - j.fields["ended"] for j in jobs])
    return {"jobs": len(jobs), "suggest_s": _quantiles(np.array(suggests)), "n_suggests": len(suggests),
            "record_delay_s": _quantiles(delays)}


# ---- 4. slot use ------------------------------------------------------------------------------

SLOTS = 2


def slot_use_run(workdir: Path, jobs: int, job_seconds: tuple[float, float], seed: int,
                 ready_points: int) -> dict[str, Any]:
    """Share of two local slots' time holding a job, with ``ready_points`` kept ready."""
    folder = make_experiment(workdir / f"slots-{ready_points}-{seed}", job_seconds,
                             **{"max-concurrent": SLOTS, "max-finished-jobs": jobs, "model": "gp", "seed": seed})
    with mock.patch.object(capacity, "READY_POINTS", ready_points):
        code = build_daemon(load_config(folder), stream=io.StringIO()).run()
    if code != 0:
        raise RuntimeError(f"daemon exited with {code}")
    done = sorted(Store(load_config(folder).paths).load_all().jobs(FINAL_STATES), key=lambda j: j.fields["submitted"])
    start, end = done[0].fields["submitted"], max(j.finished for j in done)
    busy = sum(j.finished - j.fields["submitted"] for j in done)
    # How long each later job's slot stood empty: from the result that freed it to its submission.
    waits = np.array([j.fields["submitted"] - max(o.finished for o in done if o.finished <= j.fields["submitted"])
                      for j in done[SLOTS:]])
    return {"seed": seed, "ready_points": ready_points, "jobs": len(done), "wall_s": end - start,
            "busy_share": busy / (SLOTS * (end - start)), "slot_wait_s": _quantiles(waits),
            "best": min(j.value for j in done if j.value is not None)}


def slot_use(workdir: Path, jobs: int, job_seconds: tuple[float, float], seeds: int) -> list[dict[str, Any]]:
    return [slot_use_run(workdir, jobs, job_seconds, seed, ready)
            for seed in range(seeds) for ready in (0, capacity.READY_POINTS)]


# ---- report -----------------------------------------------------------------------------------

def report(results: dict[str, Any]) -> str:
    lines = []
    start = results.get("job_start")
    if start:
        lines += [f"Job start, median of {start['runs']} runs of a wrapper that imports numpy and returns at once:", "",
                  "| step | seconds |", "|---|---|",
                  f"| `python -m spearmint_nn.runner`, whole job | {start['job_s']:.3f} |",
                  f"| `python -c pass` (bare interpreter) | {start['bare_interpreter_s']:.3f} |",
                  f"| **job start overhead, s** | **{start['job_start_overhead_s']:.3f}** |", ""]
    run = results.get("concurrent")
    if run:
        lines += [f"Concurrent run: {run['finished']} jobs of {run['job_seconds'][0]:g}-{run['job_seconds'][1]:g} s "
                  f"finished ({run['failed']} failed), up to {run['concurrent']} at once "
                  f"(at most {run['peak_running_in_one_poll']} seen in one poll), "
                  f"in {run['wall_s']:.0f} s ({run['completions_per_s']:.1f} completions/s)", "",
                  "| main-loop work per completion | ms |", "|---|---|"]
        lines += [f"| {name} | {ms:.2f} |" for name, ms in run["breakdown_ms_per_completion"].items()]
        lines += [f"| **total (wall)** | **{run['main_loop_ms_per_completion']:.2f}** |",
                  f"| total (main-thread CPU) | {run['main_loop_cpu_ms_per_completion']:.2f} |",
                  f"| daemon process CPU, all threads | {run['daemon_process_cpu_ms_per_completion']:.2f} |", "",
                  "Result written -> recorded: median {median:.3f} s, p90 {p90:.3f} s, max {max:.3f} s".format(
                      **run["record_delay_s"]), ""]
    rs = results.get("restart")
    if rs:
        lines += [f"Restart over {rs['jobs']} job files:", "",
                  "| step | seconds |", "|---|---|",
                  f"| `spearmint-nn status` (process) | {rs['status_s']:.2f} |",
                  f"| Store.load_all (in process) | {rs['store_load_all_s']:.2f} |",
                  f"| `spearmint-nn run` to first proposal, sobol | {rs['sobol']['to_first_proposal_s']:.2f} |",
                  f"| `spearmint-nn run` to first proposal, dngo (cold fit on {rs['jobs']}) | "
                  f"{rs['dngo']['to_first_proposal_s']:.2f} |", ""]
        fits = rs["during_fits"]
        if fits.get("record_delay_s"):
            lines += [f"During DNGO refits ({fits['n_suggests']} suggestions, median "
                      f"{fits['suggest_s']['median']:.2f} s, max {fits['suggest_s']['max']:.2f} s), "
                      f"{fits['jobs']} completions were recorded {fits['record_delay_s']['median']:.3f} s "
                      f"(median), {fits['record_delay_s']['max']:.3f} s (max) after their result was written."]
    slots = results.get("slot_use")
    if slots:
        low, high = results["slot_job_seconds"]
        lines += ["", f"Slot use: {SLOTS} local slots, {slots[0]['jobs']} jobs of {low:g}-{high:g} s, the GP:", "",
                  "| points kept ready | seed | wall s | slots busy | slot empty after a result, median / max s |",
                  "|---|---|---|---|---|"]
        lines += [f"| {run['ready_points']} | {run['seed']} | {run['wall_s']:.1f} | {100 * run['busy_share']:.1f}% | "
                  f"{run['slot_wait_s']['median']:.2f} / {run['slot_wait_s']['max']:.2f} |" for run in slots]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("daemon_scale", __doc__, json=True, workdir=True)
    parser.add_argument("--start-runs", type=int, default=10, help="runs of the job start measurement (0: skip)")
    parser.add_argument("--concurrent", type=int, default=200, help="local jobs at once (0: skip the run)")
    parser.add_argument("--finished", type=int, default=2000, help="jobs to finish in the concurrent run")
    parser.add_argument("--job-seconds", default="1,3", help="each job sleeps uniformly between these (MIN,MAX)")
    parser.add_argument("--restart-jobs", type=int, default=10_000, help="job files for the restart (0: skip)")
    parser.add_argument("--fit-jobs", type=int, default=30, help="jobs run with DNGO after the restart")
    parser.add_argument("--slot-use", type=int, default=0, help="jobs of each slot-use run (0: skip)")
    parser.add_argument("--slot-seeds", type=int, default=2, help="seeds of the slot-use runs")
    parser.add_argument("--slot-job-seconds", default="3,5", help="slot-use jobs last between these (MIN,MAX)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="spearmint-nn-daemon-scale-"))
    load_before = os.getloadavg()
    results: dict[str, Any] = {}
    try:
        if args.start_runs > 0:
            results["job_start"] = job_start_overhead(workdir, args.start_runs)
        if args.concurrent > 0:
            low, high = (float(v) for v in args.job_seconds.split(","))
            results["concurrent"] = concurrent_run(workdir, args.concurrent, args.finished, (low, high))
        if args.restart_jobs > 0:
            results["restart"] = restart(workdir, args.restart_jobs, args.fit_jobs)
        if args.slot_use > 0:
            low, high = (float(v) for v in args.slot_job_seconds.split(","))
            results["slot_job_seconds"] = [low, high]
            results["slot_use"] = slot_use(workdir, args.slot_use, (low, high), args.slot_seeds)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    results["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "load_average_before": load_before, "load_average_after": os.getloadavg()}
    print(report(results))
    print(f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
