"""The parsers of the search's values, one per kind of value, shared by config.json's keys
(:mod:`spearmint_nn.experiment.config`), the tasks (:mod:`~spearmint_nn.problem.tasks`) and the
Optimizer's keywords (:class:`~spearmint_nn.problem.settings.SearchSettings`), so all take the
same values. Each is a :data:`Parser`: ``(path, value) -> parsed value``, a wrong value a
:class:`~spearmint_nn.errors.ConfigError` (a ValueError) naming ``path`` (a config.json key, or
a keyword).

The rules: a name is accepted in any case and spelt as declared (``"GP"`` is ``"gp"``, ``"objective"``
``"OBJECTIVE"``); a count is an integer, or a float with an integral value as JSON may write one
(``3.0``), never a bool.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ConfigError, did_you_mean

#: ``(key path, value) -> parsed value``; a wrong value raises ConfigError naming the path.
Parser = Callable[[str, Any], Any]

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
