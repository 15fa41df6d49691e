"""The daemon's early stopping: running jobs judged on their curves, and stopped through the driver.

After each poll's reading of the curves (:class:`~spearmint_nn.daemon.progress_reports.ProgressReports`),
:meth:`EarlyStopping.poll` asks the config's rule
(:func:`spearmint_nn.problem.stopping_rules.decide`) about every running job whose curve has
grown since it was last judged, with the other jobs' curves (from memory, or read once from
their files) and the feasible complete jobs' final values. A job to stop is cancelled through the
driver (one call for all of them) and moved to ``jobs/stopped/`` with ``stopped_reason``,
``stopped_step`` and its curve's summary.

``stopped`` is final, as ``complete`` and ``failed`` are: a stopped job is neither polled nor
looked for in ``results/`` again, so a result file that its runner wrote between the decision
and the kill (or a shared filesystem shows late) is never recorded over it. A job whose result
file is already there when the rule says stop has finished: it is left to be recorded as
complete.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from ..drivers.base import Driver
from ..experiment.config import ExperimentConfig
from ..experiment.curves import Report, curve_summary
from ..experiment.jobs import Job, JobState
from ..problem.stopping_rules import Other, decide, predict_final
from ..experiment.store import Store
from .progress_reports import ProgressReports
from .reporting import Reporter


class EarlyStopping:
    """See the module docstring; ``poll`` does nothing when the config has no ``early-stopping``."""

    def __init__(self, config: ExperimentConfig, store: Store, curves: ProgressReports, driver: Driver,
                 reporter: Reporter, observe: Callable[[Job], None] = lambda job: None):
        self.settings = config.early_stopping
        self.objective, self.constraints, self.direction = config.objective, config.constraints, config.direction
        self.store, self.curves, self.driver, self.reporter = store, curves, driver, reporter
        self.observe = observe  # shows a stopped job with a predicted final value to the model
        # job id -> (reports judged, the last step judged): a job is judged again only once its
        # curve grew; a restarted daemon starts empty (the ASHA rule then judges the rung reached)
        self._judged: dict[int, tuple[int, float]] = {}

    def poll(self) -> list[Job]:
        """Judge the running jobs with new reports; stop those the rule says to, and show those
        with a predicted final value to the model (see :meth:`points`). Returns them as recorded."""
        if self.settings is None:
            return []
        running = [job for job in self.store.jobs(JobState.RUNNING)
                   if job.driver == self.driver.name and job.scheduler_id is not None]
        running_ids = {job.id for job in running}
        self._judged = {job_id: seen for job_id, seen in self._judged.items() if job_id in running_ids}
        grown = [(job, curve) for job in running for curve in [self.curves.curve(job.id)]
                 if curve and len(curve) != self._judged.get(job.id, (0, 0.0))[0]]
        if not grown:
            return []
        others = {job.id: self._other(job) for job in self.store.jobs()
                  if job.state is not JobState.PENDING}
        to_stop: list[tuple[Job, list[Report], str, list[Other]]] = []
        for job, curve in grown:
            since = self._judged[job.id][1] if job.id in self._judged else None
            rest = [o for i, o in others.items() if i != job.id]
            decision = decide(self.settings, curve, rest, self.direction, since)
            self._judged[job.id] = (len(curve), max(r.step for r in curve))
            if decision.stop and not self.store.paths.result_file(job.id).exists():
                to_stop.append((job, curve, decision.why, rest))
        if to_stop:
            self.driver.cancel([job.scheduler_id for job, _, _, _ in to_stop])
        stopped = []
        for job, curve, why, rest in to_stop:
            prediction = predict_final(curve, rest, self.direction)
            guess = {} if prediction is None else {
                "predicted_values": {self.objective: prediction.value}, "predicted_sd": prediction.sd,
                "predicted_from_jobs": prediction.jobs}
            stopped.append(self.store.move(job.id, JobState.STOPPED, stopped_reason=why, stopped_step=curve[-1].step,
                                           finished=time.time(), **curve_summary(curve), **guess))
            self._judged.pop(job.id, None)
            told = "" if prediction is None else f"; shown to the model at its predicted final value {prediction.value:.6g}"
            self.reporter.event("pruned", f"job {job.id} stopped early at step {curve[-1].step:g}: {why}{told}",
                                job=job.id)
            if prediction is not None:
                self.observe(stopped[-1])
        return stopped

    def points(self) -> list[Any]:
        """The params of the stopped jobs without a predicted final value, which the optimizer is
        handed as pending points (the others it is shown as observations: see ``predict_final``).

        A stopped job has no final value: shown as a success at its last value it would pull
        the model toward a value it would not have kept, shown as a failure it would teach the
        constraint model that the point cannot run. Its predicted final value (where the
        complete jobs' curves say it was heading, never better than the incumbent) teaches the
        model that its region is poor; stopped before 3 complete jobs reached its step, with
        nothing to extrapolate from, it is a pending point: the model fantasises its outcomes
        from its own prediction there, so its neighbourhood is not proposed again while nothing
        false is learnt."""
        return [job.params for job in self.store.jobs(JobState.STOPPED) if not job.predicted_values]

    def _other(self, job: Job) -> Other:
        # a final value is a feasible complete job's: the incumbent and the rules' population
        # are those of best.json (an infeasible job's value is no target to beat)
        final = job.objective_value(self.objective) if job.is_feasible(self.objective, self.constraints) else None
        return Other(self.curves.curve(job.id), final)
