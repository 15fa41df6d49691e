"""``results.csv`` and ``best.json``, rewritten after changes at a bounded share of the daemon's time,
and the job table they share with ``spearmint-nn report``."""
from __future__ import annotations

import csv
import io
import time
from typing import Any, Callable, Iterable, Mapping

from .. import files
from ..experiment.config import ExperimentConfig
from ..experiment.jobs import FINAL_STATES, Job, JobState, best_job, best_summary
from ..experiment.store import Store
from ..problem.settings import parse_direction

# Rewriting results.csv and best.json, or the progress line, is O(finished jobs): each may take at
# most this share of the daemon's time (see TimeShare).
SUMMARY_TIME_SHARE = 0.1


class TimeShare:
    """Rate-limits a repeated task whose cost grows with the experiment (O(finished jobs)).

    After a run that took t seconds the next one is due ``(1 / share - 1) * t`` later, so the
    task takes at most ``share`` of the time however large the experiment grows: with a few
    hundred jobs that is every event (a run takes milliseconds); with 10,000 jobs, about once a
    second.
    """

    def __init__(self, share: float = SUMMARY_TIME_SHARE):
        self.share = share
        self._next_at = 0.0  # time.monotonic() before which the task waits

    def seconds_until_due(self) -> float:
        return max(0.0, self._next_at - time.monotonic())

    def run(self, task: Callable[[], Any]) -> None:
        start = time.monotonic()
        task()
        end = time.monotonic()
        self._next_at = end + (end - start) * (1.0 / self.share - 1.0)


class SummaryWriter:
    """Rewrites ``results.csv`` and ``best.json`` after changes, rate-limited by :class:`TimeShare`.

    A rewrite reads every finished job of the index, so rewriting on every event would make a
    run of N jobs cost O(N^2). A change marks the summaries stale; a stale summary is rewritten
    when its :class:`TimeShare` allows. :meth:`write` (used at exit) is unconditional.
    """

    def __init__(self, store: Store, config: ExperimentConfig):
        self._store, self._config = store, config
        self._stale = False
        self._limit = TimeShare()
        self.model_best: dict[str, Any] | None = None  # best.json's model_best, set by the daemon

    def mark_stale(self) -> None:
        self._stale = True

    def seconds_until_due(self) -> float | None:
        """How long until a stale summary is due (0 if now), or None when up to date."""
        return self._limit.seconds_until_due() if self._stale else None

    def write_if_due(self) -> None:
        if self.seconds_until_due() == 0.0:
            self.write()

    def write(self) -> None:
        self._limit.run(lambda: write_summaries(self._store, self._config, self.model_best))
        self._stale = False


def job_table(jobs: Iterable[Job], config: ExperimentConfig) -> tuple[list[str], list[list[Any]]]:
    """Header and rows (one per job, in the order given) of the job table shared by results.csv
    and ``spearmint-nn report``; ``best_so_far`` is the running best objective, ``last_step`` and
    ``last_value`` the job's last progress report (empty when it reported none)."""
    tasks = list(config.tasks.names)
    columns = [(var.name if var.size == 1 else f"{var.name}[{i}]", var.name, i)
               for var in config.space.variables for i in range(var.size)]
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
    :mod:`spearmint_nn.experiment.layout`) goes into best.json beside the best observed job.
    """
    header, rows = job_table(store.jobs(FINAL_STATES), config)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    files.atomic_write_bytes(store.paths.results_csv, buffer.getvalue().encode("utf-8"))
    best = best_job(store.jobs(JobState.COMPLETE), config.objective, config.constraints, config.direction)
    if best is not None:
        summary = best_summary(best)
        if model_best is not None:
            summary["model_best"] = dict(model_best)
        files.atomic_write_json(store.paths.best_json, summary)
