"""Finished searches on related problems, as observations of other tasks for the multi-task GP.

A related search (a smaller dataset, an older code version, a cheaper simulation) is its space
and its results. Its variables must match this search's by name, type and size (ENUM: the same
options); ranges and scales may differ, and each related point is encoded through its own
ranges: its column j is where it sat in its own range of variable j. The related task's own
input warps (:class:`~spearmint_nn.models.multitask_gp.MultiTaskGP`) then map its unit cube
onto this one's, which a fixed rescaling to this search's ranges could not do for a log-scale
learning rate searched over [1e-4, 1e-1] there and [1e-5, 1] here.

Folders are read on the experiment side (:mod:`spearmint_nn.experiment.related`); this module
turns what they hold, or what an ask/tell user passes, into :class:`RelatedTask`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import logging

import numpy as np

from ..errors import ConfigError
from ..models import RELATED_MODELS
from ..problem.settings import AUTO, SearchSettings
from ..problem.tasks import Tasks
from .observations import split_result
from ..problem.space import Space

log = logging.getLogger(__name__)
# The models that take related searches: "auto" while it uses the GP, and the GPs.
TAKES_RELATED = (AUTO, *RELATED_MODELS)

# The multi-task GP factorises (N + related)^2 covariances at every sampler step; beyond this
# many related observations in all it keeps a subset (see subset_for_the_gp).
MAX_RELATED_OBSERVATIONS = 300


@dataclass(frozen=True)
class RelatedTask:
    """One related search's results, ready for the multi-task GP.

    Attributes
    ----------
    name : what status and the report call it (a folder's path, or "related 1" ...).
    X : (N, D) its successful points, encoded in this search's columns through its own ranges.
    y : (N,) their objective values, lower is better (this search's direction).
    """

    name: str
    X: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)


def matching_space(space: Space, related: Space, where: str) -> Space:
    """This search's variables with the related search's ranges and scales, in this search's
    order, so that encoding a related point gives this search's columns.

    Raises ConfigError (path ``where``) naming the first searched variable that is missing on
    either side or differs in type, size or ENUM options; conditional spaces are not supported
    yet. Fixed variables are no columns, so they are left out on both sides.
    """
    if space.is_conditional or related.is_conditional:
        raise ConfigError(where, "related experiments are not supported for conditional spaces yet")
    ours, theirs = {var.name for var in space.variables}, {var.name for var in related.variables}
    for name in sorted(ours ^ theirs):
        side = "this experiment" if name in ours else "the related experiment"
        raise ConfigError(where, f"variable {name!r} is only in {side}: related experiments need the same variables")
    by_name = {var.name: var for var in related.variables}
    variables = []
    for var in space.variables:
        other = by_name[var.name]
        for field, mine, its in (("type", var.type, other.type), ("size", var.size, other.size)):
            if mine != its:
                raise ConfigError(f"{where}.variables.{var.name}.{field}",
                                  f"is {its!r} in the related experiment, {mine!r} here")
        if var.type == "ENUM":
            if set(var.options) != set(other.options):
                raise ConfigError(f"{where}.variables.{var.name}.options",
                                  f"are {list(other.options)} in the related experiment, {list(var.options)} here")
            variables.append(var)
        else:
            variables.append(replace(var, min=other.min, max=other.max, scale=other.scale))
    return Space(variables)


def related_task(space: Space, related_variables: Space | Mapping[str, Any],
                 observations: Sequence[tuple[Mapping[str, Any], Any]], name: str,
                 tasks: Tasks | None = None, sign: float = 1.0, where: str | None = None) -> RelatedTask:
    """A :class:`RelatedTask` from a related search's variables and its (params, value) results.

    ``value`` is a number or a dict task -> number (its objective is ``tasks.objective``), NaN or
    None for a failure; failures and points outside the related space are left out. ``sign``
    turns the related values into this search's "lower is better" (-1 when it maximised).
    ``where`` (default ``name``) is the key path a mismatch's ConfigError names.
    """
    related = related_variables if isinstance(related_variables, Space) else Space.from_config(related_variables)
    encoder = matching_space(space, related, where or name)
    tasks = tasks or Tasks("main", (), {})
    fixed = {var.name for var in space.fixed} | {var.name for var in related.fixed}
    rows, values = [], []
    for params, value in observations:
        objective, _ = split_result(tasks, value)
        if not np.isfinite(objective):
            continue
        if isinstance(params, Mapping):
            params = {name: v for name, v in params.items() if name not in fixed}
        try:
            rows.append(encoder.encode([params])[0])
        except (ConfigError, ValueError):
            continue  # a point its own space refuses (a hand-edited job file): not evidence
        values.append(sign * objective)
    X = np.asarray(rows, dtype=float).reshape(-1, space.dim)
    return RelatedTask(name, X, np.asarray(values, dtype=float))


def subset_for_the_gp(tasks: Sequence[RelatedTask], limit: int = MAX_RELATED_OBSERVATIONS,
                      seed: int | None = 0) -> list[RelatedTask]:
    """At most ``limit`` related observations in all, shared evenly between the tasks: each keeps
    its best half-share by value and a random draw of the rest. The best points say where the
    related optimum lies (what speeds the new search up); the draw keeps the related task's
    shape over the whole space, which the task correlation is learned from."""
    share = limit // max(len(tasks), 1)
    rng = np.random.default_rng(seed)
    kept = []
    for task in tasks:
        if len(task) <= share:
            kept.append(task)
            continue
        order = np.argsort(task.y, kind="stable")
        best, rest = order[: share // 2], order[share // 2:]
        chosen = np.sort(np.concatenate([best, rng.choice(rest, share - len(best), replace=False)]))
        kept.append(RelatedTask(task.name, task.X[chosen], task.y[chosen]))
    return kept


def related_tasks(space: Space, related: Sequence[Any], settings: SearchSettings) -> tuple[RelatedTask, ...]:
    """The Optimizer's ``related`` argument as RelatedTasks: each given as one, or as a pair
    (variables, (params, value) results) whose values are in ``settings``' direction. A task with
    fewer than two successes teaches nothing and is left out with a warning. ConfigError (path
    "related") when the model takes no related searches."""
    if related and settings.model not in TAKES_RELATED:
        raise ConfigError("related", f"related experiments need a GP (model auto, gp or gp-nowarp), "
                                     f"not {settings.model!r}")
    tasks = []
    for i, task in enumerate(related):
        if not isinstance(task, RelatedTask):
            variables, results = task
            task = related_task(space, variables, results, f"related {i + 1}", settings.tasks, settings.sign)
        if len(task) < 2:
            log.warning("related experiment %s has %d successful job(s); it is left out", task.name, len(task))
            continue
        tasks.append(task)
    return tuple(tasks)


def summarise_related(tasks: Sequence[RelatedTask], correlations: np.ndarray | None,
                      seed: int | None) -> list[dict[str, Any]]:
    """Per related task: its ``name``, its successful ``observations``, how many the model
    ``used`` (:func:`subset_for_the_gp`), and its ``correlation`` with this search, (mean, sd)
    over the hyperparameter samples of ``correlations`` (S, T) (column t + 1 for task t, as
    :meth:`MultiTaskGP.task_correlations` gives them), or None without a fitted multi-task GP."""
    used = subset_for_the_gp(tasks, seed=seed)
    return [{"name": task.name, "observations": len(task), "used": len(kept),
             "correlation": None if correlations is None else
             (float(correlations[:, i + 1].mean()), float(correlations[:, i + 1].std()))}
            for i, (task, kept) in enumerate(zip(tasks, used))]
