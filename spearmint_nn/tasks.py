"""What the Optimizer is told about its tasks, and how one job's result splits into task values.

Spearmint's ``tasks`` name one OBJECTIVE and any number of CONSTRAINTs (a value >= 0 means
satisfied). The Optimizer takes them in either of two forms, ``{"main": "OBJECTIVE"}`` or as
written in config.json, ``{"main": {"type": "OBJECTIVE", "likelihood": "NOISELESS"}}``; every
wrong argument is a :class:`~spearmint_nn.errors.ConfigError` naming it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .config import LIKELIHOODS, TASK_TYPES
from .errors import ConfigError, did_you_mean

DEFAULT_TASK = "main"
DIRECTIONS = ("minimize", "maximize")
# Keys of a config.json task that concern how its jobs run, which the Optimizer does not do.
_RUN_KEYS = ("main-file", "language", "resources")
_TASK_KEYS = ("type", "likelihood", *_RUN_KEYS)


@dataclass(frozen=True)
class Tasks:
    """The parsed tasks: the objective's name, the constraints' names (in the order given) and
    the likelihood of every task that has one ("NOISELESS" or "GAUSSIAN")."""

    objective: str
    constraints: tuple[str, ...]
    likelihoods: Mapping[str, str]

    @property
    def names(self) -> tuple[str, ...]:
        return (self.objective, *self.constraints)


def _upper_choice(path: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.upper() not in choices:
        raise ConfigError(path, f"must be one of {', '.join(choices)} (got {value!r})")
    return value.upper()


def parse_tasks(tasks: Mapping[str, Any] | None, likelihoods: Mapping[str, str] | None) -> Tasks:
    """Check and parse the Optimizer's ``tasks`` and ``likelihoods`` arguments.

    ``tasks`` maps each name to its type or to a config.json task object (``type`` required,
    ``likelihood`` optional, Spearmint's ``main-file``, ``language`` and ``resources`` accepted
    and ignored); None means one objective named "main". ``likelihoods`` (task name ->
    likelihood) overrides the likelihood a task object gives.
    """
    if tasks is None:
        tasks = {DEFAULT_TASK: "OBJECTIVE"}
    if not isinstance(tasks, Mapping) or not tasks:
        raise ConfigError("tasks", f"must be a non-empty dict mapping task names to types (got {tasks!r})")
    types: dict[str, str] = {}
    given: dict[str, str] = {}
    for name, spec in tasks.items():
        path = f"tasks.{name}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("tasks", f"task names must be non-empty strings (got {name!r})")
        if isinstance(spec, Mapping):
            for key in spec:
                if key not in _TASK_KEYS:
                    raise ConfigError(f"{path}.{key}", "unknown key" + did_you_mean(str(key), _TASK_KEYS))
            if "type" not in spec:
                raise ConfigError(f"{path}.type", f"required: {' or '.join(TASK_TYPES)}")
            types[name] = _upper_choice(f"{path}.type", spec["type"], TASK_TYPES)
            if "likelihood" in spec:
                given[name] = _upper_choice(f"{path}.likelihood", spec["likelihood"], LIKELIHOODS)
        else:
            types[name] = _upper_choice(path, spec, TASK_TYPES)
    objectives = [name for name, kind in types.items() if kind == "OBJECTIVE"]
    if len(objectives) != 1:
        raise ConfigError("tasks", f"must have exactly one OBJECTIVE task (got {len(objectives)}: {objectives})")
    if likelihoods is not None and not isinstance(likelihoods, Mapping):
        raise ConfigError("likelihoods", f"must be a dict mapping task names to likelihoods (got {likelihoods!r})")
    for name, value in (likelihoods or {}).items():
        if name not in types:
            raise ConfigError(f"likelihoods.{name}", "not a task" + did_you_mean(str(name), types))
        given[name] = _upper_choice(f"likelihoods.{name}", value, LIKELIHOODS)
    constraints = tuple(name for name, kind in types.items() if kind == "CONSTRAINT")
    return Tasks(objective=objectives[0], constraints=constraints, likelihoods=given)


def parse_direction(direction: Any) -> float:
    """The sign observed objective values are multiplied by: 1 to minimise, -1 to maximise."""
    if not isinstance(direction, str) or direction.lower() not in DIRECTIONS:
        raise ConfigError("direction", f"must be one of {', '.join(DIRECTIONS)} (got {direction!r})"
                          + (did_you_mean(direction.lower(), DIRECTIONS) if isinstance(direction, str) else ""))
    return 1.0 if direction.lower() == "minimize" else -1.0


def _finite_or_nan(value: Any, task: str) -> float:
    """A task value as float; None, NaN and +-inf become NaN (a failure / unknown)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"task {task!r}: expected a number, got {value!r}")
    value = float(value)
    return value if math.isfinite(value) else math.nan


def split_result(tasks: Tasks, value: Any) -> tuple[float, dict[str, float]]:
    """(objective, {constraint: value}) of one job's result, NaN where missing or not finite.

    ``value`` is a number, None (a failure), or a dict task -> number; a bare number or None
    leaves every constraint unknown. Raises ValueError for a dict naming an unknown task or a
    value that is not a number (a numpy size-1 array counts as its number).
    """
    if isinstance(value, Mapping):
        unknown = set(value) - set(tasks.names)
        if unknown:
            raise ValueError(f"result names unknown task(s) {sorted(map(str, unknown))}; tasks are {sorted(tasks.names)}")
        raw = dict(value)
    else:
        raw = {tasks.objective: value}
    parsed = {name: _finite_or_nan(_number_of(raw.get(name)), name) for name in tasks.names}
    return parsed[tasks.objective], {name: parsed[name] for name in tasks.constraints}


def _number_of(value: Any) -> Any:
    """A numpy array of one element as that element; anything else unchanged."""
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.reshape(()).item()
    return value
