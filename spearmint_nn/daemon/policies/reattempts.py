"""Jobs the cluster interrupted, submitted again as their next attempt.

A job may run in several attempts (see :mod:`spearmint_nn.experiment.claims`). When the
scheduler runs the same scheduler job again itself (SLURM's requeue, Grid Engine's reschedule),
the daemon only follows that job. When the scheduler *drops* it instead, preempted without a
requeue or lost with its node, the evaluation was cut short for a reason that says nothing
about its point: the daemon puts the job back in ``pending`` with the next attempt's number,
and submits it again like any pending job, before any new proposal (pending jobs go in id
order); its runner claims that attempt (``runner --attempt n``). The same happens to a job
whose wrapper saved a checkpoint and asked to be resumed: the runner then writes the attempt's
record (``attempts/<id>-<n>.json``, outcome "checkpointed") instead of a result; and to one
whose runner could not write its result anywhere, a full or read-only disk (outcome
"unwritten", :mod:`spearmint_nn.experiment.spare_results`).

The cluster may interrupt a job ``max-attempts`` times in all; the last interruption fails it
"interrupted", a kind that ``ignore-failures`` leaves out by default: not shown to the model
and not counted against max-finished-jobs, like the interruptions before it. Attempts that
stopped at their own checkpoint do not count there: all attempts of a job together may take
``resume.max-total-time``, after which the job fails "timeout", as one that reached its time
limit without a checkpoint does.

The job file keeps what the daemon saw of the attempts that ended this way (``attempts``, each
with its outcome), and ``attempt``, the number of the attempt the job is submitted for. When
the job's result comes, the runner's own list of attempts replaces it, with the outcomes the
daemon saw kept (the runner only knows that an earlier attempt ended without a result).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Mapping, Sequence

from ...drivers.base import JobStatus, SchedulerState

from ...experiment.claims import attempt_record, read_claim
from ...experiment.jobs import Job
from ...experiment.layout import ExperimentPaths
from ...experiment.resume import CHECKPOINTED, CheckpointedAttempt
from ...experiment.spare_results import UNWRITTEN, UNWRITTEN_EXIT

# Scheduler states of a job dropped for reasons of the cluster's own, and their outcome word.
DROPPED = {SchedulerState.PREEMPTED: "preempted", SchedulerState.NODE_FAIL: "node_fail"}


@dataclasses.dataclass(frozen=True)
class Reattempt:
    """What to do with a job whose latest attempt was interrupted: submit ``attempt`` (None:
    no attempt is left, fail it as ``outcome``, "interrupted" or "timeout", for ``reason``),
    recording ``attempts``."""

    attempt: int | None
    outcome: str
    reason: str
    attempts: list[dict[str, Any]]


def ended_record(paths: ExperimentPaths, job_id: int) -> CheckpointedAttempt | None:
    """The record the runner left of the job's latest attempt when that attempt ended without a
    result and asked to be run again, else None."""
    claim = read_claim(paths, job_id)
    return None if claim is None else CheckpointedAttempt.read(paths, job_id, int(claim.get("attempt", 1)))


def interruption(paths: ExperimentPaths, job_id: int, status: JobStatus) -> str | None:
    """How the job's latest attempt ended, when that asks for another attempt: "checkpointed",
    "preempted", "node_fail" or "unwritten"; None when it is an ordinary end (the job's result, or a failure)."""
    if ended_record(paths, job_id) is not None:
        return CHECKPOINTED
    if status.exit_code == UNWRITTEN_EXIT and not status.killed:
        return UNWRITTEN  # the disk refused its result, and it kept none (spare_results)
    return DROPPED.get(status.state)


def plan(paths: ExperimentPaths, job: Job, outcome: str, why: str, max_attempts: int,
         max_total_time: float | None) -> Reattempt:
    """The next attempt of ``job``, whose latest attempt ended by ``outcome`` (``why``: the
    scheduler's words), or why there is none (then ``outcome`` is the failure kind)."""
    claim = read_claim(paths, job.id)
    submitted_for = int(job.fields.get("attempt") or 1)
    claimed = int(claim.get("attempt", 1)) if claim is not None else 0
    attempts = list(job.fields.get("attempts") or [])
    if claimed >= submitted_for:
        record = ended_record(paths, job.id) if outcome == CHECKPOINTED else None
        attempts.append(record.entry() if record is not None else attempt_record(claim, time.time(), outcome))
        attempts[-1]["scheduler_id"] = job.scheduler_id
        following = claimed + 1
    else:
        # Dropped before its runner claimed anything: the attempt never started, submit it again.
        following = submitted_for
    if outcome == CHECKPOINTED:
        spent = sum(a["ended"] - a["started"] for a in attempts
                    if isinstance(a.get("ended"), (int, float)) and isinstance(a.get("started"), (int, float)))
        if max_total_time is not None and spent >= max_total_time:
            return Reattempt(None, "timeout", f"its {len(attempts)} attempt(s) used up resume.max-total-time "
                             f"({max_total_time:g} s) without finishing", attempts)
        return Reattempt(following, outcome, why, attempts)
    # Attempts that ended at their own checkpoint are bounded by resume.max-total-time instead.
    interrupted = claimed - sum(a.get("outcome") == CHECKPOINTED for a in attempts)
    if interrupted >= max_attempts:
        return Reattempt(None, "interrupted", f"{why}; the cluster interrupted the job {interrupted} time(s), as "
                         f"many as max-attempts ({max_attempts}) allows", attempts)
    return Reattempt(following, outcome, why, attempts)


def merged_attempts(seen: Sequence[Mapping[str, Any]] | None,
                    reported: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runner's list of attempts with the outcome, end and scheduler id the daemon saw of
    each attempt that ended without the result (the runner calls those "requeued")."""
    by_number = {entry.get("attempt"): entry for entry in seen or ()}
    merged = []
    for entry in reported:
        known = by_number.get(entry.get("attempt"))
        merged.append({**entry, **{key: known[key] for key in ("outcome", "ended", "scheduler_id")
                                   if known is not None and key in known}})
    return merged
