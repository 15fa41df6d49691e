"""A cluster that never waits: hundreds of real jobs in flight on the project's own SLURM or
Grid Engine, and how busy the daemon keeps their slots.

The scheduler is brought up by ``tests/cluster/<scheduler>-up.sh`` (from a checkout) with
``--slots`` CPUs/slots on the one node (oversubscribed: the jobs mostly sleep). A SHELL-wrapper
experiment of ``--jobs`` jobs, ``max-concurrent`` = ``--slots``, runs to its end: each job
computes a Branin value with a loop of ``awk`` arithmetic, then sleeps a duration between
``--seconds`` drawn from its id (20-60 s by default), and writes ``start``/``end`` lines with its
id to its own ledger file. Midway the daemon is killed (SIGKILL) and started again
(``--restart-daemon-at``, a share of the budget finished), and later the scheduler's controller
is stopped and started again (``--restart-controller-at``).

Reported, from the scheduler's own accounting (``sacct``, ``qacct``) of the experiment's jobs:

- **busy share**: the slot-time in use over all slots' time, from the first job's start to the
  last job's start (until then the experiment had budget left; afterwards a free slot has no job
  to take). Accounting times are whole seconds. Also the same share in steady running: without
  the first minute (``--settle``), nor the controller's down time and the minute after each
  restart.
- **whose wait a free slot was**, from the daemon's own job records over the same steady
  window: the share of the slots' time in which the daemon had a job at the scheduler (from
  its submission to its wrapper's end; the rest waited on the daemon), and the share in which
  a submitted job had not been started yet (waiting on the scheduler).
- **scheduler calls per minute** of the daemon: every scheduler command the daemon runs goes
  through a logging shim put first on its ``PATH``;
- **the daemon's CPU**: user + system seconds of the daemon processes and what they ran, as a
  share of one core over their wall time;
- **nothing lost, nothing repeated**: every job id has exactly one ``start`` and one ``end``
  line in the ledger, and the daemon recorded exactly ``--jobs`` jobs complete, none failed.

Afterwards the scheduler is brought back to its default size when ``--slots`` changed it.

    python -m experiments.benchmarks.busy_cluster [--scheduler slurm|sge] [--jobs 1000]
        [--slots 200] [--seconds 20,60] [--restart-daemon-at 0.35] [--restart-controller-at 0.6]
        [--model NAME] [--array-size N] [--json out.json]
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .command_line import benchmark_parser
from .provenance import write_json

CLUSTER_SCRIPTS = Path(__file__).resolve().parents[2] / "tests" / "cluster"
COMMANDS = {"slurm": ("sbatch", "squeue", "sacct", "scancel", "scontrol"),
            "sge": ("qsub", "qstat", "qacct", "qdel", "qmod")}
CONTROLLER_PID = {"slurm": "run/slurmctld.pid", "sge": "spool/qmaster/qmaster.pid"}
SIZE_VARIABLE = {"slurm": "SLURM_CPUS", "sge": "SGE_SLOTS"}

WRAPPER = r"""#!/usr/bin/env bash
# A benchmark job: a Branin value computed by a loop of awk arithmetic, then a sleep of a length
# drawn from the job's id. Its own ledger says that it started and ended, and on which attempt.
set -euo pipefail
ledger="{ledgers}/$SPEARMINT_JOB_ID"
echo "start ${{SPEARMINT_ATTEMPT:-1}} $(date +%s.%N)" >> "$ledger"
params=$(tr -d ' \n\t' < "$1")
value_of() {{ sed -E "s/.*\"$1\":\[([^],]*)\].*/\1/" <<< "$params"; }}
value=$(awk -v x="$(value_of x)" -v y="$(value_of y)" 'BEGIN {{
    pi = atan2(0, -1); b = 5.1 / (4 * pi * pi); c = 5 / pi; t = 1 / (8 * pi)
    for (i = 0; i < {loops}; i++) v = (y - b * x * x + c * x - 6) ^ 2 + 10 * (1 - t) * cos(x + i * 0) + 10
    printf "%.10g\n", v
}}')
sleep $(( {low} + SPEARMINT_JOB_ID * 7919 % {span} ))
echo "end ${{SPEARMINT_ATTEMPT:-1}} $(date +%s.%N)" >> "$ledger"
echo "$value"
"""

SHIM = """#!/bin/sh
echo "$(date +%s.%N) {name}" >> {log}
exec {real} "$@"
"""


def bring_up(scheduler: str, slots: int | None, smoke_test: bool = True) -> None:
    """Start (or resize) the project's own scheduler; ``slots`` None: its default size. Without
    ``smoke_test`` (a controller started again under a full queue) no test job is run."""
    script = CLUSTER_SCRIPTS / f"{scheduler}-up.sh"
    if not script.exists():
        raise SystemExit(f"{script} not found: run the benchmark from a checkout of spearmint-nn")
    env = {key: value for key, value in os.environ.items() if key != SIZE_VARIABLE[scheduler]}
    if slots is not None:
        env[SIZE_VARIABLE[scheduler]] = str(slots)
    env[f"{scheduler.upper()}_SMOKE_TEST"] = "1" if smoke_test else "0"
    subprocess.run(["bash", str(script)], env=env, check=True, stdout=subprocess.DEVNULL)


def restart_controller(scheduler: str, slots: int, down_s: float = 5.0) -> float:
    """Stop the scheduler's controller (SIGTERM), leave it down ``down_s``, start it again;
    returns the seconds it was down."""
    state = Path(os.environ.get(f"{scheduler.upper()}_STATE_DIR", f"/var/tmp/spearmint-{scheduler}"))
    pid = int((state / CONTROLLER_PID[scheduler]).read_text().split()[0])
    start = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    time.sleep(down_s)
    bring_up(scheduler, slots, smoke_test=False)
    return time.monotonic() - start


def write_experiment(folder: Path, scheduler: str, jobs: int, slots: int, seconds: tuple[int, int],
                     model: str | None, prefix: str, loops: int, driver: dict[str, Any]) -> None:
    (folder / "ledgers").mkdir(parents=True)
    low, high = seconds
    (folder / "work.sh").write_text(WRAPPER.format(ledgers=folder / "ledgers", loops=loops, low=low,
                                                   span=high - low + 1))
    config: dict[str, Any] = {
        "language": "SHELL", "command": ["bash", "work.sh"], "experiment-name": "busy-cluster",
        "variables": {"x": {"type": "FLOAT", "size": 1, "min": -5, "max": 10},
                      "y": {"type": "FLOAT", "size": 1, "min": 0, "max": 15}},
        "likelihood": "NOISELESS", "max-concurrent": slots, "max-finished-jobs": jobs, "polling-time": 2,
        "seed": 1, "driver": {"name": scheduler, "name-prefix": prefix, **driver}}
    if model is not None:
        config["model"] = model
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def write_shims(folder: Path, scheduler: str) -> tuple[Path, Path]:
    """A folder of scripts named like the scheduler's commands that log each call and run the
    real one; the daemon gets it first on its PATH."""
    shims, log = folder / "shims", folder / "scheduler-calls.log"
    shims.mkdir()
    for name in COMMANDS[scheduler]:
        real = shutil.which(name)
        if real is None:
            raise SystemExit(f"{name} is not on PATH after bringing {scheduler} up")
        (shims / name).write_text(SHIM.format(name=name, log=log, real=real))
        (shims / name).chmod(0o755)
    return shims, log


class Daemon:
    """``spearmint-nn run`` as a child process whose CPU (with what it ran) is kept at its end."""

    def __init__(self, folder: Path, env: dict[str, str], console: Path):
        self.folder, self.env, self.console = folder, env, console
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.exit_codes: list[int] = []
        self.process: subprocess.Popen[bytes] | None = None
        self._started = 0.0

    def start(self) -> None:
        with self.console.open("ab") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "spearmint_nn", "run", str(self.folder)],
                                            env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            preexec_fn=_login_node_priority)
        self._started = time.monotonic()

    def wait(self, kill: bool = False) -> int:
        """Wait for the daemon to end (SIGKILL it first when ``kill``); its exit status."""
        assert self.process is not None
        if kill:
            self.process.kill()
        _, status, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = os.waitstatus_to_exitcode(status)
        self.cpu_s += usage.ru_utime + usage.ru_stime
        self.wall_s += time.monotonic() - self._started
        self.exit_codes.append(self.process.returncode)
        return self.process.returncode


def _login_node_priority() -> None:
    """The daemon ahead of the jobs for the CPU (nice -10, as root): on a cluster the jobs run on
    compute nodes, while here hundreds of them share the daemon's cores and would starve it."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except PermissionError:
        pass


