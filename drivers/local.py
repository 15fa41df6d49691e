"""The local driver: each job is a process of this machine, in its own session.

The scheduler id is ``"<pid>:<start time>"``, the start time being field 22 of
``/proc/<pid>/stat`` (clock ticks since boot). A restarted daemon re-adopts a job by checking
that the pid is alive *and* started at that moment, so a recycled pid is never mistaken for
the job. For jobs it started itself the driver also knows the exit status; for adopted ones
the result file alone tells success from failure.

With ``gpus`` (a list, one entry per job slot: a device such as ``0`` or several such as
``"0,1"``), each job runs with ``CUDA_VISIBLE_DEVICES`` set to a slot no live job holds, and its
scheduler id ends with them, ``"<pid>:<start time>:<devices>"``: a restarted daemon that adopts
the job knows its devices are taken. A device listed twice is two slots (two jobs share it).

The ``time-limit`` (default :data:`DEFAULT_TIME_LIMIT_S`; ``null``: none) is measured from the
process start time, so it also holds for adopted jobs. At the limit, or on cancel, the whole
process group gets SIGTERM and, after a short grace period, SIGKILL. With a ``warning`` (the
experiment's ``resume`` key), the runner alone (not its group: it passes the warning on to the
wrapper itself) gets SIGUSR1 that many seconds before the limit, once per job this driver
instance watches (a restarted daemon may warn an adopted job again; the runner keeps the first).
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from spearmint_nn.errors import ConfigError
from spearmint_nn.processes import process_stat

from .base import Driver, JobSpec, JobStatus, PollError, SchedulerState, SubmitError

KILL_GRACE_S = 2.0
# No scheduler stands behind a local job: without a limit a hung job (a deadlocked data loader,
# a wrapper waiting on input) holds its slot forever. A day is longer than any training run meant
# for a workstation's search, and short enough that a hang costs a slot for one day, not the search.
DEFAULT_TIME_LIMIT_S = 24 * 3600.0
# The daemon submits the next job as soon as it reads a result, while the process that wrote it
# may still be exiting (interpreter teardown, the CUDA context's release): a GPU slot is waited
# for this long before the daemon keeps its pending jobs for a later wake (has_room).
SLOT_WAIT_S = 5.0


def _boot_time() -> float:
    with open("/proc/stat") as handle:
        for line in handle:
            if line.startswith("btime "):
                return float(line.split()[1])
    raise PollError("no btime in /proc/stat")


_TICKS = os.sysconf("SC_CLK_TCK")


def _parse_id(scheduler_id: str) -> tuple[int, int]:
    pid, start = scheduler_id.split(":")[:2]
    return int(pid), int(start)


def _devices_of(scheduler_id: str) -> str | None:
    """The CUDA devices a job's scheduler id names (None: a job without a GPU slot)."""
    parts = scheduler_id.split(":", 2)
    return parts[2] if len(parts) == 3 else None


# One CUDA device as CUDA_VISIBLE_DEVICES names it: an index, or a GPU-/MIG- UUID.
_DEVICE = re.compile(r"[0-9]+|(GPU|MIG)-[A-Za-z0-9-]+")


def gpu_slots(value: Any) -> list[str]:
    """The ``gpus`` option as one CUDA_VISIBLE_DEVICES value per slot; ConfigError naming the entry."""
    example = "a list of devices, one per job slot, such as [0, 1] or [\"0,1\", \"2,3\"] for two devices a job"
    if not isinstance(value, list) or not value:
        raise ConfigError("driver.gpus", f"must be {example} (got {value!r})")
    slots = []
    for i, entry in enumerate(value):
        text = str(entry) if isinstance(entry, int) and not isinstance(entry, bool) and entry >= 0 else entry
        if not isinstance(text, str) or not all(_DEVICE.fullmatch(d) for d in text.split(",")):
            raise ConfigError(f"driver.gpus[{i}]", f"must be a device number such as 0, or devices such as "
                              f"\"0,1\" (got {entry!r})")
        slots.append(text)
    return slots


