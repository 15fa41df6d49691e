"""The scheduler's view of the running jobs: one driver poll for all of them, and what to make
of a job that the scheduler says has ended while its result file is not (yet) to be seen.

A job whose result file is there is recorded from it, whatever the scheduler says. Without one,
an attempt that stopped at its checkpoint, or that the cluster dropped (preempted, its node
lost), asks for another attempt (:func:`~spearmint_nn.daemon.policies.reattempts.interruption`);
a job the scheduler killed (cancelled, preempted, past its time limit, a signal: see
:attr:`~spearmint_nn.drivers.base.JobStatus.killed`) fails at once, since its slot would wait for
nothing; any other end waits ``result-grace`` seconds for the file (a shared filesystem can show
it late), then fails the job for what the scheduler said. A result that shows up after the job
failed still replaces the failure (:mod:`~spearmint_nn.daemon.events.late_results`).
:class:`SchedulerWatch` keeps when it first saw each such job ended.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from ...drivers.base import Driver, JobStatus, SchedulerState
from ...experiment.jobs import Job
from ...experiment.layout import ExperimentPaths
from ..policies import reattempts
from ..scheduler_calls import SchedulerCalls


@dataclass(frozen=True)
class EndedWithoutResult:
    """A job the scheduler said ended, with no result file after the grace: ``outcome`` the way
    its attempt was interrupted ("checkpointed", "preempted", "node_fail"), or None for an end
    that fails it; ``reason`` in the scheduler's words; ``ended`` the unix time it was first
    seen ended; ``waited`` the grace waited for its result (None: the job was killed)."""

    outcome: str | None
    reason: str
    ended: float
    waited: float | None = None  # the grace waited for its result file, for a job that ended on its own
    # (completed, or failed with an exit code)

    @property
    def missing_result(self) -> str:
        """Why the job fails when no result file is there: after a wait for it, the missing file
        is what went wrong, not the scheduler's words (``completed``)."""
        if self.waited is None:
            return self.reason
        within = f" within result-grace ({self.waited:g} s)" if self.waited else ""
        return f"no result file{within} after the job ended ({self.reason})"


class SchedulerWatch:
    """See the module docstring. :meth:`poll` raises the driver's
    :class:`~spearmint_nn.drivers.base.PollError`; the loop then tries again at its next poll."""

    def __init__(self, driver: Driver, paths: ExperimentPaths, calls: SchedulerCalls):
        self.driver, self.paths = driver, paths
        self.calls = calls  # the poll is made off the loop's path
        self._ended_seen: dict[int, float] = {}  # job id -> when the driver first said "ended" (monotonic)

    def poll(self, running: Sequence[Job]) -> dict[int, JobStatus]:
        """The driver's status of each of ``running`` that this daemon's driver submitted, by job id."""
        by_sid = {job.scheduler_id: job.id for job in running
                  if job.driver == self.driver.name and job.scheduler_id is not None}
        if not by_sid:
            return {}
        statuses = self.calls.run(lambda: self.driver.poll(list(by_sid)))
        return {by_sid[sid]: status for sid, status in statuses.items() if sid in by_sid}

    def without_result(self, job_id: int, status: JobStatus) -> EndedWithoutResult | None:
        """What to make of a job that ``status`` says ended while it has no readable result:
        None while its result may still come within the driver's grace."""
        outcome = reattempts.interruption(self.paths, job_id, status)
        first_seen = self._ended_seen.setdefault(job_id, time.monotonic())
        # Only a job that ended on its own may have written a result that this machine sees
        # later; a killed one, or an attempt that said how it ended, leaves none to wait for.
        waits = outcome is None and not status.killed
        if waits and time.monotonic() - first_seen < self.driver.result_grace_s:
            return None
        self._ended_seen.pop(job_id, None)
        said = status.reason or f"{self.driver.name}: {status.state.value}" + (
            f", exit code {status.exit_code}" if status.exit_code is not None else "")
        # (a job the scheduler lost is not known to have ended: its words say what went wrong)
        ended_itself = waits and status.state in (SchedulerState.COMPLETED, SchedulerState.FAILED)
        return EndedWithoutResult(outcome, said, time.time() - (time.monotonic() - first_seen),
                                  self.driver.result_grace_s if ended_itself else None)

    def forget(self, job_id: int) -> None:
        """The job's result was recorded."""
        self._ended_seen.pop(job_id, None)

    @property
    def awaiting_results(self) -> bool:
        """Whether some job has ended and its result is awaited within the grace."""
        return bool(self._ended_seen)
