"""Schedulers that misbehave on purpose, for fault-injection tests only.

Never a stand-in for the real drivers in other tests: jobs still run as real processes through
the real runner, and the faults sit exactly where a real scheduler shows them.

* :class:`FaultyLocalDriver` - the local driver with scripted faults: submissions that fail
  (transiently or not), a status command that fails or hangs, jobs the scheduler forgets, and
  jobs reported as ended before their last write is visible (as on NFS).
* :func:`install_fake_slurm` - ``sbatch``/``squeue``/``sacct``/``scancel`` executables for PATH
  that run the job scripts of the real SLURM driver as local processes, with faults switched on
  and off through files in their state folder (so a test can change them while a daemon runs).
* :func:`run_daemon` - the real :class:`~spearmint_nn.daemon.loop.Daemon` in the test process, so a
  test can hand it one of these drivers and shorten its retry delays.
* ``python fake_scheduler.py kill-in-submit|kill-at-write|kill-after-array ...`` - a daemon process
  that SIGKILLs itself at an exact moment: inside a submission, halfway through writing a state
  file, or right after the config's real batch driver submitted a job array (before the daemon
  recorded the tasks' ids).
"""
from __future__ import annotations

import io
import json
import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from spearmint_nn.experiment.config import load_config
from spearmint_nn.daemon.build import build_daemon
from spearmint_nn.daemon.loop import Daemon
from spearmint_nn.drivers.base import JobSpec, JobStatus, PollError, SchedulerState, SubmitError
from spearmint_nn.drivers.local import LocalDriver
from spearmint_nn.experiment.layout import ExperimentPaths

TRANSIENT_MESSAGE = "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
POLL_MESSAGE = "squeue: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


