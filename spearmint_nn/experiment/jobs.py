"""A job as a typed record, its states, and the rules about jobs that everyone shares.

A job is stored as one JSON object (schema in :mod:`spearmint_nn.experiment.layout`); in memory
it is a frozen :class:`Job` built by :meth:`Job.from_json`, whose :meth:`Job.to_json` gives back
the same object. The store changes a job only through :meth:`Job.moved_to` (a new state, which
must be a legal :class:`JobState` transition) and :meth:`Job.with_fields`.

The rules here, in one room, are those that the daemon, the CLI and the reports must agree on:
which jobs count toward ``max-finished-jobs`` (:meth:`Job.counts_toward_budget`), which are
feasible (:meth:`Job.is_feasible`), which is the best (:func:`best_job`), the failure kinds
(:data:`FAILURE_KINDS`) and the values a wrapper may return (:func:`check_values`). The module
imports neither torch nor numpy's heavy friends: every job process reads it.
"""
from __future__ import annotations

import dataclasses
import enum
import math
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from ..drivers.base import SchedulerState
from ..problem.settings import parse_direction
from ..values import describe, one_number, wanted


class JobState(str, enum.Enum):
    """Where a job is; also the name of its folder under ``jobs/``."""

    PENDING = "pending"    # proposed or dropped in by a user, not yet submitted
    RUNNING = "running"    # handed to the driver (or being handed: see layout, "Submission")
    COMPLETE = "complete"  # its values are recorded
    FAILED = "failed"      # it ended without values; ``failure`` and ``reason`` say why
    STOPPED = "stopped"    # early stopping cancelled it as it ran (``stopped_reason``): not a failure

    # Printed and formatted as the plain name (the folder's), as enum.StrEnum does from 3.11.
    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def finished(self) -> bool:
        return self in FINISHED_STATES

    @property
    def rank(self) -> int:
        """Order of states in a job's life: a job found in two folders after a crash mid-move
        keeps the later one."""
        return 2 if self.finished else (1 if self is JobState.RUNNING else 0)

    def can_become(self, new: "JobState") -> bool:
        """Whether a job may move from this state to ``new``: a finished job never changes state.
        (A running job goes back to pending to retry a failed submission, and is made running
        again when a restarted daemon submits anew a job it found half submitted. The one
        exception, a failed job whose result file came late, depends on the job, not its state:
        :meth:`Job.moved_to`.)"""
        return not self.finished


FINAL_STATES = (JobState.COMPLETE, JobState.FAILED, JobState.STOPPED)
# (the enum's own members cannot be listed inside its body)
FINISHED_STATES = frozenset(FINAL_STATES)

# Every failure kind a job can end with (spearmint_nn.runner records the first four and the
# bad_* kinds; the daemon the others), and those that by default say nothing about the point
# itself: they are not shown to the model as an infeasible observation and not counted against
# max-finished-jobs. A job "lost" by the scheduler is, by default, about the point (it may have
# crashed its node or run out of memory), as the constraint model expects.
FAILURE_KINDS = ("exception", "nan", "bad_result", "exit_code", "timeout", "oom", "no_result", "lost",
                 "cancelled", "node_fail", "interrupted", "submit_rejected", "bad_params", "bad_config", "bad_wrapper",
                 "storage")
DEFAULT_IGNORED_FAILURES = ("submit_rejected", "cancelled", "node_fail", "interrupted", "bad_params", "bad_config",
                            "bad_wrapper", "storage")
# Failure kinds of a wrapper that ran and raised, exited or returned no number. Until a job of
# the experiment has succeeded, such a failure may be a bug that fails every point as well as a
# property of its point: it is held back (:meth:`Job.held_back`) until a job succeeds, when it
# counts as any failure does, or until the daemon finds it repeated and records it as
# "bad_wrapper" (see spearmint_nn.experiment.failures).
HELD_UNTIL_SUCCESS = ("exception", "exit_code", "bad_result")
# The failure kind recorded when a job left the scheduler without writing a result file.
SCHEDULER_FAILURES = {
    SchedulerState.TIMEOUT: "timeout",
    SchedulerState.CANCELLED: "cancelled",
    SchedulerState.OUT_OF_MEMORY: "oom",
    SchedulerState.NODE_FAIL: "node_fail",
    SchedulerState.PREEMPTED: "interrupted",
    SchedulerState.FAILED: "exit_code",
    SchedulerState.COMPLETED: "no_result",
    SchedulerState.UNKNOWN: "lost",
}


# The field of a job the daemon failed because the scheduler said it had ended while its result
# file was not to be seen (one of SCHEDULER_FAILURES): the unix time the scheduler first said so.
# A shared filesystem may show that file minutes later; when it appears, the result decides the
# job after all (see Job.awaits_result and spearmint_nn.daemon.events.late_results).
AWAITING_RESULT = "ended_without_result"
# What such a job keeps of the failure its late result replaced: {"failure", "reason", "ended"}.
LATE_RESULT = "late_result"
# Fields of a failure, dropped when a late result replaces it.
_FAILURE_FIELDS = ("failure", "reason", "stderr_tail", "stdout_tail", "location", "reclassified_from", AWAITING_RESULT)


