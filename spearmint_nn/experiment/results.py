"""A job's result file as a typed record: written by the runner, read by the daemon.

The runner (:mod:`spearmint_nn.runner`) writes ``results/<id>.json`` once, atomically, through
:meth:`JobResult.write`; the daemon reads it back through :meth:`JobResult.read`, as both sides
read job files through :class:`~spearmint_nn.experiment.jobs.Job`. The file is one JSON object:

    id               int, the job id
    status           "ok" (the wrapper returned values) | "error" (it did not)
    values           (ok) {task: float}, as the runner checked them
    failure          (error) the short kind, one of :data:`~spearmint_nn.experiment.jobs.FAILURE_KINDS`
    error            (error) one line saying why
    traceback        (error) the end of the traceback, or ""
    location         (error) ``"<file>:<line>"`` in the user's code the error points at, or null
    host             the host the runner ran on
    process_started  unix time the runner's process started (null off Linux)
    started, ended   unix times the runner began and finished the job
    attempts         the runs of the job, first first, each as in the job file (see
                     :mod:`spearmint_nn.experiment.layout`); the last one wrote this file

A daemon upgraded while jobs run reads what older runners wrote, so reading is lenient: a
missing ``failure`` is "exception", a missing ``error`` "no message", missing ``attempts`` none
(older runners did not list them), and a timing, host or
location field of the wrong type is taken as unknown. A file that is not a result of the job
(not yet written, unreadable, another id, another status) reads as None, and the daemon decides
what that means (it waits, or fails the job "bad_result" once the scheduler says it ended).
``values`` are kept as written: the daemon checks them against its own tasks
(:meth:`JobResult.checked_values`), so a result that does not fit fails its job rather than
the read. Torch-free: every job process imports it.
"""
from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..files import atomic_write_json, create_json_once, read_json
from ..text import plain
from .jobs import check_values
from .resume import CHECKPOINTED


class ResultStatus(str, enum.Enum):
    OK = "ok"        # the wrapper returned values
    ERROR = "error"  # it did not; ``failure`` and ``error`` say why

    __str__ = str.__str__
    __format__ = str.__format__


# Fields copied into the job file as they are (``location`` is made printable, ``duration`` derived).
_TIMING_AND_HOST = ("process_started", "started", "ended", "host")


@dataclasses.dataclass(frozen=True)
class JobResult:
    """What one run of a job produced; see the module docstring for each field."""

    id: int
    status: ResultStatus
    values: Any = None
    failure: str | None = None
    error: str | None = None
    traceback: str = ""
    location: str | None = None
    host: str | None = None
    process_started: float | None = None
    started: float | None = None
    ended: float | None = None
    attempts: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", ResultStatus(self.status))  # "ok" given as a string too
        object.__setattr__(self, "attempts", tuple(self.attempts))

    @property
    def ok(self) -> bool:
        return self.status is ResultStatus.OK

    @property
    def duration(self) -> float | None:
        """Seconds the wrapper ran (ended - started), when both are known, plus those of the
        earlier attempts that stopped at their checkpoint (their records say when they started
        and ended): a resumed job's compute is all of its attempts', not its last one's. An
        attempt the scheduler cut short left no end to count."""
        if self.started is None or self.ended is None:
            return None
        spans = [(_time(attempt.get("started")), _time(attempt.get("ended"))) for attempt in self.attempts[:-1]
                 if attempt.get("outcome") == CHECKPOINTED]
        return self.ended - self.started + sum(end - start for start, end in spans
                                               if start is not None and end is not None)

    def checked_values(self, tasks: Sequence[str]) -> dict[str, float]:
        """The values as ``{task: float}`` for these tasks; raises
        :class:`~spearmint_nn.experiment.jobs.BadValues` when they do not fit."""
        return check_values(self.values, tasks)

    def job_fields(self) -> dict[str, Any]:
        """The fields the result adds to its job's file: timing, host, the error's location
        (made printable) and the duration, each when known."""
        fields = {key: getattr(self, key) for key in _TIMING_AND_HOST if getattr(self, key) is not None}
        if not self.ok and self.location is not None:
            fields["location"] = plain(self.location)
        if self.duration is not None:
            fields["duration"] = self.duration
        if self.attempts:
            fields["attempts"] = [dict(attempt) for attempt in self.attempts]
        return fields

    # -- the file form -----------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The result file's object, with the keys and in the order the runner has always written."""
        head = {"id": self.id, "host": self.host, "process_started": self.process_started,
                "started": self.started, "status": self.status.value}
        if self.ok:
            body = {"values": self.values}
        else:
            body = {"failure": self.failure, "error": self.error, "traceback": self.traceback,
                    "location": self.location}
        tail = {"attempts": [dict(attempt) for attempt in self.attempts]} if self.attempts else {}
        return {**head, **body, "ended": self.ended, **tail}

    @classmethod
    def from_json(cls, obj: Any, job_id: int) -> "JobResult | None":
        """The result of job ``job_id`` in a result file's object, or None when it is not one."""
        if not isinstance(obj, Mapping) or obj.get("id") != job_id:
            return None
        try:
            status = ResultStatus(obj.get("status"))
        except ValueError:
            return None
        ok = status is ResultStatus.OK
        return cls(
            id=job_id, status=status, values=obj.get("values") if ok else None,
            failure=None if ok else str(obj.get("failure") or "exception"),
            error=None if ok else str(obj.get("error") or "no message"),
            traceback="" if ok else _text(obj.get("traceback")) or "",
            location=None if ok else _text(obj.get("location")),
            host=_text(obj.get("host")), process_started=_time(obj.get("process_started")),
            started=_time(obj.get("started")), ended=_time(obj.get("ended")),
            attempts=tuple(a for a in obj.get("attempts") or () if isinstance(a, Mapping))
            if isinstance(obj.get("attempts"), list) else ())

    @classmethod
    def read(cls, path: Path, job_id: int) -> "JobResult | None":
        """The result of job ``job_id`` in its file; None while there is none that reads as one."""
        return cls.from_json(read_json(path), job_id)

    def write(self, path: Path) -> None:
        atomic_write_json(path, self.to_json())

    def write_once(self, path: Path, reserved: Path | None = None) -> bool:
        """Create the file unless a result is there already; whether this call created it.
        ``reserved``: space kept for it (:func:`~spearmint_nn.files.reserve_space`)."""
        return create_json_once(path, self.to_json(), reserved)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(value: Any) -> float | None:
    """A unix time as written (an int stays an int), or None for anything that is not a number."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
