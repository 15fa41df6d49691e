"""The Driver seam: how the daemon hands a job to something that runs it.

A driver knows one scheduler (local processes, SLURM, Grid Engine, or a plugin's). It never
decides whether a job succeeded: the job's own result file (written by
``python -m spearmint_nn.runner``) is the source of truth, and the scheduler's final state only
explains a job that left no result. One ``poll`` call covers every running job, because
schedulers rate-limit users who run one status command per job. Jobs submitted together go in
one ``submit_many`` call, which a batch driver makes one job array (one ``sbatch``/``qsub``,
each task one job with an id of its own); the default submits them one by one.

Third-party drivers register an entry point in the ``spearmint_nn.drivers`` group::

    [options.entry_points]
    spearmint_nn.drivers =
        pbs = my_package.pbs:PbsDriver
"""
from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from spearmint_nn.errors import ConfigError, did_you_mean
from spearmint_nn.problem.parsers import duration

ENTRY_POINT_GROUP = "spearmint_nn.drivers"


class SchedulerState(str, enum.Enum):
    """A job's state as the scheduler sees it, mapped to the project's vocabulary."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"      # left the scheduler with exit code 0
    FAILED = "failed"            # non-zero exit or scheduler error state
    TIMEOUT = "timeout"          # wall-time limit hit
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"      # stopped for a job of higher priority, and not requeued
    NODE_FAIL = "node_fail"
    OUT_OF_MEMORY = "out_of_memory"
    UNKNOWN = "unknown"          # the scheduler no longer knows this id

    @property
    def finished(self) -> bool:
        return self not in (SchedulerState.QUEUED, SchedulerState.RUNNING)


# Final states in which the scheduler (or the machine) ended the job's processes: cancelled,
# preempted, past its time limit, out of memory, its node lost. A runner killed cannot write its
# result afterwards, so the daemon waits for none (see JobStatus.killed).
KILLED_STATES = frozenset({SchedulerState.CANCELLED, SchedulerState.PREEMPTED, SchedulerState.TIMEOUT,
                           SchedulerState.OUT_OF_MEMORY, SchedulerState.NODE_FAIL})


@dataclass(frozen=True)
class JobStatus:
    """What one poll learned about one job. ``site_limit``: a queued job that waits because of
    a limit of the site (a per-user or QOS cap on running jobs, e.g. SLURM's reason
    ``AssocMaxJobsLimit``), not for free resources: it starts when another job of the user ends."""

    state: SchedulerState
    exit_code: int | None = None
    reason: str = ""
    site_limit: bool = False
    signal: int | None = None    # the signal that killed the job's process, when the scheduler says

    @property
    def killed(self) -> bool:
        """Whether the job's process was killed rather than ending on its own: then no result
        can come after this answer, and the daemon ends the job at once instead of waiting
        ``result_grace_s`` for its file (one written just before the kill is still taken when
        a shared filesystem shows it late: spearmint_nn.daemon.events.late_results)."""
        return self.state in KILLED_STATES or (self.state.finished and self.signal is not None)


@dataclass(frozen=True)
class JobSpec:
    """Everything a driver needs to start one job.

    ``command`` is an argument list (never a shell string); every path is absolute, because the
    job may run on another machine that sees the experiment folder over a shared filesystem.
    """

    job_id: int
    command: list[str]
    workdir: Path
    stdout: Path
    stderr: Path
    script_path: Path            # where a batch driver writes the job script it submits
    name: str                    # scheduler job name (already sanitised)
    wall_time: float | None = None  # seconds
    env: Mapping[str, str] = field(default_factory=dict)


class SchedulerError(RuntimeError):
    """The scheduler did not do what was asked; ``transient`` says whether asking again later may help."""

    def __init__(self, message: str, transient: bool):
        super().__init__(message)
        self.transient = transient


class SubmitError(SchedulerError):
    """Submission failed. A transient one is retried by the daemon, later (never by sleeping)."""


class SiteLimitError(SubmitError):
    """The scheduler refused the job because a limit of the site is reached: a per-user, account
    or QOS cap on the jobs one may have submitted (SLURM's ``MaxSubmitJobs``, Grid Engine's
    ``max_u_jobs``). Neither a failure of the job nor of the scheduler: the same submission is
    accepted once some of the user's jobs have ended. The daemon holds its jobs in flight at what
    the site accepted (spearmint_nn.daemon.policies.site_limits) and never fails a job for it. Transient,
    so that code that does not know this kind retries rather than failing the job at once."""

    def __init__(self, message: str):
        super().__init__(message, transient=True)


class PollError(RuntimeError):
    """The status command failed or timed out; the daemon keeps going and asks again later."""


class Driver(abc.ABC):
    """One scheduler behind the daemon's one interface.

    Subclasses set ``name`` and ``options`` (valid option keys -> one-line description) and
    implement ``submit``, ``poll`` and ``cancel``. ``scheduler_id`` strings are opaque to the
    daemon, which stores them in the job file right after ``submit`` returns. A driver that can
    start many jobs with one scheduler call (job arrays) overrides ``submit_many`` and sets
    ``max_batch``: the daemon then hands it up to that many pending jobs at once.
    """

    name: ClassVar[str]
    # Seconds the daemon waits for a result file after the scheduler says a job ended, before
    # it records the job failed: on a shared filesystem the job's last write can reach the
    # daemon's node late. 30 s is NFS's acdirmin, the shortest time a client trusts its cached
    # view of a folder (lookups of names it did not find included); a file that shows later
    # still replaces the failure (spearmint_nn.daemon.events.late_results explains the caches).
    result_grace_s: ClassVar[float] = 30.0
    options: ClassVar[Mapping[str, str]] = {
        "time-limit": "wall time per job: seconds, or [D-]HH:MM:SS; null: none",
    }
    # Seconds of wall time per job when the config names no time-limit; None: no limit (a batch
    # scheduler then applies its own default).
    default_time_limit: ClassVar[float | None] = None

    def __init__(self, options: Mapping[str, Any], state_dir: Path, warning: float | None = None,
                 max_concurrent: int | None = None):
        self.validate_options(options)
        self.config = dict(options)
        self.state_dir = Path(state_dir)
        limit = options.get("time-limit", self.default_time_limit)  # an explicit null: no limit
        self.time_limit: float | None = None if limit is None else duration("driver.time-limit", limit)
        # Seconds before the time limit at which a job is warned (SIGUSR1 to its runner), from
        # the experiment's "resume" key (spearmint_nn.experiment.resume); None: no warning.
        self.warning = warning
        # The experiment's max-concurrent: a job array is told to run no more tasks at once
        # (None: not told, as for a driver made outside a daemon).
        self.max_concurrent = max_concurrent

    # The most jobs the daemon hands to one submit_many call. 1 (the default): one job at a
    # time, asking has_room before each, as a driver with slots of its own needs.
    max_batch: int = 1

    def describe(self) -> str:
        """The driver's name and the settings a user should see at the start, for the log."""
        return f"{self.name} ({', '.join(self.settings_text())})"

    def settings_text(self) -> list[str]:
        """What :meth:`describe` lists after the name; a driver with settings of its own adds them."""
        return [f"time-limit {'none' if self.time_limit is None else f'{self.time_limit:g} s'}"]

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> None:
        """Raise :class:`ConfigError` for unknown keys (listing the valid ones) or bad values.

        Subclasses that check values extend this and call ``super().validate_options``.
        """
        if options.get("time-limit") is not None:
            duration("driver.time-limit", options["time-limit"])
        for key in options:
            if key == "name":
                continue
            if key not in cls.options:
                valid = ", ".join(sorted(cls.options)) or "(none)"
                raise ConfigError(
                    f"driver.{key}",
                    f"unknown option for the {cls.name} driver{did_you_mean(key, cls.options)}; "
                    f"valid options: {valid}",
                )

    # The environment variable in which the scheduler gives a job its own id (e.g. SLURM_JOB_ID).
    job_id_variable: ClassVar[str | None] = None

    def adopt_claim(self, claim: Mapping[str, Any]) -> str | None:
        """The scheduler id of the process that claimed a job (``claims/<id>.json``, schema in
        :mod:`spearmint_nn.experiment.layout`), or None if this driver cannot tell it from the claim.

        A daemon killed between ``submit`` and recording its answer uses this on restart.
        """
        ids = claim.get("scheduler_ids")
        value = ids.get(self.job_id_variable) if isinstance(ids, dict) and self.job_id_variable else None
        return value if isinstance(value, str) and value else None

    def find_submitted(self, spec: JobSpec) -> str | None:
        """The scheduler id of a queued or running job that an earlier submission of ``spec``
        started although it failed (its answer lost: a timeout after the scheduler had queued
        it), or None. The daemon asks before submitting a job again after a transient failure,
        so that no copy of it runs untracked; a driver whose submissions cannot be ambiguous
        (local processes) finds none."""
        return None

    def has_room(self) -> bool:
        """Whether a job submitted now can start. False keeps the daemon's pending jobs pending
        until a later wake, without a failed submission (a driver with slots of its own, such as
        the local driver's GPU slots); a batch scheduler queues what it cannot start: True."""
        return True

    @abc.abstractmethod
    def submit(self, spec: JobSpec) -> str:
        """Start the job; return the scheduler's id for it. Raise :class:`SubmitError`."""

    def submit_many(self, specs: Sequence[JobSpec]) -> list[str | SubmitError]:
        """Start these jobs; one answer per spec, in order: its scheduler id, or the
        :class:`SubmitError` its submission failed with. A batch driver submits them as one job
        array, whose failure is every job's answer; this default submits them one by one, so a
        driver that has only ``submit`` needs nothing more."""
        answers: list[str | SubmitError] = []
        for spec in specs:
            try:
                answers.append(self.submit(spec))
            except SubmitError as exc:
                answers.append(exc)
        return answers

    @abc.abstractmethod
    def poll(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        """Status of all given jobs with one scheduler query. Raise :class:`PollError`."""

    @abc.abstractmethod
    def cancel(self, scheduler_ids: Sequence[str]) -> None:
        """Ask the scheduler to stop these jobs (no error for jobs already gone)."""


def available_drivers() -> dict[str, Any]:
    """Entry points of all installed drivers, by name."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def driver_class(name: str) -> type[Driver]:
    """Load the driver class registered under ``name``; ConfigError ``driver.name`` if none."""
    found = available_drivers()
    if name not in found:
        raise ConfigError(
            "driver.name",
            f"no driver named {name!r}{did_you_mean(name, found)}; installed: {', '.join(sorted(found))}",
        )
    return found[name].load()
