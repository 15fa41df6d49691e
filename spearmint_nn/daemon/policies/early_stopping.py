"""The daemon's early stopping: running jobs judged on their curves; a policy that decides.

After each poll's reading of the curves (:class:`~spearmint_nn.daemon.events.curves.CurveReader`),
:meth:`EarlyStopping.decide` asks the config's rule
(:func:`spearmint_nn.stopping.decide`) about every running job whose curve has
grown since it was last judged, with the other jobs' curves (from memory, or read once from
their files) and the feasible complete jobs' final values. It returns a :class:`Stop` for each
job to stop, with the step it reached, its curve's summary and its predicted final value; it
moves no job and calls no driver. :meth:`JobEnds.stop <spearmint_nn.daemon.job_ends.JobEnds.stop>`
applies the decisions: one driver call for all, each job moved to ``jobs/stopped/``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ...experiment.config import ExperimentConfig
from ...experiment.curves import curve_summary
from ...experiment.jobs import Job, JobState
from ...stopping.curve import CurvePoint, Other
from ...stopping.prediction import Prediction, predict_final
from ...stopping.rules import decide


@dataclass(frozen=True)
class Stop:
    """The decision to stop running job ``job_id`` (``scheduler_id`` for the driver) at ``step``,
    because ``why``; ``curve``: its curve's summary for the job file; ``prediction``: its final
    value as the complete jobs' curves predict it (None when too few reached its step)."""

    job_id: int
    scheduler_id: str
    step: float
    why: str
    curve: dict[str, Any]
    prediction: Prediction | None


class EarlyStopping:
    """See the module docstring; ``decide`` decides nothing when the config has no ``early-stopping``.
    ``curve_of`` gives a job's curve so far (:meth:`CurveReader.curve
    <spearmint_nn.daemon.events.curves.CurveReader.curve>`)."""

    def __init__(self, config: ExperimentConfig, curve_of: Callable[[int], list[CurvePoint]]):
        self.settings = config.early_stopping
        self.objective, self.constraints, self.direction = config.objective, config.constraints, config.direction
        self.curve_of = curve_of
        # job id -> (reports judged, the last step judged): a job is judged again only once its
        # curve grew; a restarted daemon starts empty (the ASHA rule then judges the rung reached)
        self._judged: dict[int, tuple[int, float]] = {}

    def decide(self, running: Sequence[Job], jobs: Sequence[Job]) -> list[Stop]:
        """The jobs to stop among the ``running`` jobs of this daemon's driver that have a
        scheduler id, judged with all the experiment's ``jobs`` (the pending ones left out)."""
        if self.settings is None:
            return []
        running_ids = {job.id for job in running}
        self._judged = {job_id: seen for job_id, seen in self._judged.items() if job_id in running_ids}
        grown = [(job, curve) for job in running for curve in [self.curve_of(job.id)]
                 if curve and len(curve) != self._judged.get(job.id, (0, 0.0))[0]]
        if not grown:
            return []
        others = {job.id: self._other(job) for job in jobs if job.state is not JobState.PENDING}
        stops = []
        for job, curve in grown:
            since = self._judged[job.id][1] if job.id in self._judged else None
            rest = [o for i, o in others.items() if i != job.id]
            decision = decide(self.settings, curve, rest, self.direction, since)
            self._judged[job.id] = (len(curve), max(r.step for r in curve))
            if decision.stop:
                stops.append(Stop(job.id, job.scheduler_id, curve[-1].step, decision.why, curve_summary(curve),
                                  predict_final(curve, rest, self.direction)))
        return stops

    def _other(self, job: Job) -> Other:
        # a final value is a feasible complete job's: the incumbent and the rules' population
        # are those of best.json (an infeasible job's value is no target to beat)
        final = job.objective_value(self.objective) if job.is_feasible(self.objective, self.constraints) else None
        return Other(self.curve_of(job.id), final)
