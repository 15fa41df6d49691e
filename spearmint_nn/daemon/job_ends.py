"""The one place where a job ends, and where every consequence of its end is applied.

A job ends in one of these ways, each a method of :class:`JobEnds`:

=====================  ======================================================================
:meth:`~JobEnds.result`     its result file came: complete with its values, or failed as its runner
                            recorded (also a result that comes *late*, after the job was recorded
                            failed without one: :meth:`~JobEnds.late`)
:meth:`~JobEnds.fail`       failed for a reason the daemon saw (no result, a rejected submission,
                            bad params, the scheduler's state)
:meth:`~JobEnds.interrupt`  its attempt was cut short by the cluster (preempted, node failure) or
                            stopped at its own checkpoint: back to pending as its next attempt, or
                            failed when no attempt is left (``spearmint_nn.daemon.policies.reattempts``)
:meth:`~JobEnds.stop`       stopped early by the rule's decision (``spearmint_nn.daemon.policies.early_stopping``)
:meth:`~JobEnds.cancel`     cancelled by the user or at the daemon's exit
:meth:`~JobEnds.arrived`    taken in already ended: a known point the user added, or a finished job
                            left by an earlier daemon (:meth:`~JobEnds.replay`)
=====================  ======================================================================

Whatever the way, the consequences follow in one fixed order, so that none is forgotten and a new
way to end is one more method here and nothing else:

1. the job file moves to its new state (:meth:`~spearmint_nn.experiment.store.Store.move`, the
   only call that does so for an end);
2. one line says so (``finished``, ``failed``, ``pruned``, ``interrupted``, ``cancelled``);
3. the account of failures before the first success (``spearmint_nn.daemon.policies.before_success``):
   a completion makes the failures held back until then count, a failure may be held back, or
   recorded as the wrapper bug it repeats;
4. the model is told (:meth:`tell`), unless the job does not count now;
5. the streak of identical failures is counted (jobs this daemon submitted only), which may stop
   the daemon (:attr:`failing_the_same_way`);
6. the summaries are marked stale.

Policies (early stopping, re-attempts, the before-success account, the failure streak) decide;
only this module moves a job to an end state (``tests/unit/daemon/test_job_ends_owner.py``).
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence

from ..drivers.base import Driver
from ..experiment.claims import read_claim
from ..experiment.config import ExperimentConfig
from ..experiment.failures import FailureGroup, FailureStreak, read_output_tail
from ..experiment.jobs import BadValues, Job, JobState
from ..experiment.results import JobResult
from ..experiment.store import Store
from ..problem.space_edits import EarlierJobs, fit_to_space
from ..text import params_text, plain
from .event_log import EventLog
from .events.curves import CurveReader
from .policies import reattempts
from .policies.before_success import FailuresBeforeSuccess
from .policies.early_stopping import Stop
from .summaries import SummaryWriter

# How the model is told a job's outcome: (job id, params of the current variables, the values or
# NaN for a failure, the duration); a job told again gets its new outcome in place of the first.
Tell = Callable[[int, Mapping[str, Any], Any, "float | None"], None]


class JobEnds:
    """Every end of a job and its consequences (see the module docstring).

    ``tell`` is the model's ear (None where no model listens, as for ``spearmint-nn cancel``
    while no daemon runs: the next daemon replays every finished job to its model);
    ``submitted_here`` the ids of the jobs this daemon submitted, whose failures count toward a
    streak: after a fix, the failures of jobs a stopped daemon left in flight must not stop the
    new one again.
    """

    def __init__(self, config: ExperimentConfig, store: Store, driver: Driver, log: EventLog,
                 curves: CurveReader | None = None, summaries: SummaryWriter | None = None,
                 tell: Tell | None = None, submitted_here: Collection[int] = ()):
        self.config, self.store, self.driver, self.log = config, store, driver, log
        self.curves, self.summaries, self.tell = curves, summaries, tell
        self.submitted_here = submitted_here
        self.before_success = FailuresBeforeSuccess(config.ignored_failures)
        self.streak = FailureStreak(config.stop_after_identical_failures, config.ignored_failures)
        # Set when the streak says that jobs keep failing the same way: the daemon then stops.
        self.failing_the_same_way: FailureGroup | None = None

    # -- the ways a job ends -------------------------------------------------------------------

    def result(self, job_id: int, result: JobResult, kept_in: str | None = None) -> Job:
        """Record the job's result (read from its file, or ``kept_in`` that place when its runner
        could not write the file): complete, or failed as its runner said."""
        fields = result.job_fields()
        if kept_in is not None:  # (spearmint_nn.experiment.spare_results)
            fields["result_kept_in"] = kept_in
            self.log.event("warning", f"job {job_id}: its runner could not write the result file (a full or "
                                      f"read-only disk?); the result it kept in {kept_in} is recorded", job=job_id)
        if "attempts" in fields:
            fields["attempts"] = reattempts.merged_attempts(self.store.get(job_id).fields.get("attempts"),
                                                            fields["attempts"])
        if not result.ok:
            return self.fail(job_id, result.failure, result.error, **fields)
        try:
            values = result.checked_values(list(self.config.tasks.names))
        except BadValues as exc:
            return self.fail(job_id, exc.failure, str(exc), **fields)
        objective = self.config.objective
        job = self.store.move(job_id, JobState.COMPLETE, values=values, value=values[objective],
                              finished=time.time(), **fields, **self._curve_fields(job_id))
        self._count_held_back()
        others = "".join(f" {t}={v:.6g}" for t, v in values.items() if t != objective)
        duration = f" in {fields['duration']:.1f} s" if "duration" in fields else ""
        self.log.event("finished", f"job {job_id} value={job.value:.6g}{others}{duration}",
                            job=job_id, value=job.value)
        self._tell(job)
        self._count_streak(job)
        self._stale()
        return job

    def late(self, job: Job, line: str, result: JobResult) -> Job:
        """A result that came after the job was recorded failed without one: it decides the job
        now, in place of the failure (spearmint_nn.daemon.events.late_results)."""
        self.log.event("late", line, job=job.id)
        self.before_success.held_back.discard(job.id)  # its result decides it now
        return self.result(job.id, result)

    def fail(self, job_id: int, failure: str, reason: str, **fields: Any) -> Job:
        """Record the job failed, of kind ``failure``, for ``reason``; its output's tails kept."""
        paths = self.config.paths
        job = self.store.move(job_id, JobState.FAILED, failure=failure, reason=plain(reason),
                              stderr_tail=read_output_tail(paths.stderr_file(job_id)),
                              stdout_tail=read_output_tail(paths.stdout_file(job_id)),
                              finished=time.time(), **{**self._curve_fields(job_id), **fields})
        job = self._after_failure(job)
        self._count_streak(job)
        self._stale()
        return job

    def interrupt(self, job_id: int, outcome: str, why: str) -> Job:
        """The job's attempt ended without a result by ``outcome`` (preempted, node_fail,
        checkpointed; ``why``: the scheduler's words): submit it again as its next attempt,
        before any new proposal, or fail it when no attempt is left (spearmint_nn.daemon.policies.reattempts)."""
        resume = self.config.resume
        plan = reattempts.plan(self.config.paths, self.store.get(job_id), outcome, why, self.config.max_attempts,
                               resume.max_total_time if resume else None)
        if plan.attempt is None:
            return self.fail(job_id, plan.outcome, plan.reason, attempts=plan.attempts)
        job = self.store.move(job_id, JobState.PENDING, attempt=plan.attempt, attempts=plan.attempts,
                              scheduler_id=None)
        self.log.event("interrupted", f"job {job_id} {outcome} ({why}); submitting it again as attempt "
                            f"{plan.attempt}", job=job_id)
        self._stale()
        return job

    def stop(self, decisions: Sequence[Stop]) -> list[Job]:
        """Stop the running jobs the early-stopping rule decided to stop, through the driver (one
        call for all), and record them ``stopped``; those with a predicted final value are shown
        to the model at it (see :meth:`unshown_points`).

        A decision loses to a result: a job whose result file is already there has finished and
        is left to be recorded complete. ``stopped`` is final, as ``complete`` and ``failed`` are:
        a stopped job is neither polled nor looked for in ``results/`` again, so a result file
        that its runner wrote between the decision and the kill (or a shared filesystem shows
        late) is never recorded over it."""
        decisions = [d for d in decisions if not self.config.paths.result_file(d.job_id).exists()]
        if decisions:
            self.driver.cancel([d.scheduler_id for d in decisions])
        stopped = []
        for decision in decisions:
            prediction = decision.prediction
            guess = {} if prediction is None else {
                "predicted_values": {self.config.objective: prediction.value}, "predicted_sd": prediction.sd,
                "predicted_from_jobs": prediction.jobs}
            job = self.store.move(decision.job_id, JobState.STOPPED, stopped_reason=decision.why,
                                  stopped_step=decision.step, finished=time.time(), **decision.curve, **guess)
            told = "" if prediction is None else \
                f"; shown to the model at its predicted final value {prediction.value:.6g}"
            self.log.event("pruned", f"job {job.id} stopped early at step {decision.step:g}: "
                                f"{decision.why}{told}", job=job.id)
            if prediction is not None:
                self._tell(job)
            stopped.append(job)
        if stopped:
            self._stale()
        return stopped

    def cancel(self, ids: Iterable[int], why: str) -> list[int]:
        """Cancel pending and running jobs (one driver call for all running ones); their ids."""
        jobs = [self.store.get(i) for i in ids]
        jobs = [j for j in jobs if j is not None and j.state in (JobState.PENDING, JobState.RUNNING)]
        running = []
        for job in jobs:
            if job.state is not JobState.RUNNING or job.driver != self.driver.name:
                continue
            scheduler_id = job.scheduler_id
            if scheduler_id is None:  # a daemon died while submitting it: its claim may name the process
                claim = read_claim(self.store.paths, job.id)
                scheduler_id = self.driver.adopt_claim(claim) if claim is not None else None
            if scheduler_id is not None:
                running.append(scheduler_id)
        if running:
            self.driver.cancel(running)
        for job in jobs:
            self.store.move(job.id, JobState.FAILED, failure="cancelled", reason=why, finished=time.time())
            self.log.event("cancelled", f"job {job.id} ({job.state}): {why}", job=job.id)
        if jobs:
            self._stale()
        return [j.id for j in jobs]

    def arrived(self, job: Job) -> None:
        """A job that came in as it is, from a file the user dropped in ``jobs/pending`` (or one
        an earlier daemon took in half): a point to run, a known result, or a failed one."""
        if job.state is JobState.PENDING:
            verb = "proposed" if job.source == "optimizer" else "accepted"
            self.log.event("proposed", f"job {job.id} ({verb}) {params_text(job.params)}", job=job.id)
        elif job.state is JobState.COMPLETE:
            self._count_held_back()
            self.log.event("imported", f"job {job.id} value={job.value:.6g} {params_text(job.params)}",
                                job=job.id, value=job.value)
            self._tell(job)
        else:
            self._after_failure(job)
        self._stale()

    def replay(self, finished: Sequence[Job]) -> None:
        """Tell the model every job that ended before this daemon started (in id order), each
        read as a point of the current variables (see spearmint_nn.problem.space_edits); what
        an edit of them left out or changed is said in one line each."""
        replayed = 0
        earlier = EarlierJobs(self.config.space)
        self.before_success.load(finished)
        for job in finished:  # (a stopped job without a predicted value is a pending point: unshown_points)
            if not self._counts_now(job) or (job.state is JobState.STOPPED and not job.predicted_values):
                continue
            params = earlier.fit(job.params)
            if params is not None:
                self._show(job, params)
                replayed += 1
        outside, adapted = earlier.outside_line(), earlier.adapted_line()
        if outside:
            self.log.event("warning", outside)
        if replayed:
            self.log.event("replayed", f"{replayed} finished job(s) shown to the model"
                                + (f" ({adapted})" if adapted else ""))

    # -- what the model has not been shown ------------------------------------------------------

    def unshown_points(self) -> list[Any]:
        """The params of the jobs that ran but that the model has not been shown: the failures
        held back until the first success, and the stopped jobs without a predicted final value.
        The optimizer is handed them as pending points, so that it does not propose them again.

        A stopped job has no final value: shown as a success at its last value it would pull
        the model toward a value it would not have kept, shown as a failure it would teach the
        constraint model that the point cannot run. Its predicted final value (where the
        complete jobs' curves say it was heading, never better than the incumbent) teaches the
        model that its region is poor; stopped before 3 complete jobs reached its step, with
        nothing to extrapolate from, it is a pending point: the model fantasises its outcomes
        from its own prediction there, so its neighbourhood is not proposed again while nothing
        false is learnt."""
        held = [self.store.get(i).params for i in sorted(self.before_success.held_back)]
        return held + [job.params for job in self.store.jobs(JobState.STOPPED) if not job.predicted_values]

    def stop_message(self, group: FailureGroup) -> str:
        """The daemon's last line when a streak stops it."""
        return self.before_success.stop_message(group, self.config, self.store.get(group.last_job))

    # -- the consequences, in their order -------------------------------------------------------

    def _curve_fields(self, job_id: int) -> dict[str, Any]:
        return self.curves.final(job_id) if self.curves is not None else {}

    def _after_failure(self, job: Job) -> Job:
        """Say that a job failed, and tell the model if the failure counts now; the job as recorded."""
        self.log.event("failed", f"job {job.id} {job.failure}: {job.reason}", job=job.id, failure=job.failure)
        if self._counts_now(job):
            self._tell(job)
        return self.store.get(job.id)

    def _counts_now(self, job: Job) -> bool:
        """Whether a finished job counts against the budget and is shown to the model now; a
        failure of a recorded wrapper bug is recorded as that bug first."""
        if self.before_success.repeats_a_bug(job):
            job = self._record_as_bug(job)
        return self.before_success.counts_now(job)

    def _count_held_back(self) -> None:
        """A job completed: the failures held back until the first success count now."""
        held = [self.store.get(job_id) for job_id in self.before_success.succeeded()]
        for job in held:
            self._tell(job)  # (one held since a run with other variables is only reported)
        if held:
            self.log.event("counted", f"a job succeeded, so the {len(held)} failure(s) held back until then "
                                f"(jobs {', '.join(str(job.id) for job in held)}) now count against "
                                f"max-finished-jobs and are shown to the model as infeasible points")

    def _count_streak(self, job: Job) -> None:
        """Count the finished job toward a streak of identical failures (jobs of this run only)."""
        if job.id in self.submitted_here and self.failing_the_same_way is None:
            group = self.streak.record(job, held_back=job.id in self.before_success.held_back)
            if group is not None and group.wrapper_bug:
                held = [self.store.get(job_id) for job_id in sorted(self.before_success.held_back)]
                for job_id in self.before_success.wrapper_bug(job, held):
                    self._record_as_bug(self.store.get(job_id))
            self.failing_the_same_way = group

    def _record_as_bug(self, job: Job) -> Job:
        return self.store.update(job.id, failure="bad_wrapper", reclassified_from=job.failure)

    def _tell(self, job: Job) -> None:
        """Show a finished evaluation to the model as a point of the current variables (a job
        left running across an edit of them may no longer be one: then it is only reported)."""
        if self.tell is None:
            return
        fit = fit_to_space(self.config.space, job.params)
        if fit.params is None:
            self.log.event("warning", f"job {job.id} lies outside the current variables "
                                f"({', '.join(fit.outside)}); not shown to the model", job=job.id)
            return
        self._show(job, fit.params)

    def _show(self, job: Job, params: Mapping[str, Any]) -> None:
        value = job.values if job.state is JobState.COMPLETE else job.predicted_values or math.nan
        if self.tell is not None:
            self.tell(job.id, params, value, job.duration)

    def _stale(self) -> None:
        if self.summaries is not None:
            self.summaries.mark_stale()
