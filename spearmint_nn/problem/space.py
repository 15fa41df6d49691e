"""The search space: parsing Spearmint's ``variables`` and mapping points to the unit cube.

Models never see raw units. A point is *encoded* into a row of floats in [0, 1]:

* FLOAT: one column per element, linear in ``[min, max]`` (or in ``[log min, log max]`` for
  ``"scale": "log"``).
* INT: one column per element, encoded like FLOAT; decoding rounds to the nearest integer.
* ENUM: one column per option per element (one-hot); decoding takes the arg-max.
* A *conditional* variable (``"when": {...}``, active only when a parent ENUM/INT takes some
  values) adds one relevance-indicator column (1 active, 0 inactive). While inactive its value
  columns hold a neutral constant (0.5 for numbers, all-zero one-hot), so an inactive value
  carries no information: two points that differ only in inactive values encode identically.

``project`` snaps an encoded row onto the encodings of valid points (INT rounded, ENUM
one-hot), so an acquisition optimised over the continuous cube can be evaluated at exactly the
point that will be run.

Params come in two forms:

* *wrapper form*, as Spearmint's ``main(job_id, params)`` receives them: FLOAT/INT as numpy
  arrays of length ``size`` (a :class:`ScalarArray`, which also behaves as its number, when
  ``size`` is 1), ENUM as a list of strings;
* *JSON form*, as stored in job files: plain lists of Python numbers / strings.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, closest, did_you_mean, unknown_keys

VARIABLE_TYPES = ("FLOAT", "INT", "ENUM")
SCALES = ("linear", "log")
_VARIABLE_KEYS = {"type", "size", "min", "max", "options", "scale", "when", "default"}
MAX_SIZE = 1000  # a vector variable larger than this is almost surely a typo
NEUTRAL = 0.5  # value columns of an inactive numeric variable
_COMPARISONS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
}


class ScalarArray(np.ndarray):
    """The wrapper-form value of a FLOAT or INT variable of size 1: a numpy array of shape (1,),
    as Spearmint hands it over, that also converts, formats and rounds as its one number.

    Spearmint's wrappers write ``float(x)``, ``int(n)``, ``range(n)``, ``'%f' % x``,
    ``f"{x:.3f}"`` and ``math.exp(x)`` on such values, which numpy 2 refuses for arrays with
    ndim > 0; with this type they work, and ``x[0]``, iteration and numpy functions work as on
    any array. Results of arithmetic keep the type while they hold one element (so
    ``float(x * 2)`` works too); results of any other size are plain arrays, and reductions
    (``np.sum(x)``) numpy scalars, as for a plain array. ``str(x)`` is the number's text
    (``'%s' % x`` gives ``1.5``, not ``[1.5]``); ``repr`` still shows the array.
    """

    def __array_wrap__(self, array: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        result = super().__array_wrap__(array, *args, **kwargs)
        if not isinstance(result, ScalarArray):
            return result
        if result.ndim == 0:  # a reduction (np.sum(x), x.max()): a numpy scalar, as for a plain array
            return result.view(np.ndarray)[()]
        return result if result.size == 1 else result.view(np.ndarray)

    def __float__(self) -> float:
        return float(self.item()) if self.size == 1 else super().__float__()

    def __int__(self) -> int:
        return int(self.item()) if self.size == 1 else super().__int__()

    def __index__(self) -> int:
        # Only an INT is an index (range(n), a_list[n]); a FLOAT raises numpy's TypeError.
        if self.size == 1 and self.dtype.kind in "iu":
            return int(self.item())
        return super().__index__()

    def __round__(self, ndigits: int | None = None) -> float | int:
        if self.size != 1:
            raise TypeError(f"round() of an array of {self.size} values; use numpy.round")
        return round(self.item(), ndigits)

    def __format__(self, spec: str) -> str:
        return format(self.item(), spec) if self.size == 1 else super().__format__(spec)

    def __str__(self) -> str:
        return str(self.item()) if self.size == 1 else super().__str__()


@dataclass(frozen=True)
class Condition:
    """``parent`` must take one of ``values``, or satisfy every ``(operator, bound)`` test."""

    parent: str
    values: tuple = ()
    tests: tuple[tuple[str, float], ...] = ()

    def holds(self, value: Any) -> bool:
        if self.values:
            return value in self.values
        return all(_COMPARISONS[op](value, bound) for op, bound in self.tests)

    def holds_in(self, params: Mapping[str, Any]) -> bool:
        """Whether the parent's value in ``params`` (either form) satisfies it; False when absent."""
        return self.parent in params and self.holds(_scalar(params[self.parent]))