def _zombie(pid: int) -> bool:
    """Whether the child ``pid`` has exited and waits to be reaped (wait4 then reads its usage)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return True


def count_finished(folder: Path) -> int:
    jobs = folder / ".spearmint" / "jobs"
    return sum(1 for state in ("complete", "failed") for _ in (jobs / state).glob("*.json"))


def run_experiment(folder: Path, env: dict[str, str], jobs: int, scheduler: str, slots: int,
                   restart_daemon_at: float, restart_controller_at: float, timeout_s: float) -> dict[str, Any]:
    daemon = Daemon(folder, env, folder / "console.log")
    events: dict[str, Any] = {}
    daemon.start()
    deadline = time.monotonic() + timeout_s
    try:
        while not _zombie(daemon.process.pid):  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise SystemExit(f"the experiment did not finish in {timeout_s:g} s; see {folder / 'console.log'}")
            finished = count_finished(folder)
            if "daemon_restart" not in events and finished >= restart_daemon_at * jobs:
                daemon.wait(kill=True)
                events["daemon_restart"] = {"finished": finished, "at": time.time()}
                daemon.start()
            elif "controller_restart" not in events and finished >= restart_controller_at * jobs:
                events["controller_restart"] = {"finished": finished, "at": time.time(),
                                                "down_s": round(restart_controller(scheduler, slots), 1)}
            time.sleep(0.5)
    except BaseException:
        daemon.wait(kill=True)
        subprocess.run([sys.executable, "-m", "spearmint_nn", "cancel", str(folder)], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # none left on the cluster
        raise
    status = daemon.wait()
    if status != 0:
        raise SystemExit(f"the daemon exited {status}; see {folder / 'console.log'}")
    return {"daemon_cpu_s": daemon.cpu_s, "daemon_wall_s": daemon.wall_s, "events": events,
            "exit_codes": daemon.exit_codes}


def slurm_intervals(prefix: str, since: float) -> list[tuple[float, float]]:
    """(start, end) of each of the experiment's jobs (array tasks each), from ``sacct``."""
    start = dt.datetime.fromtimestamp(since).strftime("%Y-%m-%dT%H:%M:%S")
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-a", "-S", start, "-o", "JobID,JobName,Start,End"],
                         capture_output=True, text=True, check=True).stdout
    intervals = []
    for line in out.splitlines():
        _, name, begin, end = line.split("|")
        if name.startswith(prefix) and begin[:1].isdigit() and end[:1].isdigit():
            intervals.append((dt.datetime.fromisoformat(begin).timestamp(), dt.datetime.fromisoformat(end).timestamp()))
    return intervals