def _catches(pid: int, signum: int) -> bool | None:
    """Whether the process has a handler of its own for ``signum`` (Linux's /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError):
        return None
    return None


class LocalDriver(Driver):
    """Runs jobs as local processes (see the module docstring)."""

    name = "local"
    options: Mapping[str, str] = {
        **Driver.options,
        "time-limit": "wall time per job: seconds, or [D-]HH:MM:SS (default 24:00:00); null: none",
        "gpus": "GPU slots, one job each: a list of CUDA devices such as [0, 1], or [\"0,1\", \"2,3\"] "
                "for two devices a job",
    }
    result_grace_s = 0.0  # a local job's result file is complete before its process exits
    default_time_limit = DEFAULT_TIME_LIMIT_S

    def __init__(self, options: Mapping[str, Any], state_dir: Path, warning: float | None = None,
                 max_concurrent: int | None = None):
        super().__init__(options, state_dir, warning, max_concurrent)
        self._children: dict[str, subprocess.Popen] = {}
        self._timed_out: set[str] = set()
        self._warned: set[str] = set()
        self._cancelled: set[str] = set()
        self._boot = _boot_time()
        self.gpus: list[str] | None = gpu_slots(options["gpus"]) if "gpus" in options else None
        self._holding: dict[str, str] = {}  # scheduler id -> the devices of a job in a GPU slot

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> None:
        super().validate_options(options)
        if "gpus" in options:
            gpu_slots(options["gpus"])

    def settings_text(self) -> list[str]:
        return super().settings_text() + ([f"GPU slots {' | '.join(self.gpus)}"] if self.gpus is not None else [])

    def submit(self, spec: JobSpec) -> str:
        env = {**os.environ, **spec.env}
        devices = None
        if self.gpus is not None:
            devices = self._free_gpu_slot()
            if devices is None:  # the daemon asks has_room first: only a caller that did not
                raise SubmitError(f"all {len(self.gpus)} GPU slots of driver.gpus are taken", transient=True)
            env["CUDA_VISIBLE_DEVICES"] = devices
        try:
            with open(spec.stdout, "ab") as out, open(spec.stderr, "ab") as err:
                proc = subprocess.Popen(spec.command, cwd=spec.workdir, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=err, env=env, start_new_session=True)
        except OSError as exc:
            raise SubmitError(f"cannot start {spec.command[0]!r}: {exc.strerror}", transient=False) from None
        stat = process_stat(proc.pid)
        # A job that exits before we read /proc is still ours: Popen keeps its exit status.
        scheduler_id = f"{proc.pid}:{stat[1] if stat else 0}" + (f":{devices}" if devices is not None else "")
        self._children[scheduler_id] = proc
        if devices is not None:
            self._holding[scheduler_id] = devices
        return scheduler_id

    def has_room(self) -> bool:
        """Without GPU slots, always; with them, whether one is free, waiting up to SLOT_WAIT_S for
        a job whose result was just read to exit."""
        if self.gpus is None:
            return True
        deadline = time.monotonic() + SLOT_WAIT_S
        while self._free_gpu_slot() is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def _free_gpu_slot(self) -> str | None:
        """The devices of a slot no live job holds, or None. A slot is free once its job's process
        has gone, whether or not the daemon has polled it since (it may have read the result file)."""
        self._holding = {sid: devices for sid, devices in self._holding.items() if self._running(sid)}
        taken = Counter(self._holding.values())
        for devices in self.gpus or ():
            if taken[devices] > 0:
                taken[devices] -= 1  # a device listed twice: the other entry may still be free
            else:
                return devices
        return None

    def _running(self, scheduler_id: str) -> bool:
        proc = self._children.get(scheduler_id)
        return proc.poll() is None if proc is not None else self._alive(scheduler_id)

    def adopt_claim(self, claim: Mapping[str, Any]) -> str | None:
        """``"<pid>:<start time>[:<devices>]"`` of a runner that claimed its job on this host."""
        pid, start = claim.get("pid"), claim.get("start_ticks")
        if claim.get("host") != socket.gethostname() or not isinstance(pid, int) or not isinstance(start, int):
            return None
        devices = claim.get("cuda_visible_devices") if self.gpus is not None else None
        return f"{pid}:{start}" + (f":{devices}" if isinstance(devices, str) and devices else "")

    def _alive(self, scheduler_id: str) -> bool:
        pid, start = _parse_id(scheduler_id)
        stat = process_stat(pid)
        return stat is not None and stat[1] == start and stat[0] not in ("Z", "X")

    def _age(self, scheduler_id: str) -> float:
        return time.time() - (self._boot + _parse_id(scheduler_id)[1] / _TICKS)

    def poll(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        statuses = {}
        for sid in scheduler_ids:
            devices = _devices_of(sid)
            if devices is not None and self.gpus is not None:
                self._holding.setdefault(sid, devices)  # a job a previous daemon started holds its slot
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
                self._warn_if_due(sid)
                statuses[sid] = JobStatus(SchedulerState.RUNNING)
        return statuses

    def _warn_if_due(self, sid: str) -> None:
        """SIGUSR1 to a running job's runner once it is within ``warning`` of the time limit."""
        if self.warning is None or self.time_limit is None or sid in self._warned:
            return
        pid = _parse_id(sid)[0]
        # Not before the runner handles it: SIGUSR1's default action would kill a runner still
        # starting up on a loaded machine (the batch drivers' job scripts ignore it until then).
        if self._age(sid) > self.time_limit - self.warning and _catches(pid, signal.SIGUSR1) is not False:
            self._warned.add(sid)
            try:
                os.kill(pid, signal.SIGUSR1)  # checked alive by the caller
            except ProcessLookupError:
                pass

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
            return JobStatus(SchedulerState.FAILED, code, f"killed by signal {signal.Signals(-code).name}", signal=-code)
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
