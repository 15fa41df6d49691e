"""Failed jobs as the user and the daemon see them: grouped by what went wrong, and the rule
that stops a daemon whose jobs keep failing the same way.

Two failed jobs failed *the same way* when they share a :func:`signature`: the failure kind,
the reason with the numbers that name a point or a job masked, and the file and line the
runner found in the traceback. Reports group failures by it (:func:`group_failures`); the
daemon counts runs of it (:class:`FailureStreak`).

Why a streak stops the daemon: a wrapper that cannot run (a syntax error, a missing import, no
``main``) or a cluster that cannot run anything (a full disk) fails every job whatever the
point. Submitting on spends the budget on nothing, or never ends when there is no budget, as in
Spearmint's configs. A point-dependent failure (an objective that crashes in one region)
rarely repeats many times in a row, because the model learns to avoid it.

Before any job has succeeded, the same failure of the wrapper's code at the same place in
:data:`WRAPPER_FAILURES_TO_STOP` jobs in a row is taken for a bug in the wrapper (a renamed
parameter's ``KeyError``), not a property of the points: the daemon stops and records those jobs
as "bad_wrapper", keeping the kind they had in ``reclassified_from``, so they neither count
against the budget nor teach the model, after the fix either. Until then such failures are held
back (:meth:`~spearmint_nn.experiment.jobs.Job.held_back`); once a job succeeds they are ordinary
failures of their points.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..text import CONTROL_IN_LINES
from .jobs import Job, JobState

# What a failed job's record keeps of each of its output files (stdout_tail, stderr_tail).
OUTPUT_TAIL_LINES = 20
OUTPUT_TAIL_BYTES = 4000

# Failure kinds the runner records when the wrapper itself is broken: nothing about the point
# can cause them, so a few in a row already say every job will fail.
WRAPPER_FAILURES = frozenset({"bad_wrapper", "bad_config", "bad_params"})
# Identical wrapper failures in a row that stop the daemon; as many refused writes of wrappers
# ("storage": a full disk, a quota, a read-only folder) stop it too, since they fail every job.
WRAPPER_FAILURES_TO_STOP = 3
STOP_AS_SOON = WRAPPER_FAILURES | {"storage"}
# "nan" is the wrapper's own way to say "no value at this point" (Spearmint's convention for a
# crashed or infeasible point), so a run of them is ordinary while a small feasible region is
# searched; it stops the daemon only after this many times the configured streak.
NAN_STREAK_FACTOR = 5
# Kinds that never take part in a streak: the user asked for them.
USER_FAILURES = frozenset({"cancelled"})
# Decimal numbers and integers of four or more digits: parameter values, job and scheduler ids.
# Short integers (exit codes, signal numbers) stay, since they tell failures apart.
_POINT_NUMBERS = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d{4,})(?:[eE][-+]?\d+)?")


def signature(job: Job) -> tuple[str, str, str]:
    """(kind, reason with point and id numbers masked as ``#``, location or "") of a failed job."""
    reason = _POINT_NUMBERS.sub("#", str(job.reason or ""))
    return str(job.failure or "unknown"), reason, str(job.location or "")


def signature_as_run(job: Job) -> tuple[str, str, str]:
    """:func:`signature` with the kind the job's own run recorded, before the daemon recorded it
    as a wrapper bug (``reclassified_from``): what the next failures of that bug look like."""
    kind, reason, location = signature(job)
    return str(job.fields.get("reclassified_from") or kind), reason, location


def read_output_tail(path: Path) -> str:
    """The last lines of a job's stdout or stderr file, as one plain string (empty if none):
    what the daemon records with a failure as ``stdout_tail`` and ``stderr_tail``."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - OUTPUT_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return ""
    lines = data.decode("utf-8", errors="replace").splitlines()[-OUTPUT_TAIL_LINES:]
    return "\n".join(CONTROL_IN_LINES.sub("?", line) for line in lines)


def output_tail(job: Job) -> str:
    """The last lines of the job's output recorded with the failure: stdout's, then stderr's.

    Both, because a wrapper that caught its own exception and returned NaN often printed the
    traceback to stdout, while stderr ends with the runner's own line about the failure.
    """
    return "\n".join(str(job.fields[key]) for key in ("stdout_tail", "stderr_tail") if job.fields.get(key))


@dataclass
class FailureGroup:
    """Failed jobs that share one :func:`signature`.

    ``reason`` and ``location`` are the last job's; ``output_tail`` the last lines of the last
    job's output that has any (a wrapper that caught its own exception printed it there).
    """

    kind: str
    reason: str
    location: str
    count: int
    first_job: int
    last_job: int
    output_tail: str
    # Set by FailureStreak: failures held back before any job succeeded, a bug of the wrapper.
    wrapper_bug: bool = False
    # Every job of the group, in the order counted: messages name them exactly (jobs_text), as
    # "jobs 1..13" for two jobs 1 and 13 misled.
    jobs: list[int] = field(default_factory=list)

    def add(self, job: Job) -> None:
        """Count one more failed job of this signature (later than those counted)."""
        self.count += 1
        self.jobs.append(job.id)
        self.last_job = job.id
        self.reason, self.location = str(job.reason or ""), str(job.location or "")
        self.output_tail = output_tail(job) or self.output_tail

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "location": self.location or None, "count": self.count,
                "first_job": self.first_job, "last_job": self.last_job, "jobs": list(self.jobs),
                "output_tail": self.output_tail}


def group_failures(jobs: Iterable[Job]) -> list[FailureGroup]:
    """Failed jobs grouped by :func:`signature`, the largest group first (ties: the most recent)."""
    groups: dict[tuple[str, str, str], FailureGroup] = {}
    for job in sorted((j for j in jobs if j.state is JobState.FAILED), key=lambda j: j.id):
        key = signature(job)
        if key not in groups:
            groups[key] = FailureGroup(key[0], "", "", 0, job.id, job.id, "")
        groups[key].add(job)
    return sorted(groups.values(), key=lambda g: (-g.count, -g.last_job))


class FailureStreak:
    """Counts finished jobs, in the order they finish, that failed the same way in a row.

    :meth:`record` is told each finished job of the daemon's own run and returns the group of
    the streak once it must stop the daemon, else None. A completed job or a different failure
    ends a streak. The limits:

    - a wrapper failure (:data:`WRAPPER_FAILURES`), a write the disk refused, or a failure held
      back because no job has succeeded yet (the group's ``wrapper_bug`` is then set):
      :data:`WRAPPER_FAILURES_TO_STOP` in a row;
    - "nan": ``NAN_STREAK_FACTOR * limit`` in a row;
    - any other kind: ``limit`` in a row (the config's ``stop-after-identical-failures``).

    Separately, ``limit`` failures in a row that are not shown to the model (``ignored`` or
    held back, of any signatures) also stop it: they do not count toward ``max-finished-jobs``, so without this
    no budget would ever end such a run.
    """

    def __init__(self, limit: int, ignored: Iterable[str]):
        self.limit = limit
        self.ignored = frozenset(ignored)
        self._key: tuple[str, str, str] | None = None
        self._group: FailureGroup | None = None
        self._ignored_in_a_row: list[Job] = []

    def record(self, job: Job, held_back: bool = False) -> FailureGroup | None:
        """``held_back``: the daemon keeps the failure from the budget and the model for now."""
        if job.state is JobState.COMPLETE:
            self._key, self._group, self._ignored_in_a_row = None, None, []
            return None
        kind = str(job.failure or "unknown")
        if kind in USER_FAILURES:
            return None
        key = signature(job)
        if key != self._key or self._group is None:
            self._key = key
            self._group = FailureGroup(kind, "", "", 0, job.id, job.id, "")
        group = self._group
        group.add(job)
        if held_back and group.count >= min(WRAPPER_FAILURES_TO_STOP, self.limit):
            group.wrapper_bug = True
            return group
        if group.count >= self._limit_for(kind):
            return group
        if kind in self.ignored or held_back:
            self._ignored_in_a_row.append(job)
            if len(self._ignored_in_a_row) >= self.limit:
                return group_failures(self._ignored_in_a_row)[0]
        else:
            self._ignored_in_a_row = []
        return None

    def _limit_for(self, kind: str) -> int:
        if kind in STOP_AS_SOON:
            return min(WRAPPER_FAILURES_TO_STOP, self.limit)
        if kind == "nan":
            return NAN_STREAK_FACTOR * self.limit
        return self.limit
