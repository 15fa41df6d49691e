"""Checks of the search settings' values: every wrong one is a :class:`~spearmint_nn.errors.ConfigError`
(a ValueError) whose path names it, as config.json's keys name theirs.

Spearmint's ``tasks`` name one OBJECTIVE and any number of CONSTRAINTs (a value >= 0 means
satisfied). The Optimizer takes them in either of two forms, ``{"main": "OBJECTIVE"}`` or as
written in config.json, ``{"main": {"type": "OBJECTIVE", "likelihood": "NOISELESS"}}``, and
parses them into :class:`Tasks`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping

import numpy as np

from ..errors import ConfigError, did_you_mean
from .names import DEFAULT_TASK_NAME, DIRECTIONS, LIKELIHOODS, TASK_TYPES

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


def choice(path: str, value: Any, choices: Collection[str]) -> str:
    """``value`` if it is one of ``choices`` (strings), else a ConfigError listing them."""
    if not isinstance(value, str) or value not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        raise ConfigError(path, f"must be one of {', '.join(sorted(choices))} (got {value!r}){hint}")
    return value


def count(path: str, value: Any, minimum: int, optional: bool = False) -> int | None:
    """``value`` as an int if it is a whole number >= minimum (or None where ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(path, f"must be a whole number >= {minimum}{' or None' if optional else ''} (got {value!r})")
    return int(value)


def share(path: str, value: Any) -> float:
    """``value`` as a float if it is a number in [0, 1], else a ConfigError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not 0 <= value <= 1:
        raise ConfigError(path, f"must be a number from 0 to 1 (got {value!r})")
    return float(value)


def options(path: str, value: Any) -> dict[str, Any]:
    """A dict of keyword options from a mapping or None."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be a dict of options (got {value!r})")
    return dict(value)


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
        tasks = {DEFAULT_TASK_NAME: "OBJECTIVE"}
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
    objective = single_objective(types)
    if likelihoods is not None and not isinstance(likelihoods, Mapping):
        raise ConfigError("likelihoods", f"must be a dict mapping task names to likelihoods (got {likelihoods!r})")
    for name, value in (likelihoods or {}).items():
        if name not in types:
            raise ConfigError(f"likelihoods.{name}", "not a task" + did_you_mean(str(name), types))
        given[name] = _upper_choice(f"likelihoods.{name}", value, LIKELIHOODS)
    constraints = tuple(name for name, kind in types.items() if kind == "CONSTRAINT")
    return Tasks(objective=objective, constraints=constraints, likelihoods=given)


def single_objective(types: Mapping[str, str]) -> str:
    """The name of the one OBJECTIVE among task name -> type ("OBJECTIVE" | "CONSTRAINT"); a
    ConfigError at "tasks" unless there is exactly one (config.json's tasks are checked here too)."""
    objectives = [name for name, kind in types.items() if kind == "OBJECTIVE"]
    if len(objectives) != 1:
        raise ConfigError("tasks", f"must have exactly one OBJECTIVE task (got {len(objectives)}: {objectives})")
    return objectives[0]


def parse_direction(direction: Any) -> float:
    """The sign observed objective values are multiplied by: 1 to minimise, -1 to maximise."""
    if not isinstance(direction, str) or direction.lower() not in DIRECTIONS:
        raise ConfigError("direction", f"must be one of {', '.join(DIRECTIONS)} (got {direction!r})"
                          + (did_you_mean(direction.lower(), DIRECTIONS) if isinstance(direction, str) else ""))
    return 1.0 if direction.lower() == "minimize" else -1.0