class FaultyLocalDriver(LocalDriver):
    """The local driver with faults (all off by default; change the attributes at any time).

    submit_faults   job id -> number of submissions of that job that fail before one succeeds
                    (``-1``: every one); ``transient`` says how they fail
    poll_fails      while True, every poll raises PollError (the status command failed)
    poll_hang_s     every poll first sleeps this long, then raises PollError (a timed-out command)
    forget          job ids the scheduler forgets: their processes are killed without a trace and
                    every poll answers UNKNOWN for them
    ended_early     job ids reported COMPLETED while still running (their result file shows up late)
    preempt         job id -> how many of its attempts the scheduler preempts without a requeue, each
                    once ``started(job id, attempt)`` holds: killed and reported PREEMPTED
    started         (job id, attempt) -> whether that attempt has got far enough to be preempted;
                    by default once its runner has claimed it (a test that counts the wrapper's
                    runs waits for the wrapper itself, which a loaded machine starts later)
    """

    def __init__(self, options: Mapping[str, Any], state_dir: Path, result_grace_s: float = 0.0):
        super().__init__(options, state_dir)
        self.result_grace_s = result_grace_s
        self.submit_faults: dict[int, int] = {}
        self.transient = True
        self.poll_fails = False
        self.poll_hang_s = 0.0
        self.forget: set[int] = set()
        self.ended_early: set[int] = set()
        self.preempt: dict[int, int] = {}
        self._preempted: set[str] = set()
        self.started: Callable[[int, int], bool] = self._claimed
        self._attempt_of: dict[str, int] = {}  # scheduler id -> the attempt it runs
        self._paths: ExperimentPaths | None = None  # the experiment's, from its first submission
        self.submit_times: dict[int, list[float]] = {}  # job id -> time of every submission attempt
        self.polls_failed = 0
        self.unknown_since: dict[int, float] = {}        # job id -> first poll that answered UNKNOWN
        self._job_of: dict[str, int] = {}

    def submit(self, spec: JobSpec) -> str:
        self.submit_times.setdefault(spec.job_id, []).append(time.monotonic())
        left = self.submit_faults.get(spec.job_id, 0)
        if left:
            self.submit_faults[spec.job_id] = left - 1 if left > 0 else left
            raise SubmitError(TRANSIENT_MESSAGE if self.transient else "sbatch: error: invalid partition specified: gpu",
                              transient=self.transient)
        scheduler_id = super().submit(spec)
        self._job_of[scheduler_id] = spec.job_id
        attempt = int(spec.command[spec.command.index("--attempt") + 1]) if "--attempt" in spec.command else 1
        self._attempt_of[scheduler_id] = attempt
        self._paths = self._paths or ExperimentPaths(spec.workdir)
        return scheduler_id

    def _claimed(self, job_id: int, attempt: int) -> bool:
        return self._paths is not None and self._paths.claim_file(job_id, attempt).exists()

    def poll(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        if self.poll_hang_s:
            time.sleep(self.poll_hang_s)
            self.polls_failed += 1
            raise PollError(f"squeue gave no answer within {self.poll_hang_s:g} s")
        if self.poll_fails:
            self.polls_failed += 1
            raise PollError(f"squeue failed: {POLL_MESSAGE}")
        statuses = super().poll([sid for sid in scheduler_ids if self._job_of.get(sid) not in self.forget])
        for sid in scheduler_ids:
            job_id = self._job_of.get(sid)
            if job_id in self.forget:
                self._kill_group(sid)
                self.unknown_since.setdefault(job_id, time.monotonic())
                statuses[sid] = JobStatus(SchedulerState.UNKNOWN, None, "the scheduler has no record of this job")
            elif job_id in self.ended_early and not statuses[sid].state.finished:
                statuses[sid] = JobStatus(SchedulerState.COMPLETED, 0)
            elif sid in self._preempted or (self.preempt.get(job_id, 0) > 0 and not statuses[sid].state.finished
                                            and self.started(job_id, self._attempt_of[sid])):
                if sid not in self._preempted:
                    self._kill_group(sid)
                    self._preempted.add(sid)
                    self.preempt[job_id] -= 1
                statuses[sid] = JobStatus(SchedulerState.PREEMPTED, None, "SLURM: PREEMPTED, killed by signal 15")
        return statuses


def run_daemon(folder: Path, driver: Any = None, timeout_s: float = 120.0, **daemon_kwargs: Any) -> tuple[int, str]:
    """Run the real daemon on ``folder`` in this process until it stops; (exit code, its log lines).

    ``driver`` replaces the one the config names. After ``timeout_s`` the daemon gets SIGTERM
    (and stops gracefully), so a test that hangs fails instead of blocking the suite.
    """
    code, log, _ = run_daemon_keeping(folder, driver, timeout_s, **daemon_kwargs)
    return code, log


def run_daemon_keeping(folder: Path, driver: Any = None, timeout_s: float = 120.0,
                       **daemon_kwargs: Any) -> tuple[int, str, Daemon]:
    """:func:`run_daemon`, giving back the daemon too (a test can ask its optimizer what it was shown)."""
    console = io.StringIO()
    daemon = build_daemon(load_config(folder), driver, stream=console, **daemon_kwargs)
    timer = threading.Timer(timeout_s, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        code = daemon.run()
    finally:
        timer.cancel()
    return code, console.getvalue(), daemon


# ---- fake SLURM executables --------------------------------------------------------------------

# One Python program behind all four commands (argv[0] says which). State lives in
# $FAKE_SLURM_DIR: next_id, job/<id>.pid, job/<id>.exit, sbatch_calls.jsonl (every sbatch argv),
# and the fault switches (a job array's task N is the job <id>_N, started at once):
#   sbatch_failures  N: the next N sbatch calls fail with a transient message
#   sbatch_lost_answers  N: the next N sbatch calls queue the job, then fail as sbatch_failures do
#                    (the controller took the job; its answer timed out on the way back)
#   squeue_mode      "fail" (exit 1, controller unreachable) or "hang" (sleep past any timeout)
#   squeue_failures  N: the next N squeue or sacct calls fail as "fail" does
#   forget           job ids (one per line) that squeue and sacct no longer know (killed if running)
_FAKE_SLURM = r'''
import json, os, signal, subprocess, sys, time
from pathlib import Path

state = Path(os.environ["FAKE_SLURM_DIR"])
jobs = state / "job"
jobs.mkdir(exist_ok=True)
command = Path(sys.argv[0]).name
args = sys.argv[1:]

def switch(name, default=""):
    path = state / name
    return path.read_text().strip() if path.exists() else default

def option(flag):
    return args[args.index(flag) + 1] if flag in args else None

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False

def kill(job_id):
    """SIGKILL the job's process group, if it ever started."""
    pid_file = jobs / f"{job_id}.pid"
    if pid_file.exists():
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass

def state_of(job_id):
    exit_file = jobs / f"{job_id}.exit"
    if exit_file.exists() and exit_file.read_text().strip():
        code = int(exit_file.read_text())
        return ("COMPLETED" if code == 0 else "FAILED"), code
    pid_file = jobs / f"{job_id}.pid"
    if pid_file.exists() and alive(int(pid_file.read_text())):
        return "RUNNING", 0
    return ("CANCELLED", 9) if pid_file.exists() else ("PENDING", 0)

if command == "sbatch":
    with open(state / "sbatch_calls.jsonl", "a") as calls:  # what a test can check the argv against
        calls.write(json.dumps(args) + "\n")
    failures = int(switch("sbatch_failures", "0"))
    if failures:
        (state / "sbatch_failures").write_text(str(failures - 1))
        print("sbatch: error: Batch job submission failed: Socket timed out on send/recv operation", file=sys.stderr)
        sys.exit(1)
    id_file = state / "next_id"
    job_id = int(id_file.read_text()) if id_file.exists() else 100
    id_file.write_text(str(job_id + 1))
    script = args[-1]
    array = next((a.split("=", 1)[1] for a in args if a.startswith("--array=")), None)  # "0-N%K"
    tasks = range(int(array.split("%")[0].split("-")[1]) + 1) if array else [None]

    def output_path(flag, task):  # sbatch's %% is a literal %, %a the task's index
        return "%".join(part.replace("%a", str(task)) for part in option(flag).split("%%"))
    for task in tasks:
        sid = str(job_id) if task is None else f"{job_id}_{task}"
        exit_file = jobs / f"{sid}.exit"
        env = {**os.environ, "SLURM_JOB_ID": sid}
        if task is not None:
            env.update(SLURM_ARRAY_JOB_ID=str(job_id), SLURM_ARRAY_TASK_ID=str(task))
        with open(output_path("--output", task), "ab") as o, open(output_path("--error", task), "ab") as e:
            proc = subprocess.Popen(["bash", "-c", 'bash "$1"; echo $? > "$2"', "job", script, str(exit_file)],
                                    cwd=option("--chdir"), stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True)
        (jobs / f"{sid}.pid").write_text(str(proc.pid))
        (jobs / f"{sid}.name").write_text(f"{option('--job-name')}|{option('--chdir')}")
    lost = int(switch("sbatch_lost_answers", "0"))
    if lost:
        (state / "sbatch_lost_answers").write_text(str(lost - 1))
        print("sbatch: error: Batch job submission failed: Socket timed out on send/recv operation", file=sys.stderr)
        sys.exit(1)
    print(job_id)
elif command in ("squeue", "sacct"):
    mode = switch("squeue_mode")
    if mode == "hang":
        time.sleep(3600)
    failures = int(switch("squeue_failures", "0"))  # the next calls that fail, as sbatch_failures
    if failures:
        (state / "squeue_failures").write_text(str(failures - 1))
    if mode == "fail" or failures:
        print("slurm_load_jobs error: Unable to contact slurm controller (connect failure)", file=sys.stderr)
        sys.exit(1)
    if command == "squeue" and "--name" in args:  # queued or running jobs of that name: "id|workdir"
        for path in sorted(jobs.glob("*.name"), key=lambda p: [int(n) for n in p.stem.split("_")]):
            name, workdir = path.read_text().split("|", 1)
            if name == option("--name") and state_of(path.stem)[0] in ("PENDING", "RUNNING"):
                print(f"{path.stem}|{workdir}")
        sys.exit(0)
    forgotten = set(switch("forget").split())
    for job_id in forgotten:  # a vanished job: its node died and took the job with it
        kill(job_id)
    wanted = [i for i in option("-j").split(",") if i not in forgotten]
    for job_id in wanted:
        name, code = state_of(job_id)
        if command == "squeue":
            print(f"{job_id}|{name}|None|{code << 8}|")
        else:
            print(f"{job_id}|{name}|{code}:0")
    if command == "squeue" and not wanted:
        print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
        sys.exit(1)
elif command == "scancel":
    for job_id in args:
        kill(job_id)
'''


def install_fake_slurm(bin_dir: Path, state_dir: Path) -> dict[str, str]:
    """Write the fake SLURM commands into ``bin_dir``; return the environment that uses them
    (PATH with ``bin_dir`` first, ``FAKE_SLURM_DIR``)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    program = bin_dir / "fake_slurm.py"
    program.write_text(textwrap.dedent(_FAKE_SLURM))
    for name in ("sbatch", "squeue", "sacct", "scancel"):
        launcher = bin_dir / name
        launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -c \'import sys; sys.argv[0] = "{name}"; '
                            f'exec(open("{program}").read())\' "$@"\n')
        launcher.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "FAKE_SLURM_DIR": str(state_dir)}


# ---- a daemon process that kills itself at a chosen moment -------------------------------------

class KilledInSubmit(LocalDriver):
    """The local driver of a daemon that is SIGKILLed inside ``submit`` of job ``job_id``:
    ``"before"`` the job starts, right ``"after"`` it starts, or ``"after-claim"`` (once the
    job's runner has claimed it)."""

    def __init__(self, options: Mapping[str, Any], state_dir: Path, job_id: int, when: str):
        super().__init__(options, state_dir)
        self.job_id, self.when = job_id, when

    def submit(self, spec: JobSpec) -> str:
        if spec.job_id == self.job_id and self.when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        scheduler_id = super().submit(spec)
        if spec.job_id == self.job_id:
            claim = self.state_dir / "claims" / f"{spec.job_id:06d}.json"
            while self.when == "after-claim" and not claim.exists():
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGKILL)
        return scheduler_id


def _kill_at_write(n: int) -> None:
    """SIGKILL this process in its n-th atomic write, after half of the temporary file is written."""
    import spearmint_nn.files as files

    real, count = files.atomic_write_bytes, [0]

    def half_then_die(path: Path, data: bytes, mode: int | None = None) -> None:
        count[0] += 1
        if count[0] < n:
            return real(path, data, mode)
        path = Path(path)
        tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as handle:
            handle.write(data[: len(data) // 2])
            handle.flush()
            os.fsync(handle.fileno())
        os.kill(os.getpid(), signal.SIGKILL)

    files.atomic_write_bytes = half_then_die


def _killed_after_array(folder: Path) -> Any:
    """The config's own driver (a real scheduler's), SIGKILLing its daemon as soon as it has
    submitted a job array: the scheduler has the tasks, the job files have no ids."""
    from spearmint_nn.daemon.build import make_driver

    driver = make_driver(load_config(folder))
    submit_many = driver.submit_many

    def submit_then_die(specs: Sequence[JobSpec]) -> list:
        answers = submit_many(specs)
        if len(specs) > 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return answers

    driver.submit_many = submit_then_die
    return driver


def main(argv: Sequence[str]) -> int:
    """``python fake_scheduler.py kill-in-submit DIR JOB WHEN``, ``... kill-at-write DIR N`` or
    ``... kill-after-array DIR``: run the daemon on DIR until it kills itself there (exit code
    -9 seen by the parent)."""
    mode, folder = argv[0], Path(argv[1])
    if mode == "kill-at-write":
        _kill_at_write(int(argv[2]))
        return run_daemon(folder, timeout_s=300)[0]
    if mode == "kill-after-array":
        return run_daemon(folder, _killed_after_array(folder), timeout_s=300)[0]
    config = load_config(folder)
    driver = KilledInSubmit({}, config.paths.state, int(argv[2]), argv[3])
    return run_daemon(folder, driver, timeout_s=300)[0]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def jobs_by_id(folder: Path) -> dict[int, dict[str, Any]]:
    """Every job file of an experiment, by id (a job seen in two folders: the last one read)."""
    out = {}
    for path in (folder / ".spearmint" / "jobs").glob("*/*.json"):
        job = json.loads(path.read_text())
        out[job["id"]] = job
    return dict(sorted(out.items()))


def faulty_driver(folder: Path, **faults: Any) -> "FaultyLocalDriver":
    """A :class:`FaultyLocalDriver` on the experiment's state folder."""
    return FaultyLocalDriver({}, ExperimentPaths(folder).state, **faults)
