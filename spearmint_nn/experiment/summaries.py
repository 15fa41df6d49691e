"""``results.csv`` and ``best.json``: the experiment folder's summaries of its finished jobs, and
the job table they share with ``spearmint-nn report`` and the HTML report. The daemon rewrites
them after changes (:class:`~spearmint_nn.daemon.summaries.SummaryWriter`); commands that read
the folder while no daemon runs write them the same way."""
from __future__ import annotations

import csv
import io
from typing import Any, Iterable, Mapping

from .. import files
from ..problem.settings import parse_direction
from ..problem.space import Space
from .config import ExperimentConfig
from .jobs import FINAL_STATES, Job, JobState, best_job, best_summary
from .store import Store


# The model's best (a noisy objective's best by the model's posterior mean) is shown only once the
# model rests on enough jobs: fitted to three it reads "0.0535 +- 2.54", a guess that confuses more
# than it tells, while the best observed value is a fact. Enough: this many completed jobs, and
# at least this many per dimension of the search (a parameter element each).
MODEL_BEST_MIN_JOBS = 10
MODEL_BEST_JOBS_PER_DIMENSION = 2


def model_best_min_jobs(space: Space | None) -> int:
    """Completed jobs (and observations of the model) before the model's best is shown:
    ``max(10, 2 x the number of parameter elements)``."""
    dims = sum(var.size for var in space.variables) if space is not None else 0
    return max(MODEL_BEST_MIN_JOBS, MODEL_BEST_JOBS_PER_DIMENSION * dims)


def model_best_shown(model_best: Mapping[str, Any], completed: int, space: Space | None) -> bool:
    """Whether the model's best is worth showing: ``completed`` jobs and the model's own
    ``observations`` (when recorded) both reach :func:`model_best_min_jobs`."""
    need = model_best_min_jobs(space)
    observations = model_best.get("observations")
    return completed >= need and (not isinstance(observations, int) or observations >= need)


def job_table(jobs: Iterable[Job], config: ExperimentConfig) -> tuple[list[str], list[list[Any]]]:
    """Header and rows (one per job, in the order given) of the job table shared by results.csv
    and ``spearmint-nn report``; ``best_so_far`` is the running best objective, ``last_step`` and
    ``last_value`` the job's last progress report (empty when it reported none)."""
    tasks = list(config.tasks.names)
    columns = [(var.name if var.size == 1 else f"{var.name}[{i}]", var.name, i)
               for var in config.space.declared for i in range(var.size)]
    header = (["id", "state", "source", "value", "feasible"] + [f"task:{t}" for t in tasks]
              + [column for column, _, _ in columns]
              + ["duration", "attempts", "last_step", "last_value", "failure", "reason", "best_so_far"])
    rows, best_so_far = [], None
    sign = parse_direction(config.direction)
    for job in jobs:
        values = job.values
        feasible = job.is_feasible(config.objective, config.constraints)
        if feasible and (best_so_far is None or sign * job.value < sign * best_so_far):
            best_so_far = job.value
        params = job.params if isinstance(job.params, dict) else {}
        cells = []
        for _, name, i in columns:
            value = params.get(name)
            cells.append(value[i] if isinstance(value, list) and i < len(value) else "")
        fields = job.fields
        rows.append([job.id, job.state.value, fields.get("source", ""), fields.get("value", ""),
                     {JobState.COMPLETE: "yes" if feasible else "no", JobState.FAILED: "no"}.get(job.state, "")]
                    + [values.get(t, "") for t in tasks] + cells
                    + [fields.get("duration", ""), "" if job.attempts is None else job.attempts,
                       fields.get("last_step", ""), fields.get("last_value", ""), fields.get("failure", ""),
                       fields.get("reason", fields.get("stopped_reason", "")),
                       "" if best_so_far is None else best_so_far])
    return header, rows


def write_summaries(store: Store, config: ExperimentConfig, model_best: Mapping[str, Any] | None = None) -> None:
    """Rewrite ``results.csv`` (finished jobs) and ``best.json`` atomically.

    ``model_best`` (a noisy objective's best by the model's posterior mean, see
    :mod:`spearmint_nn.experiment.layout`) goes into best.json beside the best observed job once
    enough jobs have completed (:func:`model_best_shown`).
    """
    header, rows = job_table(store.jobs(FINAL_STATES), config)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    files.atomic_write_bytes(store.paths.results_csv, buffer.getvalue().encode("utf-8"))
    complete = store.jobs(JobState.COMPLETE)
    best = best_job(complete, config.objective, config.constraints, config.direction)
    if best is not None:
        summary = best_summary(best)
        if model_best is not None and model_best_shown(model_best, len(complete), config.space):
            summary["model_best"] = dict(model_best)
        files.atomic_write_json(store.paths.best_json, summary)
