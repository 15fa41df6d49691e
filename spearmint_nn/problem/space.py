"""The search space: Spearmint's ``variables`` (each parsed by
:mod:`spearmint_nn.problem.variables`) and mapping points to the unit cube.

Models never see raw units. A point is *encoded* into a row of floats in [0, 1]:

* FLOAT: one column per element, linear in ``[min, max]`` (or in ``[log min, log max]`` for
  ``"scale": "log"``).
* INT: one column per element, encoded like FLOAT; decoding rounds to the nearest integer.
* ENUM: one column per option per element (one-hot); decoding takes the arg-max.
* A *conditional* variable (``"when": {...}``, active only when a parent ENUM/INT takes some
  values) adds one relevance-indicator column (1 active, 0 inactive). While inactive its value
  columns hold a neutral constant (0.5 for numbers, all-zero one-hot), so an inactive value
  carries no information: two points that differ only in inactive values encode identically.
* A *fixed* variable (``"value"``) has no column: the models and the acquisition never see it.
  Decoding adds it to every point at its value (where active), so each job receives it as it
  would receive a searched value.

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
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, Problems, did_you_mean, unknown_keys
from .variables import Variable, checked_elements, elements, parse_variable, scalar, shown, unknown_variable_keys

NEUTRAL = 0.5  # value columns of an inactive numeric variable


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


class Space:
    """An ordered set of :class:`Variable` with encode/decode to the unit cube.

    Attributes
    ----------
    declared : list of Variable, every variable in config order.
    variables : list of Variable, the searched ones (each has columns), in config order.
    fixed : list of Variable, the fixed ones (no column), in config order.
    dim : int, number of encoded columns (value columns plus one indicator per conditional
        variable).
    """

    def __init__(self, variables: Sequence[Variable]):
        if not variables:
            raise ConfigError("variables", "must declare at least one variable")
        self.declared = list(variables)
        self.variables = [var for var in self.declared if not var.is_fixed]
        self.fixed = [var for var in self.declared if var.is_fixed]
        if not self.variables:
            raise ConfigError("variables", "every variable is fixed (has a value): search at least one")
        self._by_name = {v.name: v for v in self.declared}
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
        for var in self.declared:
            for cond in var.conditions:
                path = f"variables.{var.name}.when.{cond.parent}"
                parent = self._by_name.get(cond.parent)
                if parent is None:
                    raise ConfigError(path, "unknown variable" + did_you_mean(cond.parent, self._by_name))
                if parent.type == "FLOAT" or parent.size != 1:
                    raise ConfigError(path, "a condition's parent must be an ENUM or INT of size 1")
                for v in cond.values:
                    # a fixed parent takes any value of its type: the branches it leaves out stay
                    # written, so that searching the parent again needs no edit of its children
                    ok = (isinstance(v, str) and (parent.is_fixed or v in parent.options) if parent.type == "ENUM"
                          else not isinstance(v, str) and v == int(v) and (parent.is_fixed or parent.min <= v <= parent.max))
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

        for var in self.declared:
            visit(var, [])
        return order

    @classmethod
    def from_config(cls, variables: Any) -> "Space":
        """Build from the ``variables`` object of a config.json (a dict name -> spec); raise a
        ConfigError naming the key, or :class:`~spearmint_nn.errors.ConfigErrors` naming each
        wrong key of every variable (the conditions between them are checked once each
        variable is right)."""
        if not isinstance(variables, Mapping):
            raise ConfigError("variables", f"must be an object mapping names to specs (got {type(variables).__name__})")
        problems = Problems()
        found = unknown_variable_keys(variables)
        if found:
            problems.report(unknown_keys(found))
        parsed = []
        for name, spec in variables.items():
            if not isinstance(name, str) or not name.strip():
                problems.report(ConfigError("variables", f"variable names must be non-empty strings (got {name!r})"))
            # a variable with an unknown key is read no further: its other problems are most
            # likely that key's (a misspelt "max" makes "max" missing)
            elif not problems.failed(f"variables.{name}"):
                parsed.append(problems.call(parse_variable, name, spec))
        problems.raise_any()
        return cls(parsed)

    @property
    def names(self) -> list[str]:
        """Every variable's name (fixed ones too), in config order."""
        return [v.name for v in self.declared]

    @property
    def n_parameters(self) -> int:
        """Scalar parameters the search moves: one per element of every searched variable (an
        ENUM element counts once, however many one-hot columns it takes; indicators and fixed
        variables do not count)."""
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
        """Whether a searched variable has a condition (and so an indicator column)."""
        return bool(self._indicator)

    def active_names(self, params: Mapping[str, Any]) -> list[str]:
        """Names of the variables that are active for these params (parents read from params, a
        fixed parent they leave out at its value)."""
        point = self.completed(params)
        active: set[str] = set()
        for var in self._order:
            if all(c.parent in active and c.holds(scalar(point[c.parent])) for c in var.conditions):
                active.add(var.name)
        return [name for name in self.names if name in active]

    def completed(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """``params`` with every active fixed variable they leave out added at its value (JSON
        form): a point as an ask/tell caller may write it, made whole. A job's params are
        recorded whole, so :meth:`validate` wants every fixed variable; :meth:`encode` takes
        either."""
        if not self.fixed or not isinstance(params, Mapping):
            return params
        point = dict(params)
        for var in self._order:  # parents first: a fixed parent is added before its children are judged
            if var.is_fixed and var.name not in point and all(c.holds_in(point) for c in var.conditions):
                point[var.name] = list(var.value)
        return point

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
        """Encode params (wrapper or JSON form) into an array of shape (n, dim) in [0, 1]; a
        fixed variable may be left out of them (:meth:`completed`)."""
        out = np.zeros((len(params_list), self.dim))
        for row, params in enumerate(params_list):
            params = self.completed(params)
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
                    for i, opt in enumerate(elements(var, value, var.name)):
                        block[i, var.options.index(opt)] = 1.0
                else:
                    cols[:] = var.to_unit(np.asarray(value, dtype=float))
        return out

    def decode(self, X: np.ndarray) -> list[dict[str, Any]]:
        """Decode rows of shape (n, dim) into params in wrapper form (nearest valid point).

        Only active variables appear, fixed ones at their value; indicator columns are ignored
        (activity follows from the decoded parents), so any row of the cube decodes to a valid
        point.
        """
        X = np.atleast_2d(np.asarray(X, dtype=float))
        result = []
        for x in X:
            params: dict[str, Any] = {}
            for var in self._order:
                if not all(c.holds_in(params) for c in var.conditions):
                    continue
                if var.is_fixed:
                    params[var.name] = _wrapper_form(var, var.value)
                    continue
                cols = x[self._slices[var.name]]
                if var.type == "ENUM":
                    block = cols.reshape(var.size, var.width)
                    params[var.name] = [var.options[int(i)] for i in block.argmax(axis=1)]
                else:
                    params[var.name] = _wrapper_array(var.from_unit(cols))
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

        Exactly the active variables must be present, a fixed one at its value. Returns their
        names.
        """
        if not isinstance(params, Mapping):
            raise ConfigError("params", f"must be an object (got {type(params).__name__})")
        for key in params:
            if key not in self._by_name:
                raise ConfigError(f"params.{key}", "unknown variable" + did_you_mean(str(key), self.names))
        point: dict[str, Any] = {}  # the active variables' values
        for var in self._order:
            path = f"params.{var.name}"
            if not all(c.parent in point and c.holds(scalar(point[c.parent])) for c in var.conditions):
                if var.name in params and params[var.name] is not None:
                    raise ConfigError(path, "given but inactive under its condition ('when')")
                continue
            if var.name not in params:
                raise ConfigError(path, f"missing (its fixed value is {shown(var.value)})" if var.is_fixed else "missing")
            found = checked_elements(var, params[var.name], path)
            if var.is_fixed and found != list(var.value):
                raise ConfigError(path, f"must be {shown(var.value)}, the variable's fixed value (got {shown(found)})")
            point[var.name] = params[var.name]
        return [name for name in self.names if name in point]

    def to_json(self, params: Mapping[str, Any]) -> dict[str, list]:
        """Active params (either form) as plain JSON lists: floats, ints or strings."""
        out: dict[str, list] = {}
        for var in self.declared:
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
        return {var.name: _wrapper_form(var, json_form[var.name]) for var in self.declared if var.name in json_form}


def _wrapper_form(var: Variable, values: Sequence) -> Any:
    """A variable's values (JSON form) as the wrapper receives them."""
    if var.type == "ENUM":
        return list(values)
    return _wrapper_array(np.asarray(values, dtype=np.int64 if var.type == "INT" else float))


def _wrapper_array(values: np.ndarray) -> np.ndarray:
    """A FLOAT/INT variable's values in wrapper form: a :class:`ScalarArray` when there is one."""
    return values.view(ScalarArray) if values.size == 1 else values
