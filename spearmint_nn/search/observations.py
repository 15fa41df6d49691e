"""What the Optimizer has been told, in the order told, and the points it handed out that await a result.

Every observation is one encoded point with its objective value, each constraint's value and
the job's duration. A call that is refused (a point outside the space, a value that is not a
number, an unknown task) raises before anything is recorded, so the record never holds a point
without its values.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from ..problem.tasks import Tasks
from .candidates import point_key, point_keys
from ..problem.space import Space
from ..values import describe, one_number, wanted


class Observations:
    """The Optimizer's record.

    Attributes
    ----------
    X : encoded points (dim,) in the order observed.
    objective : the objective value of each, times ``sign`` (so that lower is better), NaN where
        the job failed.
    constraints : constraint name -> its value at each observation (>= 0 satisfied; NaN unknown).
    durations : run time of each job in seconds, NaN where unknown.
    handed_out : encoded points handed out by ``suggest`` and neither observed nor forgotten.
    """

    def __init__(self, space: Space, tasks: Tasks, sign: float = 1.0):
        self.space, self.tasks, self.sign = space, tasks, sign
        self.X: list[np.ndarray] = []
        self.objective: list[float] = []
        self.constraints: dict[str, list[float]] = {name: [] for name in tasks.constraints}
        self.durations: list[float] = []
        self.handed_out: list[np.ndarray] = []
        self._observed_keys: set[tuple] = set()  # point_key of every observed point

    def __len__(self) -> int:
        return len(self.X)

    def add(self, params: Mapping[str, Any], value: Any, duration: Any = None) -> None:
        """Record one result (see :meth:`Optimizer.observe`); a handed-out point equal to params
        stops being pending. Everything is checked before anything is recorded; a point observed
        before is recorded again, with a warning naming it."""
        row = self.space.encode([params])[0]
        objective, constraints = split_result(self.tasks, value)
        seconds = _seconds(duration)
        key = point_key(row)
        if key in self._observed_keys:
            warnings.warn(f"observe: {_point_text(self.space, row)} was observed before; this value is kept as a "
                          "repeated measurement of that point (the models see both)", stacklevel=3)
        self._observed_keys.add(key)
        self._drop_handed_out(row)
        self.X.append(row)
        self.objective.append(self.sign * objective)
        for name in self.tasks.constraints:
            self.constraints[name].append(constraints[name])
        self.durations.append(seconds)

    def revise(self, index: int, value: Any, duration: Any = None) -> None:
        """Replace the values and duration of observation ``index`` (its point stays): see
        :meth:`Optimizer.revise`. Checked before anything changes, as :meth:`add` is."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.X):
            raise IndexError(f"revise: no observation {index!r} (there are {len(self.X)})")
        objective, constraints = split_result(self.tasks, value)
        seconds = _seconds(duration)
        self.objective[index] = self.sign * objective
        for name in self.tasks.constraints:
            self.constraints[name][index] = constraints[name]
        self.durations[index] = seconds

    def feasible_mask(self) -> np.ndarray:
        """Boolean (N,): the job succeeded and every constraint value is >= 0."""
        ok = np.isfinite(np.asarray(self.objective, dtype=float))
        for values in self.constraints.values():
            with np.errstate(invalid="ignore"):
                ok &= np.asarray(values, dtype=float) >= 0
        return ok

    def best_feasible(self) -> int | None:
        """Index of the feasible observation with the lowest (signed) objective, or None."""
        feasible = np.flatnonzero(self.feasible_mask())
        if feasible.size == 0:
            return None
        return int(feasible[np.argmin(np.asarray(self.objective)[feasible])])

    def pending_rows(self, pending: Sequence[Mapping[str, Any]] = ()) -> list[np.ndarray]:
        """The handed-out points, then those of ``pending`` (params) that are not among them."""
        rows = list(self.handed_out)
        keys = set(point_keys(np.asarray(rows).reshape(-1, self.space.dim)))
        for row in self.space.encode(list(pending)) if pending else ():
            if point_key(row) not in keys:
                rows.append(row)
        return rows

    def forget(self, params: Mapping[str, Any]) -> bool:
        """Drop a handed-out point from the pending ones; whether it was one of them."""
        return self._drop_handed_out(self.space.encode([params])[0])

    def _drop_handed_out(self, row: np.ndarray) -> bool:
        key = point_key(row)
        for i, x in enumerate(self.handed_out):
            if point_key(x) == key:
                del self.handed_out[i]
                return True
        return False


def _seconds(duration: Any) -> float:
    """A job's duration as a float (NaN for None: unknown); anything but a finite number of
    seconds >= 0 is a ValueError naming the argument."""
    if duration is None:
        return math.nan
    seconds = one_number(duration)
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"duration: expected a number of seconds >= 0 or None, got {describe(duration)}")
    return seconds


def _point_text(space: Space, row: np.ndarray) -> str:
    """A point in wrapper form, short: ``x=0.309, kind=relu``, six significant digits."""
    def short(value: Any) -> str:
        items = [f"{v:.6g}" if isinstance(v, float) else str(v) for v in np.asarray(value, dtype=object).ravel()]
        return items[0] if len(items) == 1 else "[" + ", ".join(items) + "]"

    return ", ".join(f"{name}={short(value)}" for name, value in space.decode(row[None])[0].items())


def _finite_or_nan(value: Any, task: str) -> float:
    """A task value as float (:func:`~spearmint_nn.values.one_number`: a tensor or array of one
    element counts); None, NaN and +-inf become NaN (a failure / unknown)."""
    if value is None:
        return math.nan
    number = one_number(value)
    if number is None:
        raise ValueError(f"task {task!r}: expected {wanted(value)}, NaN or None, got {describe(value)}")
    return number if math.isfinite(number) else math.nan


def split_result(tasks: Tasks, value: Any) -> tuple[float, dict[str, float]]:
    """(objective, {constraint: value}) of one job's result, NaN where missing or not finite.

    ``value`` is a number, None (a failure), or a dict task -> number; a bare number or None
    leaves every constraint unknown. Raises ValueError for a dict naming an unknown task or a
    value that is not one number (a tensor or array of one element counts as its number).
    """
    if isinstance(value, Mapping):
        unknown = set(value) - set(tasks.names)
        if unknown:
            raise ValueError(f"result names unknown task(s) {sorted(map(str, unknown))}; "
                             f"tasks are {sorted(tasks.names)}")
        raw = dict(value)
    else:
        raw = {tasks.objective: value}
    parsed = {name: _finite_or_nan(raw.get(name), name) for name in tasks.names}
    return parsed[tasks.objective], {name: parsed[name] for name in tasks.constraints}
