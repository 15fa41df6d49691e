"""Spearmint's ``tasks``: one OBJECTIVE and any number of CONSTRAINTs (a value >= 0 means
satisfied), each with a likelihood. They are given in either of two forms, ``{"main": "OBJECTIVE"}``
or as written in config.json, ``{"main": {"type": "OBJECTIVE", "likelihood": "NOISELESS"}}``, and
parsed into :class:`Tasks` by :func:`parse_tasks`, the one task parser of config.json and the
Optimizer alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import ConfigError, did_you_mean
from .parsers import choice

#: Spearmint's task types and likelihoods.
TASK_TYPES = ("OBJECTIVE", "CONSTRAINT")
LIKELIHOODS = ("NOISELESS", "GAUSSIAN")
#: Spearmint's name for the single objective when no tasks are given.
DEFAULT_TASK_NAME = "main"

# Keys of a config.json task that concern how its jobs run, which the Optimizer does not do.
_RUN_KEYS = ("main-file", "language", "resources")
TASK_KEYS = ("type", "likelihood", *_RUN_KEYS)


@dataclass(frozen=True)
class Tasks:
    """The parsed tasks: the objective's name, the constraints' names (in the order given), the
    likelihood of every task that has one ("NOISELESS" or "GAUSSIAN"), and every task's name in
    the order given (results.csv's task columns follow it; default: the objective first)."""

    objective: str
    constraints: tuple[str, ...]
    likelihoods: Mapping[str, str]
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.names:
            object.__setattr__(self, "names", (self.objective, *self.constraints))


likelihood_name = choice(*LIKELIHOODS)
task_type_name = choice(*TASK_TYPES)


def parse_tasks(tasks: Mapping[str, Any] | None, likelihoods: Mapping[str, str] | None = None,
                default_likelihood: str | None = None) -> Tasks:
    """Check and parse ``tasks`` (config.json's, or the Optimizer's with its ``likelihoods``).

    ``tasks`` maps each name to its type or to a config.json task object (``type`` required,
    ``likelihood`` optional, Spearmint's ``main-file``, ``language`` and ``resources`` accepted
    and ignored here); None means one objective named "main". ``likelihoods`` (task name ->
    likelihood) overrides the likelihood a task object gives. ``default_likelihood`` (config.json's
    ``likelihood``) is the likelihood of every task given none; without it such a task has none
    in :attr:`Tasks.likelihoods`, and the models take their own default.
    """
    if default_likelihood is not None:
        default_likelihood = likelihood_name("likelihood", default_likelihood)
    if tasks is None:
        tasks = {DEFAULT_TASK_NAME: "OBJECTIVE"}
    if not isinstance(tasks, Mapping) or not tasks:
        raise ConfigError("tasks", f"must be a non-empty object mapping task names to types or task objects "
                                   f"(got {tasks!r})")
    types: dict[str, str] = {}
    given: dict[str, str] = {}
    for name, spec in tasks.items():
        path = f"tasks.{name}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("tasks", f"task names must be non-empty strings (got {name!r})")
        if isinstance(spec, Mapping):
            for key in spec:
                if key not in TASK_KEYS:
                    raise ConfigError(f"{path}.{key}", "unknown key" + did_you_mean(str(key), TASK_KEYS))
            if "type" not in spec:
                raise ConfigError(f"{path}.type", f"required: {' or '.join(TASK_TYPES)}")
            types[name] = task_type_name(f"{path}.type", spec["type"])
            if "likelihood" in spec:
                given[name] = likelihood_name(f"{path}.likelihood", spec["likelihood"])
        elif isinstance(spec, str):
            types[name] = task_type_name(path, spec)
        else:
            raise ConfigError(path, f"must be {' or '.join(TASK_TYPES)}, or an object with a 'type' (got {spec!r})")
        if name not in given and default_likelihood is not None:
            given[name] = default_likelihood
    objective = single_objective(types)
    if likelihoods is not None and not isinstance(likelihoods, Mapping):
        raise ConfigError("likelihoods", f"must be a dict mapping task names to likelihoods (got {likelihoods!r})")
    for name, value in (likelihoods or {}).items():
        if name not in types:
            raise ConfigError(f"likelihoods.{name}", "not a task" + did_you_mean(str(name), types))
        given[name] = likelihood_name(f"likelihoods.{name}", value)
    constraints = tuple(name for name, kind in types.items() if kind == "CONSTRAINT")
    return Tasks(objective=objective, constraints=constraints, likelihoods=given, names=tuple(types))


def single_objective(types: Mapping[str, str]) -> str:
    """The name of the one OBJECTIVE among task name -> type ("OBJECTIVE" | "CONSTRAINT"); a
    ConfigError at "tasks" unless there is exactly one (config.json's tasks are checked here too)."""
    objectives = [name for name, kind in types.items() if kind == "OBJECTIVE"]
    if len(objectives) != 1:
        raise ConfigError("tasks", f"must have exactly one OBJECTIVE task (got {len(objectives)}: {objectives})")
    return objectives[0]
