"""Submitting a job: what a driver is asked to run (:func:`job_spec`), the daemon's one retry
policy for failed submissions (:class:`SubmitRetries`; drivers never sleep nor retry), and the
two writes around each driver call (:class:`Submitter`).

A transient error (the scheduler's controller restarting, a full queue) puts the job back to
pending and tries again after 2, 4, 8 ... s, up to 10 min apart, about 17 minutes in all; after
:data:`MAX_SUBMIT_ATTEMPTS` of them the job fails "submit_rejected". A permanent rejection fails
the job at once, and :data:`MAX_SUBMIT_REJECTS` of them in a row stop the daemon, since the
driver would reject every job the same way. A refusal for a limit of the site (a per-user cap,
:class:`~spearmint_nn.drivers.base.SiteLimitError`) is neither: the job goes back to pending
and the daemon holds back (spearmint_nn.daemon.site_limits).
"""
from __future__ import annotations

import dataclasses
import re
import time

from ..drivers.base import Driver, JobSpec, SiteLimitError, SubmitError
from ..errors import DaemonError
from ..experiment.claims import read_claim
from ..experiment.config import ExperimentConfig
from ..experiment.jobs import JobState
from ..experiment.store import Store
from ..runner import command_for
from .reporting import Reporter

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


@dataclasses.dataclass(frozen=True)
class Rejected:
    """A submission the driver refused for good: the job fails "submit_rejected" for ``reason``."""

    reason: str
    error: SubmitError


@dataclasses.dataclass(frozen=True)
class SiteLimited:
    """A submission the scheduler refused for a limit of the site: the job is pending again."""

    message: str


class Submitter:
    """Hands pending jobs to the driver, one at a time.

    The intent goes to disk first: the job moves to running without a scheduler id before the
    driver is asked, and the id is added after, so a daemon killed in between finds the job
    half submitted and :meth:`resume` settles it. A transient failure puts the job back to
    pending for a later retry; as such a failure may have reached the scheduler all the same
    (``sbatch`` timed out after the controller queued the job), the driver is asked for a job
    of that name in the experiment's folder before the job is submitted again.
    """

    def __init__(self, config: ExperimentConfig, driver: Driver, store: Store, reporter: Reporter):
        self.config, self.driver, self.store, self.reporter = config, driver, store, reporter
        self.retries = SubmitRetries(driver.name)
        self.submitted_here: set[int] = set()  # jobs this daemon submitted (a streak counts only those)

    def spec(self, job_id: int) -> JobSpec:
        return job_spec(self.config, self.driver, job_id, self.store.get(job_id).fields.get("attempt", 1))

    def submit(self, job_id: int) -> Rejected | SiteLimited | None:
        """Submit a pending job; what to fail it for when the driver refused it for good, or
        the refusal for a limit of the site."""
        self.store.move(job_id, JobState.RUNNING, driver=self.driver.name, scheduler_id=None, submitting=time.time())
        spec = self.spec(job_id)
        found = self.driver.find_submitted(spec) if self.retries.failed_before(job_id) else None
        if found is not None:
            self.reporter.event("adopted", f"job {job_id}: its failed submission reached the scheduler after all, "
                                f"as {found}", job=job_id)
        try:
            scheduler_id = found or self.driver.submit(spec)
        except SiteLimitError as exc:
            self.store.move(job_id, JobState.PENDING)  # counted nowhere: it waits for the site
            return SiteLimited(str(exc))
        except SubmitError as exc:
            after = self.retries.failed(job_id, exc)
            if after.retry_in is None:
                return Rejected(after.reason, exc)
            self.store.move(job_id, JobState.PENDING)
            self.reporter.event("warning", f"job {job_id}: submission failed ({exc}); retrying in {after.retry_in:g} s")
            return None
        self.retries.succeeded(job_id)
        self.submitted_here.add(job_id)
        self.store.update(job_id, scheduler_id=scheduler_id, submitted=time.time())
        self.reporter.event("submitted", f"job {job_id} as {self.driver.name} {scheduler_id}", job=job_id)
        return None

    def resume(self, job_id: int) -> bool:
        """A job the previous daemon was submitting when it died: the driver may or may not have
        started it. Adopt the process that claimed it or the queued job the driver finds by its
        name and folder; False when neither is there and the job must be submitted again (a
        second runner of a claimed job evaluates nothing: see spearmint_nn.experiment.claims)."""
        claim = read_claim(self.config.paths, job_id)
        scheduler_id = self.driver.adopt_claim(claim) if claim is not None else None
        how = "its claim"
        if scheduler_id is None:  # not started: it may wait in the queue
            scheduler_id, how = self.driver.find_submitted(self.spec(job_id)), "its name in the queue"
        if scheduler_id is None:
            self.reporter.event("warning", f"job {job_id} was being submitted when the previous daemon stopped; "
                                f"submitting it again" + (" (its first run already claimed it)" if claim else ""))
            return False
        self.store.update(job_id, driver=self.driver.name, scheduler_id=scheduler_id, submitted=time.time())
        self.reporter.event("adopted", f"job {job_id} running as {self.driver.name} {scheduler_id} (found by {how})",
                            job=job_id)
        return True
