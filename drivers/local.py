"""The local driver: each job is a process of this machine, in its own session.

The scheduler id is ``"<pid>:<start time>"``, the start time being field 22 of
``/proc/<pid>/stat`` (clock ticks since boot). A restarted daemon re-adopts a job by checking
that the pid is alive *and* started at that moment, so a recycled pid is never mistaken for
the job. For jobs it started itself the driver also knows the exit status; for adopted ones
the result file alone tells success from failure.

The ``time-limit`` (default :data:`DEFAULT_TIME_LIMIT_S`; ``null``: none) is measured from the
process start time, so it also holds for adopted jobs. At the limit, or on cancel, the whole
process group gets SIGTERM and, after a short grace period, SIGKILL.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from .base import Driver, JobSpec, JobStatus, PollError, SchedulerState, SubmitError

KILL_GRACE_S = 2.0
# No scheduler stands behind a local job: without a limit a hung job (a deadlocked data loader,
# a wrapper waiting on input) holds its slot forever. A day is longer than any training run meant
# for a workstation's search, and short enough that a hang costs a slot for one day, not the search.
DEFAULT_TIME_LIMIT_S = 24 * 3600.0


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks since boot) of a live pid, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may contain spaces and ')'
    return fields[0], int(fields[19])


def _boot_time() -> float:
    with open("/proc/stat") as handle:
        for line in handle:
            if line.startswith("btime "):
                return float(line.split()[1])
    raise PollError("no btime in /proc/stat")


_TICKS = os.sysconf("SC_CLK_TCK")


def _parse_id(scheduler_id: str) -> tuple[int, int]:
    pid, _, start = scheduler_id.partition(":")
    return int(pid), int(start)


class LocalDriver(Driver):
    """Runs jobs as local processes (see the module docstring)."""

    name = "local"
    options: Mapping[str, str] = {
        **Driver.options,
        "time-limit": "wall time per job: seconds, or [D-]HH:MM:SS (default 24:00:00); null: none",
    }
    result_grace_s = 0.0  # a local job's result file is complete before its process exits
    default_time_limit = DEFAULT_TIME_LIMIT_S

    def __init__(self, options: Mapping[str, Any], state_dir: Path):
        super().__init__(options, state_dir)
        self._children: dict[str, subprocess.Popen] = {}
        self._timed_out: set[str] = set()
        self._cancelled: set[str] = set()
        self._boot = _boot_time()

    def submit(self, spec: JobSpec) -> str:
        try:
            with open(spec.stdout, "ab") as out, open(spec.stderr, "ab") as err:
                proc = subprocess.Popen(spec.command, cwd=spec.workdir, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=err, env={**os.environ, **spec.env},
                                        start_new_session=True)
        except OSError as exc:
            raise SubmitError(f"cannot start {spec.command[0]!r}: {exc.strerror}", transient=False) from None
        stat = _proc_stat(proc.pid)
        # A job that exits before we read /proc is still ours: Popen keeps its exit status.
        scheduler_id = f"{proc.pid}:{stat[1] if stat else 0}"
        self._children[scheduler_id] = proc
        return scheduler_id

    def adopt_claim(self, claim: Mapping[str, Any]) -> str | None:
        """``"<pid>:<start time>"`` of a runner that claimed its job on this host."""
        pid, start = claim.get("pid"), claim.get("start_ticks")
        if claim.get("host") != socket.gethostname() or not isinstance(pid, int) or not isinstance(start, int):
            return None
        return f"{pid}:{start}"

    def _alive(self, scheduler_id: str) -> bool:
        pid, start = _parse_id(scheduler_id)
        stat = _proc_stat(pid)
        return stat is not None and stat[1] == start and stat[0] not in ("Z", "X")

    def _age(self, scheduler_id: str) -> float:
        return time.time() - (self._boot + _parse_id(scheduler_id)[1] / _TICKS)

    def poll(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        statuses = {}
        for sid in scheduler_ids:
            proc = self._children.get(sid)
            code = proc.poll() if proc is not None else None
            if code is not None or (proc is None and not self._alive(sid)):
                statuses[sid] = self._ended(sid, code)
                self._children.pop(sid, None)
            elif self.time_limit is not None and self._age(sid) > self.time_limit:
                self._kill_group(sid)
                self._timed_out.add(sid)
                statuses[sid] = self._ended(sid, proc.poll() if proc is not None else None)
            else:
                statuses[sid] = JobStatus(SchedulerState.RUNNING)
        return statuses

    def _ended(self, sid: str, code: int | None) -> JobStatus:
        if sid in self._timed_out:
            return JobStatus(SchedulerState.TIMEOUT, code, f"killed after the time limit of {self.time_limit:g} s")
        if sid in self._cancelled:
            return JobStatus(SchedulerState.CANCELLED, code, "cancelled")
        if code is None:
            return JobStatus(SchedulerState.UNKNOWN, None, "process ended (exit status unknown after a daemon restart)")
        if code == 0:
            return JobStatus(SchedulerState.COMPLETED, 0)
        if code < 0:
            return JobStatus(SchedulerState.FAILED, code, f"killed by signal {signal.Signals(-code).name}")
        return JobStatus(SchedulerState.FAILED, code, f"exit status {code}")

    def cancel(self, scheduler_ids: Sequence[str]) -> None:
        for sid in scheduler_ids:
            self._cancelled.add(sid)
            self._kill_group(sid)

    def _kill_group(self, sid: str) -> None:
        """SIGTERM the job's process group, then SIGKILL what is left after a grace period."""
        pid, _ = _parse_id(sid)
        proc = self._children.get(sid)
        if proc is None and not self._alive(sid):
            return  # gone, and the pid may since belong to someone else
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < deadline:
            if (proc.poll() is not None) if proc is not None else not self._alive(sid):
                break
            time.sleep(0.05)
        try:
            os.killpg(pid, signal.SIGKILL)  # the rest of the group, even if the leader left
        except ProcessLookupError:
            pass
        if proc is not None:
            proc.wait()
