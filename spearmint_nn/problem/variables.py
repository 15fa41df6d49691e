"""One entry of Spearmint's ``variables``: parsing it into a :class:`Variable`, and checking a
value against it. :class:`~spearmint_nn.problem.space.Space` holds them all and maps points to the
unit cube.

A variable is *searched* (FLOAT/INT with ``min`` and ``max``, ENUM with ``options``) or *fixed*
(``"value"`` instead): a fixed variable is handed to every job at its value and recorded with
its params, but it is no dimension of the search.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np

from ..errors import ConfigError, Problems, closest, unknown_keys

VARIABLE_TYPES = ("FLOAT", "INT", "ENUM")
SCALES = ("linear", "log")
_VARIABLE_KEYS = {"type", "size", "min", "max", "options", "scale", "when", "default", "value"}
# What a fixed variable takes the place of: a range or options to search.
_SEARCH_KEYS = ("min", "max", "options", "scale")
MAX_SIZE = 1000  # a vector variable larger than this is almost surely a typo
COMPARISONS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
}


@dataclass(frozen=True)
class Condition:
    """``parent`` must take one of ``values``, or satisfy every ``(operator, bound)`` test."""

    parent: str
    values: tuple = ()
    tests: tuple[tuple[str, float], ...] = ()

    def holds(self, value: Any) -> bool:
        if self.values:
            return value in self.values
        return all(COMPARISONS[op](value, bound) for op, bound in self.tests)

    def holds_in(self, params: Mapping[str, Any]) -> bool:
        """Whether the parent's value in ``params`` (either form) satisfies it; False when absent."""
        return self.parent in params and self.holds(scalar(params[self.parent]))


@dataclass(frozen=True)
class Variable:
    """One entry of ``variables``: a FLOAT, INT or ENUM of ``size`` elements.

    ``default`` (JSON form, or None) is the value that jobs run before the variable was added
    are taken to have had (see :mod:`spearmint_nn.problem.space_edits`). ``value`` (JSON form)
    is set for a fixed variable, which has no bounds and no options.
    """

    name: str
    type: str
    size: int = 1
    min: float | None = None
    max: float | None = None
    options: tuple[str, ...] = ()
    scale: str = "linear"
    conditions: tuple[Condition, ...] = ()
    default: tuple | None = None
    value: tuple | None = None

    @property
    def is_fixed(self) -> bool:
        """Given a ``value``: passed to every job, never searched."""
        return self.value is not None

    @property
    def width(self) -> int:
        """Encoded columns per element."""
        return len(self.options) if self.type == "ENUM" else 1

    def _bounds(self) -> tuple[float, float]:
        # An INT owns the interval [k - 0.5, k + 0.5], so every integer gets the same share of
        # the cube (uniform designs stay uniform, the end points are not under-sampled).
        pad = 0.5 if self.type == "INT" else 0.0
        return float(self.min) - pad, float(self.max) + pad

    def to_unit(self, value: np.ndarray) -> np.ndarray:
        """A FLOAT's or INT's values, linear in the unit interval over its range (its scale)."""
        (lo, hi), v = self._bounds(), np.asarray(value, dtype=float)
        if self.scale == "log":
            lo, hi, v = math.log(lo), math.log(hi), np.log(v)
        return (v - lo) / (hi - lo)

    def from_unit(self, u: np.ndarray) -> np.ndarray:
        """The values at positions ``u`` of the unit interval (clipped; an INT rounded)."""
        lo, hi = self._bounds()
        u = np.clip(u, 0.0, 1.0)
        if self.scale == "log":
            v = np.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
        else:
            v = lo + u * (hi - lo)
        if self.type == "INT":
            return np.clip(np.rint(v), self.min, self.max).astype(np.int64)
        return np.clip(v, self.min, self.max)