class IllegalTransition(RuntimeError):
    """A state change that a job's life does not allow (e.g. a complete job made running)."""


@dataclasses.dataclass(frozen=True)
class Job:
    """One job: its id, state and params, and every other field of its file in ``fields``.

    ``params`` are in JSON form (lists; see :meth:`spearmint_nn.problem.space.Space.to_json`),
    except for a job failed as ``bad_params``, which keeps what the user wrote. The typed
    properties below read the fields that :mod:`spearmint_nn.experiment.layout` documents; a
    field a job does not have reads as None.
    """

    id: int
    state: JobState
    params: Any
    fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", JobState(self.state))
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    # -- the file form -----------------------------------------------------------------------

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Job":
        """The job of a job file's object (which must have ``id``, ``state`` and ``params``)."""
        fields = {k: v for k, v in obj.items() if k not in ("id", "state", "params")}
        return cls(obj["id"], JobState(obj["state"]), obj["params"], fields)

    @staticmethod
    def is_job_json(obj: Any, job_id: int, state: str) -> bool:
        """Whether a file's object is the job ``job_id`` in folder ``state``."""
        return (isinstance(obj, dict) and obj.get("id") == job_id and obj.get("state") == state
                and "params" in obj)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state.value, "params": self.params, **self.fields}

    # -- changes (the store's) ---------------------------------------------------------------

    def with_fields(self, **fields: Any) -> "Job":
        """This job with some fields set (its state unchanged)."""
        return dataclasses.replace(self, fields={**self.fields, **fields})

    def moved_to(self, state: JobState | str, **fields: Any) -> "Job":
        """This job in a new state with some fields set; raises :class:`IllegalTransition`.

        The one change of a finished job: one that :attr:`awaits_result` becomes what its result
        says (complete, or failed as the runner recorded), its failure kept in ``late_result``.
        """
        state = JobState(state)
        if self.awaits_result and state.finished:
            kept = {key: value for key, value in self.fields.items() if key not in _FAILURE_FIELDS}
            kept[LATE_RESULT] = {"failure": self.failure, "reason": self.reason,
                                 "ended": self.fields.get(AWAITING_RESULT)}
            return dataclasses.replace(self, state=state, fields={**kept, **fields})
        if not self.state.can_become(state):
            raise IllegalTransition(f"job {self.id} cannot go from {self.state.value} to {state.value}")
        return dataclasses.replace(self, state=state, fields={**self.fields, **fields})

    # -- fields ------------------------------------------------------------------------------

    @property
    def awaits_result(self) -> bool:
        """Whether the job failed only because no result file was to be seen when the scheduler
        said it had ended (:data:`AWAITING_RESULT`; "no_result" and "lost" jobs of daemons that
        did not mark them): its result file, if it ever appears, is recorded in place of the
        failure."""
        return self.state is JobState.FAILED and (self.fields.get(AWAITING_RESULT) is not None
                                                  or self.failure in ("no_result", "lost"))

    @property
    def source(self) -> str | None:
        """"optimizer", "user" (a dropped params file) or "import" (a result from elsewhere)."""
        return self.fields.get("source")

    @property
    def values(self) -> dict[str, float]:
        """{task: value} of a complete job ({} otherwise)."""
        return dict(self.fields.get("values") or {})

    @property
    def predicted_values(self) -> dict[str, float]:
        """{objective: predicted final value} of a stopped job shown to the model ({} otherwise:
        see spearmint_nn.daemon.policies.early_stopping)."""
        return dict(self.fields.get("predicted_values") or {})

    @property
    def value(self) -> float | None:
        """The objective's value of a complete job."""
        return self.fields.get("value")

    @property
    def failure(self) -> str | None:
        """The failure kind of a failed job (one of :data:`FAILURE_KINDS`)."""
        return self.fields.get("failure")

    @property
    def reason(self) -> str | None:
        """One line saying why a job failed."""
        return self.fields.get("reason")

    @property
    def location(self) -> str | None:
        """``<file>:<line>`` in the user's code a failure points at, when known."""
        return self.fields.get("location")

    @property
    def duration(self) -> float | None:
        """Seconds the wrapper ran, when known."""
        return finite_float(self.fields.get("duration"))

    @property
    def attempts(self) -> int | None:
        """How many times the job ran (the scheduler may requeue it), when its runner said."""
        attempts = self.fields.get("attempts")
        return len(attempts) if isinstance(attempts, list) and attempts else None

    @property
    def finished(self) -> float | None:
        """Unix time the outcome was recorded (complete or failed)."""
        return finite_float(self.fields.get("finished"))

    @property
    def submitted(self) -> float | None:
        """Unix time the driver accepted the job."""
        return finite_float(self.fields.get("submitted"))

    @property
    def driver(self) -> str | None:
        return self.fields.get("driver")

    @property
    def scheduler_id(self) -> str | None:
        """The driver's id of the running job; None while it is being submitted."""
        return self.fields.get("scheduler_id")

    # -- rules -------------------------------------------------------------------------------

    def counts_toward_budget(self, ignored_failures: Iterable[str]) -> bool:
        """Whether the job counts against max-finished-jobs: complete, stopped early (one
        evaluation, as a pruned trial is one of Optuna's n_trials; the model sees it at its
        predicted final value, if any), or failed for a reason not in ``ignored_failures`` (the config's
        ``ignore-failures``: those are neither counted nor shown to the model)."""
        return self.state in (JobState.COMPLETE, JobState.STOPPED) or (
            self.state is JobState.FAILED and self.failure not in ignored_failures)

    def held_back(self, any_success: bool) -> bool:
        """Whether the job is a failure kept from the budget and the model for now: one of
        :data:`HELD_UNTIL_SUCCESS` while no job of the experiment (``any_success``) has completed.
        A job counts toward max-finished-jobs when it :meth:`counts_toward_budget` and is not
        held back."""
        return not any_success and self.state is JobState.FAILED and self.failure in HELD_UNTIL_SUCCESS

    def objective_value(self, objective: str) -> float | None:
        """The objective's value (``value``, else ``values[objective]``) as a finite float, or None."""
        value = finite_float(self.value)
        return value if value is not None else finite_float(self.values.get(objective))

    def is_feasible(self, objective: str, constraints: Sequence[str]) -> bool:
        """A complete job with a finite objective value and every constraint value >= 0
        (Spearmint's convention)."""
        if self.state is not JobState.COMPLETE or self.objective_value(objective) is None:
            return False
        values = self.values
        return all(one_number(values.get(name)) is not None and values[name] >= 0 for name in constraints)


