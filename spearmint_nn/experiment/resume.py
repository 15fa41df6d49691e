"""Jobs that stop before their time limit to be resumed from a checkpoint (config key ``resume``).

``"resume": {"warning": 120, "max-total-time": "40:00:00"}`` opts an experiment in: the driver
asks the scheduler for a warning ``warning`` seconds before each job's time limit (SLURM
``--signal``, Grid Engine's soft limit ``s_rt``, the local driver's own SIGUSR1), the runner
passes it to the wrapper (:mod:`spearmint_nn.job`), and a wrapper that saved a checkpoint and
asked to be resumed ends its attempt without a result. ``max-total-time`` bounds the wall time
of all attempts of one job together (default 10 times the time limit). Without the key no
warning is asked for and a wrapper that asks to be resumed fails, because a wrapper that
cannot resume must not be restarted from scratch in a loop.

An attempt that asked to be resumed leaves ``attempts/<id>-<n>.json``, a
:class:`CheckpointedAttempt`: an entry of the ``attempts`` of the result file
(:func:`spearmint_nn.experiment.claims.attempt_record`) with outcome "checkpointed" and
``warned``: the unix time the warning came, or null. The runner writes it and the runner of a
later attempt lists it in the job's result file; the daemon reads it to submit the next attempt
(as the result file is one typed record, :class:`~spearmint_nn.experiment.results.JobResult`,
the runner and the daemon share). Torch-free.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..problem.parsers import duration
from ..errors import ConfigError
from ..files import atomic_write_json, read_json
from .layout import ExperimentPaths

DEFAULT_WARNING_S = 120.0
# Without max-total-time, the attempts of one job may take this many time limits in all.
DEFAULT_TOTAL_LIMITS = 10
CHECKPOINTED = "checkpointed"  # the outcome of an attempt that asked to be resumed
RESUME_KEYS = ("warning", "max-total-time")


@dataclass(frozen=True)
class ResumeSettings:
    """The ``resume`` key: seconds of warning before the time limit, and the wall time all
    attempts of one job may take together (None only where the time limit is not known: a
    config read without its driver, as the runner reads it)."""

    warning: float
    max_total_time: float | None


def parse_resume(path: str, value: Any) -> ResumeSettings | None:
    """The ``resume`` key's value (null or absent: None); ConfigError naming the key."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be an object such as {{\"warning\": 120, \"max-total-time\": \"40:00:00\"}} "
                          f"(got {value!r})")
    unknown = [key for key in value if key not in RESUME_KEYS]
    if unknown:
        raise ConfigError(f"{path}.{unknown[0]}", f"unknown key; known: {', '.join(RESUME_KEYS)}")
    warning = value.get("warning", DEFAULT_WARNING_S)
    if isinstance(warning, bool) or not isinstance(warning, (int, float)) or not 0 < warning < float("inf"):
        raise ConfigError(f"{path}.warning", f"must be a number of seconds > 0 (got {warning!r})")
    total = value.get("max-total-time")
    return ResumeSettings(float(warning), None if total is None else duration(f"{path}.max-total-time", total))


def with_time_limit(path: str, resume: ResumeSettings, time_limit: float | None) -> ResumeSettings:
    """``resume`` checked against the driver's time limit, with max-total-time filled in."""
    if time_limit is None:
        raise ConfigError(path, "needs a time limit to warn before: set driver.time-limit")
    if resume.warning >= time_limit:
        raise ConfigError(f"{path}.warning", f"must be smaller than driver.time-limit ({resume.warning:g} s "
                          f">= {time_limit:g} s): the warning would come before the job starts")
    total = resume.max_total_time if resume.max_total_time is not None else DEFAULT_TOTAL_LIMITS * time_limit
    if total < time_limit:
        raise ConfigError(f"{path}.max-total-time", f"must be at least driver.time-limit ({total:g} s < "
                          f"{time_limit:g} s)")
    return ResumeSettings(resume.warning, total)


@dataclass(frozen=True)
class CheckpointedAttempt:
    """An attempt of a job that ended at its checkpoint to be resumed (see the module docstring):
    its number, where and when it ran (``started`` when its runner claimed the job, ``ended``),
    the scheduler ids and restarts its claim saw, and when the warning came (None: the wrapper
    asked without one)."""

    attempt: int
    host: str | None
    started: float | None
    ended: float | None
    scheduler_ids: Mapping[str, Any]
    restarts: Mapping[str, Any]
    warned: float | None

    @classmethod
    def of_claim(cls, entry: Mapping[str, Any], warned: float | None) -> "CheckpointedAttempt":
        """From the attempt's entry as :func:`~spearmint_nn.experiment.claims.attempt_record` makes it."""
        return cls(int(entry.get("attempt") or 1), entry.get("host"), entry.get("started"), entry.get("ended"),
                   dict(entry.get("scheduler_ids") or {}), dict(entry.get("restarts") or {}), warned)

    def entry(self) -> dict[str, Any]:
        """The attempt as an entry of a job's ``attempts`` (schema in spearmint_nn.experiment.layout)."""
        return {"attempt": self.attempt, "host": self.host, "started": self.started, "ended": self.ended,
                "outcome": CHECKPOINTED, "scheduler_ids": dict(self.scheduler_ids), "restarts": dict(self.restarts),
                "warned": self.warned}

    def write(self, paths: ExperimentPaths, job_id: int) -> None:
        """Write ``attempts/<id>-<n>.json`` (atomically)."""
        paths.attempts.mkdir(parents=True, exist_ok=True)
        atomic_write_json(paths.attempt_file(job_id, self.attempt), self.entry())

    @classmethod
    def read(cls, paths: ExperimentPaths, job_id: int, attempt: int) -> "CheckpointedAttempt | None":
        """The record of the job's attempt ``attempt`` if it ended to be resumed, else None."""
        record = read_json(paths.attempt_file(job_id, attempt))
        if not isinstance(record, dict) or record.get("outcome") != CHECKPOINTED:
            return None
        return cls.of_claim(record, record.get("warned"))