@dataclass(frozen=True)
class Variable:
    """One entry of ``variables``: a FLOAT, INT or ENUM of ``size`` elements.

    ``default`` (JSON form, or None) is the value that jobs run before the variable was added
    are taken to have had (see :mod:`spearmint_nn.problem.space_edits`).
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

    @property
    def width(self) -> int:
        """Encoded columns per element."""
        return len(self.options) if self.type == "ENUM" else 1

    def _bounds(self) -> tuple[float, float]:
        # An INT owns the interval [k - 0.5, k + 0.5], so every integer gets the same share of
        # the cube (uniform designs stay uniform, the end points are not under-sampled).
        pad = 0.5 if self.type == "INT" else 0.0
        return float(self.min) - pad, float(self.max) + pad

    def _to_unit(self, value: np.ndarray) -> np.ndarray:
        (lo, hi), v = self._bounds(), np.asarray(value, dtype=float)
        if self.scale == "log":
            lo, hi, v = math.log(lo), math.log(hi), np.log(v)
        return (v - lo) / (hi - lo)

    def _from_unit(self, u: np.ndarray) -> np.ndarray:
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
                if op not in _COMPARISONS:
                    raise ConfigError(f"{cpath}.{op}", f"unknown comparison; use one of {', '.join(_COMPARISONS)}")
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
    """Validate one ``variables.<name>`` entry; raise :class:`ConfigError` naming the key.

    Parents named in ``when`` are checked by :class:`Space`, which sees all variables.
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
    size = spec.get("size", 1)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"{path}.size", f"must be a positive integer (got {size!r})")
    if size > MAX_SIZE:
        raise ConfigError(f"{path}.size", f"must be at most {MAX_SIZE} (got {size})")
    conditions = _parse_conditions(f"{path}.when", spec["when"]) if "when" in spec else ()
    if vtype == "ENUM":
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
        return _with_default(Variable(name, vtype, size, options=tuple(options), conditions=conditions), spec)
    if "options" in spec:
        raise ConfigError(f"{path}.options", f"only allowed for an ENUM (this is a {vtype})")
    for key in ("min", "max"):
        if key not in spec:
            raise ConfigError(f"{path}.{key}", f"required for a {vtype}")
    lo, hi = _number(f"{path}.min", spec["min"]), _number(f"{path}.max", spec["max"])
    if vtype == "INT":
        for key, v in (("min", lo), ("max", hi)):
            if v != int(v):
                raise ConfigError(f"{path}.{key}", f"must be an integer for an INT (got {spec[key]!r})")
    if not lo < hi:
        raise ConfigError(f"{path}.min", f"must be < max (got {spec['min']!r} >= {spec['max']!r})")
    scale = spec.get("scale", "linear")
    if scale not in SCALES:
        raise ConfigError(f"{path}.scale", f"must be 'linear' or 'log' (got {scale!r})")
    if scale == "log" and lo <= 0:
        raise ConfigError(f"{path}.min", f"must be > 0 for a log scale (got {spec['min']!r})")
    return _with_default(Variable(name, vtype, size, min=lo, max=hi, scale=scale, conditions=conditions), spec)


def _with_default(var: Variable, spec: Mapping[str, Any]) -> Variable:
    """``var`` with the spec's ``default``, checked against the variable's own type, size,
    bounds and options (errors name ``variables.<name>.default``)."""
    if "default" not in spec:
        return var
    elements = _checked_elements(var, spec["default"], f"variables.{var.name}.default")
    if var.type != "ENUM":
        elements = [int(v) if var.type == "INT" else float(v) for v in elements]
    return replace(var, default=tuple(elements))