def sge_intervals(prefix: str, since: float) -> list[tuple[float, float]]:
    """(start, end) of each of the experiment's jobs (array tasks each), from ``qacct``."""
    out = subprocess.run(["qacct", "-j"], capture_output=True, text=True).stdout
    intervals = []
    for block in out.split("=" * 20):
        fields = dict(line.split(None, 1) for line in block.splitlines() if len(line.split(None, 1)) == 2)
        if not fields.get("jobname", "").startswith(prefix) or "-/-" in (fields["start_time"], fields["end_time"]):
            continue  # another's, or deleted before it started
        begin, end = (time.mktime(time.strptime(" ".join(fields[key].split()), "%a %b %d %H:%M:%S %Y"))
                      for key in ("start_time", "end_time"))
        if begin >= since - 1:
            intervals.append((begin, end))
    return intervals


def busy_share(intervals: Sequence[tuple[float, float]], slots: int,
               disturbed: Sequence[tuple[float, float]] = (), settle_s: float = 60.0) -> dict[str, Any]:
    """Slot-time in use over all slots' time from the first start to the last start; and the
    same in steady running: without the first ``settle_s`` seconds, nor each (from, to) in
    ``disturbed`` (a restart: the controller down) and the ``settle_s`` seconds after it."""
    first = min(begin for begin, _ in intervals)
    last = max(begin for begin, _ in intervals)
    used = sum(max(0.0, min(end, last) - begin) for begin, end in intervals)
    return {"busy_share": used / (slots * (last - first)) if last > first else None,
            "steady_busy_share": _steady_share(intervals, slots, first, last, disturbed, settle_s),
            "window_s": last - first, "accounted_jobs": len(intervals)}