def counts_text(counts: Mapping[str, int]) -> str:
    """Jobs per state in words ("0 pending, 2 running, 5 complete, 1 failed"), for the log and
    ``status``; stopped jobs only when there are some (early stopping is off by default)."""
    return ", ".join(f"{n} {state}" for state, n in counts.items() if n or state != JobState.STOPPED.value)


def best_job(jobs: Iterable[Job], objective: str, constraints: Sequence[str],
             direction: str = "minimize") -> Job | None:
    """The feasible job with the lowest objective value (the highest when ``direction`` is
    "maximize"); ties go to the lowest id."""
    sign = parse_direction(direction)
    feasible = [job for job in jobs if job.is_feasible(objective, constraints)]
    return min(feasible, key=lambda job: (sign * job.objective_value(objective), job.id), default=None)


def best_summary(job: Job) -> dict[str, Any]:
    """The fields of best.json and of ``status --json``'s ``best``."""
    return {"id": job.id, **{key: job.to_json().get(key) for key in ("value", "values", "params", "duration", "finished")}}


# ---- values returned by a wrapper or imported -------------------------------------------------

class BadValues(ValueError):
    """Values that cannot be recorded; ``failure`` is "nan" or "bad_result"."""

    def __init__(self, failure: str, message: str):
        super().__init__(message)
        self.failure = failure


def check_values(raw: Any, tasks: Sequence[str]) -> dict[str, float]:
    """Validate a wrapper's return value against the config's task names.

    A number is accepted when there is one task; a dict must cover exactly the tasks with
    numbers; a tensor or array of one element counts as its number
    (:func:`spearmint_nn.values.one_number`). Returns ``{task: float}``; raises
    :class:`BadValues` ("nan" for NaN or infinite values, "bad_result" for anything else).
    """
    if isinstance(raw, Mapping):
        keys = sorted(map(str, raw))
        if keys != sorted(tasks):
            raise BadValues("bad_result", f"returned keys {keys}; expected exactly {sorted(tasks)}")
        values = {}
        for task in tasks:
            number = one_number(raw[task])
            if number is None:
                raise BadValues("bad_result", f"task {task!r} is {describe(raw[task])}, not {wanted(raw[task])}")
            values[task] = number
    else:
        number = one_number(raw)
        if number is None:
            raise BadValues("bad_result", f"returned {describe(raw)}; expected {wanted(raw)} or a dict of task -> number")
        if len(tasks) != 1:
            if not math.isfinite(number):  # a bare NaN means "this evaluation failed", whatever the tasks
                raise BadValues("nan", f"returned {number} (a failed evaluation)")
            raise BadValues("bad_result", f"returned one number but the config has tasks {sorted(tasks)}: return a dict")
        values = {tasks[0]: number}
    bad = [task for task, v in values.items() if not math.isfinite(v)]
    if bad:
        raise BadValues("nan", "returned " + ", ".join(f"{t}={values[t]}" for t in bad))
    return values


def finite_float(value: Any) -> float | None:
    """value as a finite float, or None (for missing, non-numeric, NaN and infinite values)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None