class Space:
    """An ordered set of :class:`Variable` with encode/decode to the unit cube.

    Attributes
    ----------
    variables : list of Variable, in config order.
    dim : int, number of encoded columns (value columns plus one indicator per conditional
        variable).
    """

    def __init__(self, variables: Sequence[Variable]):
        if not variables:
            raise ConfigError("variables", "must declare at least one variable")
        self.variables = list(variables)
        self._by_name = {v.name: v for v in self.variables}
        self._slices: dict[str, slice] = {}
        self._indicator: dict[str, int] = {}
        start = 0
        for var in self.variables:
            self._slices[var.name] = slice(start, start + var.size * var.width)
            start += var.size * var.width
            if var.conditions:
                self._indicator[var.name] = start
                start += 1
        self.dim = start
        self._order = self._check_conditions()

    @property
    def parents_first(self) -> list[Variable]:
        """The variables in an order where every parent comes before its children."""
        return list(self._order)

    def _check_conditions(self) -> list[Variable]:
        """Validate parents and return the variables with every parent before its children."""
        for var in self.variables:
            for cond in var.conditions:
                path = f"variables.{var.name}.when.{cond.parent}"
                parent = self._by_name.get(cond.parent)
                if parent is None:
                    raise ConfigError(path, "unknown variable" + did_you_mean(cond.parent, self._by_name))
                if parent.type == "FLOAT" or parent.size != 1:
                    raise ConfigError(path, "a condition's parent must be an ENUM or INT of size 1")
                for v in cond.values:
                    ok = v in parent.options if parent.type == "ENUM" else (
                        not isinstance(v, str) and v == int(v) and parent.min <= v <= parent.max)
                    if not ok:
                        raise ConfigError(path, f"{v!r} is not a possible value of {parent.name}")
        order: list[Variable] = []
        state: dict[str, str] = {}

        def visit(var: Variable, chain: list[str]) -> None:
            if state.get(var.name) == "done":
                return
            if state.get(var.name) == "visiting":
                cycle = " -> ".join(chain[chain.index(var.name):] + [var.name])
                raise ConfigError(f"variables.{var.name}.when", f"conditions form a cycle ({cycle})")
            state[var.name] = "visiting"
            for cond in var.conditions:
                visit(self._by_name[cond.parent], chain + [var.name])
            state[var.name] = "done"
            order.append(var)

        for var in self.variables:
            visit(var, [])
        return order

    @classmethod
    def from_config(cls, variables: Any) -> "Space":
        """Build from the ``variables`` object of a config.json (a dict name -> spec)."""
        if not isinstance(variables, Mapping):
            raise ConfigError("variables", f"must be an object mapping names to specs (got {type(variables).__name__})")
        found = unknown_variable_keys(variables)
        if found:
            raise unknown_keys(found)
        parsed = []
        for name, spec in variables.items():
            if not isinstance(name, str) or not name.strip():
                raise ConfigError("variables", f"variable names must be non-empty strings (got {name!r})")
            parsed.append(parse_variable(name, spec))
        return cls(parsed)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    @property
    def n_parameters(self) -> int:
        """Scalar parameters a point is made of: one per element of every variable (an ENUM
        element counts once, however many one-hot columns it takes; indicators do not count)."""
        return sum(var.size for var in self.variables)

    @property
    def default_initial_design(self) -> int:
        """Sobol points before a model takes over: D + 1 for D = ``n_parameters`` (at least 2),
        the smallest set spanning a D-simplex (one-hot columns and indicators add no direction).

        A model-based proposal is worth more than a space-filling one as soon as the model has
        something to extrapolate from; with integrated hyperparameters the posterior stays wide
        where data are missing, so exploration continues through EI rather than a long design.
        """
        return max(2, self.n_parameters + 1)

    @property
    def is_conditional(self) -> bool:
        return bool(self._indicator)

    def active_names(self, params: Mapping[str, Any]) -> list[str]:
        """Names of the variables that are active for these params (parents read from params)."""
        active: set[str] = set()
        for var in self._order:
            if all(c.parent in active and c.holds(_scalar(params[c.parent])) for c in var.conditions):
                active.add(var.name)
        return [v.name for v in self.variables if v.name in active]

    def value_columns(self, name: str) -> slice:
        """Encoded columns holding the value of variable ``name``."""
        return self._slices[name]

    def active_mask(self, X: np.ndarray) -> np.ndarray:
        """Boolean (n, dim): True where a column is relevant for that row.

        Value columns of inactive variables are False; indicator columns are always True.
        """
        X = np.atleast_2d(np.asarray(X, dtype=float))
        mask = np.ones(X.shape, dtype=bool)
        for name, col in self._indicator.items():
            mask[:, self._slices[name]] = X[:, [col]] > 0.5
        return mask

    # ---- params <-> unit cube -------------------------------------------------------------

    def encode(self, params_list: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Encode params (wrapper or JSON form) into an array of shape (n, dim) in [0, 1]."""
        out = np.zeros((len(params_list), self.dim))
        for row, params in enumerate(params_list):
            active = set(self.validate(params))
            for var in self.variables:
                cols = out[row, self._slices[var.name]]
                if var.name in self._indicator:
                    out[row, self._indicator[var.name]] = float(var.name in active)
                if var.name not in active:
                    cols[:] = 0.0 if var.type == "ENUM" else NEUTRAL
                    continue
                value = params[var.name]
                if var.type == "ENUM":
                    block = cols.reshape(var.size, var.width)
                    for i, opt in enumerate(_elements(var, value, var.name)):
                        block[i, var.options.index(opt)] = 1.0
                else:
                    cols[:] = var._to_unit(np.asarray(value, dtype=float))
        return out

    def decode(self, X: np.ndarray) -> list[dict[str, Any]]:
        """Decode rows of shape (n, dim) into params in wrapper form (nearest valid point).

        Only active variables appear; indicator columns are ignored (activity follows from the
        decoded parents), so any row of the cube decodes to a valid point.
        """
        X = np.atleast_2d(np.asarray(X, dtype=float))
        result = []
        for x in X:
            params: dict[str, Any] = {}
            for var in self._order:
                if not all(c.holds_in(params) for c in var.conditions):
                    continue
                cols = x[self._slices[var.name]]
                if var.type == "ENUM":
                    block = cols.reshape(var.size, var.width)
                    params[var.name] = [var.options[int(i)] for i in block.argmax(axis=1)]
                else:
                    params[var.name] = _wrapper_array(var._from_unit(cols))
            result.append({name: params[name] for name in self.names if name in params})
        return result

    def project(self, X: np.ndarray) -> np.ndarray:
        """Snap rows of shape (n, dim) onto encodings of valid points (same shape)."""
        return self.encode(self.decode(X))

    def sobol(self, n: int, seed: int | None = None) -> np.ndarray:
        """A scrambled Sobol design of n projected points, shape (n, dim)."""
        if n <= 0:
            return np.zeros((0, self.dim))
        from scipy.stats import qmc  # imported here: scipy.stats costs every job ~1 s of start-up

        sampler = qmc.Sobol(d=self.dim, scramble=True, seed=seed)
        m = max(0, math.ceil(math.log2(n)))
        return self.project(sampler.random_base2(m)[:n])

    # ---- params forms and validation ------------------------------------------------------

    def validate(self, params: Mapping[str, Any]) -> list[str]:
        """Raise :class:`ConfigError` (path ``params.<name>``) unless params is a valid point.

        Exactly the active variables must be present. Returns their names.
        """
        if not isinstance(params, Mapping):
            raise ConfigError("params", f"must be an object (got {type(params).__name__})")
        for key in params:
            if key not in self._slices:
                raise ConfigError(f"params.{key}", "unknown variable" + did_you_mean(str(key), self.names))
        active: list[str] = []
        for var in self._order:
            path = f"params.{var.name}"
            is_active = all(c.parent in active and c.holds(_scalar(params[c.parent])) for c in var.conditions)
            if not is_active:
                if var.name in params and params[var.name] is not None:
                    raise ConfigError(path, "given but inactive under its condition ('when')")
                continue
            if var.name not in params:
                raise ConfigError(path, "missing")
            _checked_elements(var, params[var.name], path)
            active.append(var.name)
        return [name for name in self.names if name in active]

    def to_json(self, params: Mapping[str, Any]) -> dict[str, list]:
        """Active params (either form) as plain JSON lists: floats, ints or strings."""
        out: dict[str, list] = {}
        for var in self.variables:
            if params.get(var.name) is None:
                continue
            value = params[var.name]
            if var.type == "ENUM":
                out[var.name] = [value] if isinstance(value, str) else list(value)
            else:
                arr = np.atleast_1d(np.asarray(value, dtype=float))
                out[var.name] = [int(v) for v in arr] if var.type == "INT" else [float(v) for v in arr]
        return out

    def to_wrapper(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Active params (either form) as Spearmint's wrapper receives them."""
        json_form = self.to_json(params)
        return {
            var.name: list(json_form[var.name]) if var.type == "ENUM"
            else _wrapper_array(np.asarray(json_form[var.name], dtype=np.int64 if var.type == "INT" else float))
            for var in self.variables if var.name in json_form
        }


def _wrapper_array(values: np.ndarray) -> np.ndarray:
    """A FLOAT/INT variable's values in wrapper form: a :class:`ScalarArray` when there is one."""
    return values.view(ScalarArray) if values.size == 1 else values


def _elements(var: Variable, value: Any, path: str) -> list:
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


def _checked_elements(var: Variable, value: Any, path: str) -> list:
    """The elements of a value of ``var`` (see :func:`_elements`); raises :class:`ConfigError`
    at ``path`` unless each is one of its options, or a finite number within its bounds (an
    integer for an INT)."""
    elements = _elements(var, value, path)
    for v in elements:
        if var.type == "ENUM":
            if not isinstance(v, str) or v not in var.options:
                raise ConfigError(path, f"{v!r} is not one of {list(var.options)}")
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(path, f"must hold finite numbers (got {v!r})")
        if var.type == "INT" and v != int(v):
            raise ConfigError(path, f"must hold integers (got {v!r})")
        if not var.min <= v <= var.max:
            raise ConfigError(path, f"{v!r} is outside [{var.min:g}, {var.max:g}]")
    return elements


def _scalar(value: Any) -> Any:
    """The single element of a size-1 parent value in either params form."""
    if isinstance(value, str):
        return value
    return np.asarray(value).reshape(-1)[0].item()
