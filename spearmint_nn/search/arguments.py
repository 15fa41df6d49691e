"""The parsers of the search settings' values, one per kind of value, shared by config.json's
keys (:mod:`spearmint_nn.experiment.config`) and the Optimizer's keywords
(:class:`~spearmint_nn.search.settings.SearchSettings`), so both take the same values. Each is a
:data:`Parser`: ``(path, value) -> parsed value``, a wrong value a
:class:`~spearmint_nn.errors.ConfigError` (a ValueError) naming ``path`` (a config.json key, or
a keyword).

The rules: a name is accepted in any case and spelt as declared (``"GP"`` is ``"gp"``, ``"objective"``
``"OBJECTIVE"``); a count is an integer, or a float with an integral value as JSON may write one
(``3.0``), never a bool.

Spearmint's ``tasks`` name one OBJECTIVE and any number of CONSTRAINTs (a value >= 0 means
satisfied). They are given in either of two forms, ``{"main": "OBJECTIVE"}`` or as written in
config.json, ``{"main": {"type": "OBJECTIVE", "likelihood": "NOISELESS"}}``, and parsed into
:class:`Tasks` by :func:`parse_tasks`, for config.json and the Optimizer alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ConfigError, did_you_mean
from .names import DEFAULT_TASK_NAME, DIRECTIONS, LIKELIHOODS, TASK_TYPES

#: ``(key path, value) -> parsed value``; a wrong value raises ConfigError naming the path.
Parser = Callable[[str, Any], Any]

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


def choice(*choices: str) -> Parser:
    """A parser of one of ``choices``, in any case, giving it as spelt in ``choices``."""
    spelt = {name.casefold(): name for name in choices}

    def parse(path: str, value: Any) -> str:
        if isinstance(value, str) and value.casefold() in spelt:
            return spelt[value.casefold()]
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        raise ConfigError(path, f"must be one of {', '.join(choices)} (got {value!r}){hint}")
    return parse


def count(minimum: int, optional: bool = False) -> Parser:
    """A parser of a whole number >= ``minimum`` (and None where ``optional``), as an int."""
    def parse(path: str, value: Any) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)  # JSON writers may write 3 as 3.0
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ConfigError(path, f"must be an integer (got {value!r})")
        if value < minimum:
            raise ConfigError(path, f"must be >= {minimum} (got {value})")
        return int(value)
    return parse


def seed_number(path: str, value: Any) -> int | None:
    """A seed: a whole number >= 0 below 2**63, or None."""
    parsed = count(0, optional=True)(path, value)
    if parsed is not None and parsed >= 2**63:  # torch generators take signed 64-bit seeds
        raise ConfigError(path, f"must be < 2**63 (got {parsed})")
    return parsed


def share(path: str, value: Any) -> float:
    """A number in [0, 1], as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not 0 <= value <= 1:
        raise ConfigError(path, f"must be a number from 0 to 1 (got {value!r})")
    return float(value)


def options(path: str, value: Any) -> Mapping[str, Any]:
    """Keyword options, from a mapping or None, as a read-only dict."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be a dict of options (got {value!r})")
    return MappingProxyType(dict(value))


direction_name = choice(*DIRECTIONS)
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


def parse_direction(value: Any) -> float:
    """The sign observed objective values are multiplied by: 1 to minimise, -1 to maximise."""
    return 1.0 if direction_name("direction", value) == "minimize" else -1.0