def _steady_share(intervals: Sequence[tuple[float, float]], slots: int, first: float, last: float,
                  disturbed: Sequence[tuple[float, float]], settle_s: float, step: float = 1.0) -> float | None:
    """The share of the slots' time that ``intervals`` cover from ``first`` to ``last`` outside
    the settling windows, in steps of ``step`` seconds from the whole second before ``first``
    (an interval covers a step it spans whole: the accounting's times are whole seconds)."""
    excluded = [(first, first + settle_s), *((start, end + settle_s) for start, end in disturbed)]
    moments = int(first) + step * np.arange(int((last - int(first)) / step))
    moments = moments[[not any(start <= moment < end for start, end in excluded) for moment in moments]]
    begins, ends = np.array(intervals, dtype=float).reshape(-1, 2).T
    # a moments x intervals table, in blocks so that a long run's table stays small
    covering = np.concatenate([((begins <= block[:, None]) & (ends >= block[:, None] + step)).sum(axis=1)
                               for block in np.array_split(moments, max(1, len(moments) // 1000))])
    used, offered = float(np.minimum(slots, covering).sum()), slots * len(moments)
    return used / offered if offered else None


def daemon_side(folder: Path, slots: int, first: float, last: float, disturbed: Sequence[tuple[float, float]],
                settle_s: float) -> dict[str, Any]:
    """Whose wait a free slot was, from the daemon's job records, in the steady window of
    :func:`busy_share`: the share of the slots' time in which the daemon had a job at the
    scheduler (from its submission to the end of its wrapper), and the share in which a job
    was submitted but the scheduler had not started it yet. A slot free while fewer than
    ``slots`` jobs were in flight waited on the daemon (noticing an end, proposing,
    submitting); one free while jobs waited to start waited on the scheduler."""
    records = [json.loads(path.read_text()) for path in (folder / ".spearmint" / "jobs" / "complete").glob("*.json")]
    records = [r for r in records if {"submitted", "process_started", "ended"} <= r.keys()]
    in_flight = [(r["submitted"], r["ended"]) for r in records]
    queued = [(r["submitted"], r["process_started"]) for r in records]
    return {"steady_in_flight_share": _steady_share(in_flight, slots, first, last, disturbed, settle_s, 0.1),
            "steady_queued_share": _steady_share(queued, slots, first, last, disturbed, settle_s, 0.1)}


def check_ledgers(folder: Path, jobs: int) -> dict[str, Any]:
    """Nothing lost, nothing repeated: each job's ledger, and the daemon's records."""
    lines = {int(path.name): path.read_text().split("\n")[:-1] for path in (folder / "ledgers").iterdir()}
    starts = Counter({job: sum(line.startswith("start") for line in text) for job, text in lines.items()})
    ends = Counter({job: sum(line.startswith("end") for line in text) for job, text in lines.items()})
    complete = {int(path.stem) for path in (folder / ".spearmint" / "jobs" / "complete").glob("*.json")}
    failed = list((folder / ".spearmint" / "jobs" / "failed").glob("*.json"))
    return {"ran_once": sum(1 for job in lines if starts[job] == 1 and ends[job] == 1),
            "started_twice": sorted(job for job in lines if starts[job] > 1),
            "never_ended": sorted(job for job in lines if ends[job] == 0),
            "complete": len(complete), "failed": len(failed),
            "complete_without_ledger": sorted(complete - set(lines)),
            "ok": len(complete) == jobs and not failed and set(lines) == complete
            and all(starts[job] == 1 and ends[job] == 1 for job in lines)}


def scheduler_calls(log: Path, minutes: float) -> dict[str, Any]:
    names = Counter(line.split()[1] for line in log.read_text().splitlines()) if log.exists() else Counter()
    return {"total": sum(names.values()), "per_minute": round(sum(names.values()) / minutes, 1),
            "by_command": dict(sorted(names.items()))}


def run(scheduler: str, jobs: int, slots: int, seconds: tuple[int, int], restart_daemon_at: float,
        restart_controller_at: float, model: str | None, loops: int, driver: dict[str, Any],
        workdir: Path, settle_s: float = 60.0) -> dict[str, Any]:
    bring_up(scheduler, slots)
    prefix = f"bc{int(time.time()) % 10 ** 6}-"
    folder = workdir / "experiment"
    write_experiment(folder, scheduler, jobs, slots, seconds, model, prefix, loops, driver)
    shims, log = write_shims(workdir, scheduler)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    since = time.time()
    outcome = run_experiment(folder, env, jobs, scheduler, slots, restart_daemon_at, restart_controller_at,
                             timeout_s=30 * 60 + 3 * jobs * seconds[1] / slots)
    accounting = slurm_intervals if scheduler == "slurm" else sge_intervals
    intervals = accounting(prefix, since)
    for _ in range(60):  # the accounting of the last jobs may come a little later
        if len(intervals) >= jobs:
            break
        time.sleep(2)
        intervals = accounting(prefix, since)
    disturbed = [(event["at"], event["at"] + event.get("down_s", 0.0)) for event in outcome["events"].values()]
    return {"scheduler": scheduler, "jobs": jobs, "slots": slots, "seconds": list(seconds),
            "model": model or "default", "awk_loops": loops, "driver_options": driver,
            **busy_share(intervals, slots, disturbed, settle_s),
            **daemon_side(folder, slots, min(begin for begin, _ in intervals), max(begin for begin, _ in intervals),
                          disturbed, settle_s),
            "ledger": check_ledgers(folder, jobs),
            "scheduler_calls": scheduler_calls(log, outcome["daemon_wall_s"] / 60),
            "daemon_cpu_s": round(outcome["daemon_cpu_s"], 1), "daemon_wall_s": round(outcome["daemon_wall_s"], 1),
            "daemon_cpu_share": round(outcome["daemon_cpu_s"] / outcome["daemon_wall_s"], 3),
            "restarts": outcome["events"], "daemon_exit_codes": outcome["exit_codes"]}


def table(results: Sequence[dict[str, Any]]) -> str:
    # whose wait a free slot was: a column only for results that record it (not those before it)
    whose = any("steady_in_flight_share" in r for r in results)
    rows = [("scheduler", "jobs / slots", "job seconds", "busy share (steady)",
             *(["steady: in flight / queued"] if whose else []), "scheduler calls/min", "daemon CPU",
             "ran once / complete / failed", "nothing lost or repeated")]
    for r in results:
        ledger = r["ledger"]
        rows.append((r["scheduler"], f"{r['jobs']} / {r['slots']}", f"{r['seconds'][0]}-{r['seconds'][1]}",
                     f"{_percent(r['busy_share'])} ({_percent(r['steady_busy_share'])})",
                     *([f"{_percent(r.get('steady_in_flight_share'))} / {_percent(r.get('steady_queued_share'))}"]
                       if whose else []),
                     f"{r['scheduler_calls']['per_minute']:g}",
                     f"{r['daemon_cpu_s']:g} s ({100 * r['daemon_cpu_share']:.0f}% of a core)",
                     f"{ledger['ran_once']} / {ledger['complete']} / {ledger['failed']}", "yes" if ledger["ok"] else "NO"))
    return "\n".join("| " + " | ".join(row) + " |" for row in [rows[0], tuple("---" for _ in rows[0]), *rows[1:]])


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"  # None: a run too short for the window


def main(argv: Sequence[str] | None = None) -> int:
    parser = benchmark_parser("busy_cluster", __doc__.split("\n\n")[0], json=True, workdir=True)
    parser.add_argument("--scheduler", choices=("slurm", "sge"), action="append",
                        help="slurm, sge, or both (repeat the flag); default: both")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--slots", type=int, default=200)
    parser.add_argument("--seconds", default="20,60", help="shortest,longest job sleep in whole seconds")
    parser.add_argument("--restart-daemon-at", type=float, default=0.35)
    parser.add_argument("--restart-controller-at", type=float, default=0.6)
    parser.add_argument("--model", default=None, help="the config's model key (default: the config default)")
    parser.add_argument("--array-size", type=int, default=None, help="the driver's array-size (default: its default)")
    parser.add_argument("--settle", type=float, default=60.0,
                        help="seconds after the start and after each restart left out of the steady share")
    parser.add_argument("--awk-loops", type=int, default=100000, help="iterations of each job's computation")
    args = parser.parse_args(argv)
    low, high = (int(part) for part in args.seconds.split(","))
    results = []
    for scheduler in args.scheduler or ["slurm", "sge"]:
        with tempfile.TemporaryDirectory(prefix="busy-cluster-") as temporary:
            workdir = Path(args.workdir or temporary) / scheduler
            workdir.mkdir(parents=True)
            try:
                results.append(run(scheduler, args.jobs, args.slots, (low, high), args.restart_daemon_at,
                                   args.restart_controller_at, args.model, args.awk_loops,
                                   {} if args.array_size is None else {"array-size": args.array_size}, workdir,
                                   args.settle))
            finally:
                bring_up(scheduler, None)  # back to the size the tests expect
        print(table(results[-1:]), flush=True)
    if len(results) > 1:
        print(table(results))
    if args.json is not None:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_json(args.json, {"results": results})
    return 0 if all(r["ledger"]["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
