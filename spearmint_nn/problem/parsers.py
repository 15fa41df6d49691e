"""The parsers of config.json's values and the Optimizer's keywords, one per kind of value,
shared by config.json's keys (:mod:`spearmint_nn.experiment.config`), the tasks
(:mod:`~spearmint_nn.problem.tasks`), the driver's options (:mod:`spearmint_nn.drivers.base`) and
the Optimizer's keywords (:class:`~spearmint_nn.problem.settings.SearchSettings`), so all take the
same values. Each is a :data:`Parser`: ``(path, value) -> parsed value``, a wrong value a
:class:`~spearmint_nn.errors.ConfigError` (a ValueError) naming ``path`` (a config.json key, or
a keyword).

The rules: a name is accepted in any case and spelt as declared (``"GP"`` is ``"gp"``, ``"objective"``
``"OBJECTIVE"``); a count is an integer, or a float with an integral value as JSON may write one
(``3.0``), never a bool.
"""
from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any, Callable, Collection, Mapping

import numpy as np

from ..errors import ConfigError, did_you_mean

#: ``(key path, value) -> parsed value``; a wrong value raises ConfigError naming the path.
Parser = Callable[[str, Any], Any]


def optional(parse: Parser) -> Parser:
    """``parse``, with None (JSON's null) taken as it is."""
    def parse_optional(path: str, value: Any) -> Any:
        return None if value is None else parse(path, value)
    return parse_optional


def as_given(path: str, value: Any) -> Any:
    """A value taken as it is: an object that a parser of its own reads later (the variables, the
    tasks, the driver) or a key that is accepted and not used."""
    return value

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


def number(minimum: float, strict: bool = False) -> Parser:
    """A parser of a finite number >= ``minimum`` (> it where ``strict``), as a float."""
    def parse(path: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < minimum or (strict and value == minimum):
            raise ConfigError(path, f"must be a number {'>' if strict else '>='} {minimum:g} (got {value!r})")
        return float(value)
    return parse


def seconds(path: str, value: Any) -> float:
    """A finite number of seconds > 0, as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(path, f"must be a finite number of seconds (got {value!r})")
    if value <= 0:
        raise ConfigError(path, f"must be > 0 (got {value!r})")
    return float(value)


def duration(path: str, value: Any) -> float:
    """Seconds from a number of seconds or a ``[D-]HH:MM:SS`` / ``MM:SS`` string; > 0."""
    if isinstance(value, bool):
        raise ConfigError(path, f"must be seconds or [D-]HH:MM:SS (got {value!r})")
    if isinstance(value, (int, float)):
        total = float(value)
    elif isinstance(value, str):
        days, _, clock = value.rpartition("-")
        parts = clock.split(":")
        try:
            if not 1 <= len(parts) <= 3 or (days and not days.isdigit()):
                raise ValueError
            total = 0.0
            for part in parts:
                total = total * 60 + float(part)
            total += 86400 * int(days or 0)
        except ValueError:
            raise ConfigError(path, f"must be seconds or [D-]HH:MM:SS (got {value!r})") from None
    else:
        raise ConfigError(path, f"must be seconds or [D-]HH:MM:SS (got {value!r})")
    if not total > 0 or total != total or total == float("inf"):
        raise ConfigError(path, f"must be > 0 (got {value!r})")
    return total


def text(path: str, value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(path, f"must be a non-empty string (got {value!r})")
    return value


def argument_list(path: str, value: Any) -> list[str] | None:
    """A command as a non-empty list of non-empty strings (None: none), never one shell string."""
    if value is None:
        return None
    if isinstance(value, str):
        raise ConfigError(path, "must be a list of arguments such as [\"bash\", \"run.sh\"], not one string")
    if not isinstance(value, list) or not value:
        raise ConfigError(path, f"must be a non-empty list of strings (got {value!r})")
    for i, arg in enumerate(value):
        if not isinstance(arg, str) or not arg:
            raise ConfigError(f"{path}[{i}]", f"must be a non-empty string (got {arg!r})")
    return list(value)


def folder_list(path: str, value: Any) -> tuple[str, ...]:
    """A list of folders (paths as written), as a tuple."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(path, f"must be a list of experiment folders such as [\"../digits-small\"] (got {value!r})")
    return tuple(value)


def names_from(known: Collection[str], what: str) -> Parser:
    """A parser of a list of names, each one of ``known`` (``what`` they are, for the message),
    as a frozenset."""
    def parse(path: str, value: Any) -> frozenset[str]:
        if not isinstance(value, list):
            raise ConfigError(path, f"must be a list of {what}s (got {value!r})")
        for i, name in enumerate(value):
            if name not in known:
                raise ConfigError(f"{path}[{i}]", f"unknown {what} {name!r}{did_you_mean(str(name), known)}; "
                                  f"known: {', '.join(known)}")
        return frozenset(value)
    return parse