def _number(path: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(path, f"must be a number (got {value!r})")
    if not math.isfinite(value):
        raise ConfigError(path, f"must be finite (got {value!r})")
    return float(value)


def _parse_conditions(path: str, when: Any) -> tuple[Condition, ...]:
    """``{"parent": value | [values] | {"op": bound, ...}, ...}``; all must hold."""
    if not isinstance(when, Mapping) or not when:
        raise ConfigError(path, f"must be an object mapping a parent variable to its values (got {when!r})")
    conditions = []
    for parent, rule in when.items():
        cpath = f"{path}.{parent}"
        if isinstance(rule, Mapping):
            if not rule:
                raise ConfigError(cpath, "needs at least one comparison")
            tests = []
            for op, bound in rule.items():
                if op not in COMPARISONS:
                    raise ConfigError(f"{cpath}.{op}", f"unknown comparison; use one of {', '.join(COMPARISONS)}")
                tests.append((op, _number(f"{cpath}.{op}", bound)))
            conditions.append(Condition(parent, tests=tuple(tests)))
            continue
        values = rule if isinstance(rule, list) else [rule]
        if not values:
            raise ConfigError(cpath, "needs at least one value")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise ConfigError(cpath, f"values must be strings or numbers (got {v!r})")
        conditions.append(Condition(parent, values=tuple(values)))
    return tuple(conditions)


def unknown_variable_keys(variables: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key path, hint)`` for every key of every variable spec that no variable has."""
    return [(f"variables.{name}.{key}", closest(str(key), _VARIABLE_KEYS))
            for name, spec in variables.items() if isinstance(spec, Mapping)
            for key in spec if key not in _VARIABLE_KEYS]


def parse_variable(name: str, spec: Any) -> Variable:
    """Validate one ``variables.<name>`` entry; raise :class:`ConfigError` naming the key, or
    :class:`~spearmint_nn.errors.ConfigErrors` naming each wrong key of it.

    Parents named in ``when`` are checked by :class:`~spearmint_nn.problem.space.Space`, which
    sees all variables.
    """
    path = f"variables.{name}"
    if not isinstance(spec, Mapping):
        raise ConfigError(path, f"must be an object with a 'type' (got {type(spec).__name__})")
    found = unknown_variable_keys({name: spec})
    if found:
        raise unknown_keys(found)
    vtype = spec.get("type")
    if not isinstance(vtype, str) or vtype.upper() not in VARIABLE_TYPES:
        raise ConfigError(f"{path}.type", f"must be one of FLOAT, INT, ENUM (got {vtype!r})")
    vtype = vtype.upper()
    problems = Problems()
    size = problems.call(_size, f"{path}.size", spec.get("size", 1))
    conditions = problems.call(_parse_conditions, f"{path}.when", spec["when"], fallback=()) if "when" in spec else ()
    # a value and a default are read at the variable's size: with a wrong size, neither is checked
    shape = Variable(name, vtype, size or 1, conditions=conditions)
    if "value" in spec:
        var = problems.call(_fixed, path, shape, spec) if size is not None else None
    elif vtype == "ENUM":
        var = problems.call(_enum, path, shape, spec)
    else:
        var = _numeric(path, shape, spec, problems)
    if var is not None and size is not None and "default" in spec:
        var = problems.call(_with_default, var, spec["default"])
    problems.raise_any()
    return var


def _size(path: str, size: Any) -> int:
    """``size``: a whole number from 1 to :data:`MAX_SIZE`."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(path, f"must be a positive integer (got {size!r})")
    if size > MAX_SIZE:
        raise ConfigError(path, f"must be at most {MAX_SIZE} (got {size})")
    return size


def _fixed(path: str, var: Variable, spec: Mapping[str, Any]) -> Variable:
    """A fixed variable: ``value`` checked against the type and size, and no range or options."""
    searched = [key for key in _SEARCH_KEYS if key in spec]
    if searched:
        raise ConfigError(f"{path}.value", f"a fixed variable has no {', '.join(searched)}: remove "
                          f"{'them' if len(searched) > 1 else 'it'} to hold the variable at its value, or "
                          "remove value to search it")
    return replace(var, value=_json_elements(var, checked_elements(var, spec["value"], f"{path}.value")))


def _enum(path: str, var: Variable, spec: Mapping[str, Any]) -> Variable:
    """A searched ENUM: its options, distinct strings, and no range."""
    for key in ("min", "max", "scale"):
        if key in spec:
            raise ConfigError(f"{path}.{key}", "not allowed for an ENUM (use 'options')")
    options = spec.get("options")
    if not isinstance(options, list) or not options:
        raise ConfigError(f"{path}.options", f"must be a non-empty list of strings (got {options!r})")
    for i, opt in enumerate(options):
        if not isinstance(opt, str):
            raise ConfigError(f"{path}.options[{i}]", f"must be a string (got {opt!r})")
    if len(set(options)) != len(options):
        dup = next(o for o in options if options.count(o) > 1)
        raise ConfigError(f"{path}.options", f"duplicate option {dup!r}")
    return replace(var, options=tuple(options))


def _numeric(path: str, var: Variable, spec: Mapping[str, Any], problems: Problems) -> Variable | None:
    """A FLOAT's or INT's range and scale, each wrong key reported to ``problems`` (None then)."""
    if "options" in spec:
        problems.report(ConfigError(f"{path}.options", f"only allowed for an ENUM (this is a {var.type})"))
    bounds = {key: problems.call(_bound, path, key, var.type, spec) for key in ("min", "max")}
    scale = spec.get("scale", "linear")
    if scale not in SCALES:
        problems.report(ConfigError(f"{path}.scale", f"must be 'linear' or 'log' (got {scale!r})"))
    lo, hi = bounds["min"], bounds["max"]
    if lo is None or hi is None:
        return None
    if not lo < hi:
        problems.report(ConfigError(f"{path}.min", f"must be < max (got {spec['min']!r} >= {spec['max']!r})"))
    elif scale == "log" and lo <= 0:
        problems.report(ConfigError(f"{path}.min", f"must be > 0 for a log scale (got {spec['min']!r})"))
    elif scale in SCALES:
        return replace(var, min=lo, max=hi, scale=scale)
    return None


def _bound(path: str, key: str, vtype: str, spec: Mapping[str, Any]) -> float:
    """``min`` or ``max`` (``key``) of the variable at ``path``: a finite number, an integer for an INT."""
    if key not in spec:
        raise ConfigError(f"{path}.{key}", f"required for a {vtype}")
    bound = _number(f"{path}.{key}", spec[key])
    if vtype == "INT" and bound != int(bound):
        raise ConfigError(f"{path}.{key}", f"must be an integer for an INT (got {spec[key]!r})")
    return bound


def _with_default(var: Variable, default: Any) -> Variable:
    """``var`` with its ``default``, checked against the variable's own type, size, bounds and
    options (errors name ``variables.<name>.default``)."""
    return replace(var, default=_json_elements(var, checked_elements(var, default, f"variables.{var.name}.default")))


def _json_elements(var: Variable, values: list) -> tuple:
    """Checked elements as JSON form holds them: ints for an INT, floats for a FLOAT."""
    if var.type == "ENUM":
        return tuple(values)
    return tuple(int(v) if var.type == "INT" else float(v) for v in values)


def elements(var: Variable, value: Any, path: str) -> list:
    """The elements of one variable's value (either params form, numpy scalars as Python ones).

    A variable of size 1 may also be given bare (``1.5``, ``"relu"``, a numpy scalar), as an
    ask/tell user writes it. Raises :class:`ConfigError` at ``path`` for a wrong length or shape.
    """
    if isinstance(value, np.ndarray) and value.ndim <= 1:
        value = value.tolist()  # a 0-d array gives its bare element
    if var.size == 1 and isinstance(value, (str, numbers.Number, np.generic)):
        value = [value]
    if not isinstance(value, (list, tuple)) or len(value) != var.size:
        kind = "option" if var.type == "ENUM" else "number"
        wanted = (f"{'an' if kind == 'option' else 'a'} {kind} or a list of one" if var.size == 1
                  else f"a list of {var.size} {kind}s")
        raise ConfigError(path, f"must be {wanted} (got {value!r:.80})")
    return [v.item() if isinstance(v, np.generic) else v for v in value]


def checked_elements(var: Variable, value: Any, path: str) -> list:
    """The elements of a value of ``var`` (see :func:`elements`); raises :class:`ConfigError`
    at ``path`` unless each is a string (one of the options of a searched ENUM), or a finite
    number (an integer for an INT, within the bounds of a searched one). A fixed variable's
    value is not checked here: :meth:`~spearmint_nn.problem.space.Space.validate` does."""
    found = elements(var, value, path)
    for v in found:
        if var.type == "ENUM":
            if not isinstance(v, str) or (var.options and v not in var.options):
                raise ConfigError(path, f"{v!r} is not one of {list(var.options)}" if var.options
                                  else f"must hold strings (got {v!r})")
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(path, f"must hold finite numbers (got {v!r})")
        if var.type == "INT" and v != int(v):
            raise ConfigError(path, f"must hold integers (got {v!r})")
        if var.min is not None and not var.min <= v <= var.max:
            raise ConfigError(path, f"{v!r} is outside [{var.min:g}, {var.max:g}]")
    return found


def shown(values: tuple | list) -> str:
    """A value's elements as a person reads them: ``64``, ``relu``, ``[0.5, 1]``."""
    texts = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def scalar(value: Any) -> Any:
    """The single element of a size-1 parent value in either params form."""
    if isinstance(value, str):
        return value
    return np.asarray(value).reshape(-1)[0].item()
