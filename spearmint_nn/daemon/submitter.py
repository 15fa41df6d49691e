"""Submitting a job: what a driver is asked to run (:func:`job_spec`), the daemon's one retry
policy for failed submissions (:class:`SubmitRetries`; drivers never sleep nor retry), and the
two writes around each driver call (:class:`Submitter`).

A transient error (the scheduler's controller restarting, a full queue) puts the job back to
pending and tries again after 2, 4, 8 ... s, up to 10 min apart, about 17 minutes in all; after
:data:`MAX_SUBMIT_ATTEMPTS` of them the job fails "submit_rejected". A permanent rejection fails
the job at once, and :data:`MAX_SUBMIT_REJECTS` of them in a row stop the daemon, since the
driver would reject every job the same way. A refusal for a limit of the site (a per-user cap,
:class:`~spearmint_nn.drivers.base.SiteLimitError`) is neither: the job goes back to pending
and the daemon holds back (spearmint_nn.daemon.policies.site_limits).
"""
from __future__ import annotations

import dataclasses
import re
import time
from typing import Sequence

from ..drivers.base import Driver, JobSpec, SiteLimitError, SubmitError
from ..errors import DaemonError
from ..experiment.claims import read_claim
from ..experiment.config import ExperimentConfig
from ..experiment.jobs import JobState
from ..experiment.store import Store
from ..runner import command_for
from .event_log import EventLog
from .scheduler_calls import SchedulerCalls

SUBMIT_RETRY_S = 2.0           # wait before the first resubmission after a transient submit error
SUBMIT_RETRY_MAX_S = 600.0     # the wait doubles per failed attempt up to this
MAX_SUBMIT_ATTEMPTS = 10       # transient submit failures of one job before it fails
MAX_SUBMIT_REJECTS = 3         # consecutive permanent rejections before the daemon gives up


def job_spec(config: ExperimentConfig, driver: Driver, job_id: int, attempt: int = 1) -> JobSpec:
    """What the driver runs for one job (submitted for its attempt ``attempt``: see
    spearmint_nn.daemon.policies.reattempts): the runner, with the job's output files and a
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
    """A submission the scheduler refused for a limit of the site: its jobs are pending again."""

    job_ids: tuple[int, ...]
    message: str


@dataclasses.dataclass(frozen=True)
class SubmitOutcome:
    """What one :meth:`Submitter.submit` came to: the jobs that now have a scheduler id, those
    the driver refused for good (with what to fail each for), and a refusal for a site's limit."""

    accepted: tuple[int, ...] = ()
    rejected: tuple[tuple[int, Rejected], ...] = ()
    site_limited: SiteLimited | None = None


class Submitter:
    """Hands pending jobs to the driver: several at once (one ``submit_many`` call, a job array
    for a batch driver) when the driver takes them so.

    The intent goes to disk first: the jobs move to running without a scheduler id before the
    driver is asked, and each id is added after, so a daemon killed in between finds them half
    submitted and :meth:`adopt` settles each (a task of an array too: its claim names the
    array and the task, and the driver finds a task that has not started by the array's name).
    A transient failure puts the jobs back to pending for a later retry; as such a failure may
    have reached the scheduler all the same (``sbatch`` timed out after the controller queued
    the job), the driver is asked for a job of that name in the experiment's folder before the
    job is submitted again.
    """

    def __init__(self, config: ExperimentConfig, driver: Driver, store: Store, log: EventLog, calls: SchedulerCalls):
        self.config, self.driver, self.store, self.log = config, driver, store, log
        self.calls = calls  # the driver's submissions are made off the loop's path
        self.retries = SubmitRetries(driver.name)
        self.submitted_here: set[int] = set()  # jobs this daemon submitted (a streak counts only those)

    def spec(self, job_id: int) -> JobSpec:
        return job_spec(self.config, self.driver, job_id, self.store.get(job_id).fields.get("attempt", 1))

    def submit(self, job_ids: Sequence[int]) -> SubmitOutcome:
        """Submit pending jobs together (a job array refused is each of its jobs refused)."""
        for job_id in job_ids:
            self.store.move(job_id, JobState.RUNNING, driver=self.driver.name, scheduler_id=None, submitting=time.time())
        specs = [self.spec(job_id) for job_id in job_ids]
        answers, found, submitted = self.calls.run(lambda: self._ask_driver(specs))
        for job_id in found:
            self.log.event("adopted", f"job {job_id}: its failed submission reached the scheduler after all, "
                                f"as {answers[job_id]}", job=job_id)
        accepted: list[int] = []
        rejected: list[tuple[int, Rejected]] = []
        limited: list[tuple[int, str]] = []
        for job_id in job_ids:
            answer = answers[job_id]
            if isinstance(answer, SiteLimitError):
                self.store.move(job_id, JobState.PENDING)  # counted nowhere: it waits for the site
                limited.append((job_id, str(answer)))
            elif isinstance(answer, SubmitError):
                after = self.retries.failed(job_id, answer)
                if after.retry_in is None:
                    rejected.append((job_id, Rejected(after.reason, answer)))
                    continue
                self.store.move(job_id, JobState.PENDING)
                self.log.event("warning", f"job {job_id}: submission failed ({answer}); "
                                    f"retrying in {after.retry_in:g} s")
            else:
                accepted.append(job_id)
                self.retries.succeeded(job_id)
                self.submitted_here.add(job_id)
                self.store.update(job_id, scheduler_id=answer, submitted=time.time())
                self.log.event("submitted", f"job {job_id} as {self.driver.name} {answer}", job=job_id)
        if len(submitted) > 1 and accepted:
            self.log.event("submitted", f"jobs {', '.join(map(str, submitted))} in one "
                                f"submission to the {self.driver.name} driver (a job array)")
        site_limited = SiteLimited(tuple(job for job, _ in limited), limited[0][1]) if limited else None
        return SubmitOutcome(tuple(accepted), tuple(rejected), site_limited)

    def _ask_driver(self, specs: Sequence[JobSpec]) -> tuple[dict[int, str | SubmitError], list[int], list[int]]:
        """The driver's answer for each job (made in the scheduler thread: it may hang), the jobs
        whose failed submission it found in its queue after all, and those it was asked to
        submit (together: a job array)."""
        answers: dict[int, str | SubmitError] = {}
        found, asked = [], []
        for spec in specs:
            queued = self.driver.find_submitted(spec) if self.retries.failed_before(spec.job_id) else None
            if queued is None:
                asked.append(spec)
            else:
                answers[spec.job_id] = queued
                found.append(spec.job_id)
        if asked:
            answers.update(zip((spec.job_id for spec in asked), self.driver.submit_many(asked)))
        return answers, found, [spec.job_id for spec in asked]

    def check_rejects(self, rejected: Sequence[tuple[int, Rejected]]) -> None:
        """Stop the daemon (:class:`DaemonError`) once the driver has rejected too many jobs in a
        row; called after the jobs :meth:`submit` returned are recorded as failed."""
        if rejected:
            self.retries.check_rejects(rejected[-1][1].error)

    def adopt(self, job_id: int) -> bool:
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
            self.log.event("warning", f"job {job_id} was being submitted when the previous daemon stopped; "
                                f"submitting it again" + (" (its first run already claimed it)" if claim else ""))
            return False
        self.store.update(job_id, driver=self.driver.name, scheduler_id=scheduler_id, submitted=time.time())
        self.log.event("adopted", f"job {job_id} running as {self.driver.name} {scheduler_id} (found by {how})",
                            job=job_id)
        return True
