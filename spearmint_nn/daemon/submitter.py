"""Submitting a job: what a driver is asked to run (:func:`job_spec`), and the daemon's one
retry policy for failed submissions (:class:`SubmitRetries`; drivers never sleep nor retry).

A transient error (the scheduler's controller restarting, a full queue) puts the job back to
pending and tries again after 2, 4, 8 ... s, up to 10 min apart, about 17 minutes in all; after
:data:`MAX_SUBMIT_ATTEMPTS` of them the job fails "submit_rejected". A permanent rejection fails
the job at once, and :data:`MAX_SUBMIT_REJECTS` of them in a row stop the daemon, since the
driver would reject every job the same way.
"""
from __future__ import annotations

import dataclasses
import re
import time

from ..drivers.base import Driver, JobSpec, SubmitError
from ..errors import DaemonError
from ..experiment.config import ExperimentConfig
from ..runner import command_for

SUBMIT_RETRY_S = 2.0           # wait before the first resubmission after a transient submit error
SUBMIT_RETRY_MAX_S = 600.0     # the wait doubles per failed attempt up to this
MAX_SUBMIT_ATTEMPTS = 10       # transient submit failures of one job before it fails
MAX_SUBMIT_REJECTS = 3         # consecutive permanent rejections before the daemon gives up


def job_spec(config: ExperimentConfig, driver: Driver, job_id: int, attempt: int = 1) -> JobSpec:
    """What the driver runs for one job (submitted for its attempt ``attempt``: see
    spearmint_nn.daemon.reattempts): the runner, with the job's output files and a
    scheduler-safe name."""
    paths = config.paths
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{config.name}-{job_id}")[:64]
    return JobSpec(job_id=job_id, command=command_for(paths.experiment, job_id, attempt), workdir=paths.experiment,
                   stdout=paths.stdout_file(job_id), stderr=paths.stderr_file(job_id),
                   script_path=paths.script_file(job_id), name=name, wall_time=driver.time_limit)


@dataclasses.dataclass(frozen=True)
class AfterSubmitError:
    """What to do with a job whose submission failed: try again in ``retry_in`` seconds, or
    (``retry_in`` None) fail it "submit_rejected" for ``reason``."""

    retry_in: float | None
    reason: str


class SubmitRetries:
    """Transient failures and back-off per job, and the streak of permanent rejections."""

    def __init__(self, driver_name: str):
        self.driver_name = driver_name
        self._retry_at: dict[int, float] = {}  # job id -> time.monotonic() of the next attempt
        self._failures: dict[int, int] = {}    # job id -> transient failures so far
        self._rejects_in_a_row = 0

    def waiting(self, job_id: int, now: float) -> bool:
        """Whether the job is still in its back-off at ``now`` (``time.monotonic()``)."""
        return self._retry_at.get(job_id, 0.0) > now

    def failed_before(self, job_id: int) -> bool:
        """Whether a submission of the job failed transiently: it may have reached the scheduler
        all the same (a timeout after the scheduler had queued it)."""
        return job_id in self._failures

    def succeeded(self, job_id: int) -> None:
        self._rejects_in_a_row = 0
        self._forget(job_id)

    def failed(self, job_id: int, exc: SubmitError) -> AfterSubmitError:
        """Count a failed submission and say what to do with the job."""
        failures = self._failures[job_id] = self._failures.get(job_id, 0) + 1
        if exc.transient and failures < MAX_SUBMIT_ATTEMPTS:
            delay = min(SUBMIT_RETRY_MAX_S, SUBMIT_RETRY_S * 2 ** (failures - 1))
            self._retry_at[job_id] = time.monotonic() + delay
            return AfterSubmitError(delay, str(exc))
        self._forget(job_id)
        if exc.transient:
            return AfterSubmitError(None, f"submission failed {failures} times; last: {exc}")
        self._rejects_in_a_row += 1
        return AfterSubmitError(None, str(exc))

    def check_rejects(self, exc: SubmitError) -> None:
        """Raise :class:`DaemonError` once the driver has rejected MAX_SUBMIT_REJECTS jobs in a
        row (called after the job that ``exc`` rejected is recorded as failed)."""
        if self._rejects_in_a_row >= MAX_SUBMIT_REJECTS:
            raise DaemonError(f"the {self.driver_name} driver rejected {self._rejects_in_a_row} jobs in a row; "
                              f"last: {exc}") from None

    def _forget(self, job_id: int) -> None:
        self._retry_at.pop(job_id, None)
        self._failures.pop(job_id, None)
