"""What the Optimizer has been told, in the order told, and the points it handed out that await a result.

Every observation is one encoded point with its objective value, each constraint's value and
the job's duration. A call that is refused (a point outside the space, a value that is not a
number, an unknown task) raises before anything is recorded, so the record never holds a point
without its values.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .optimize import point_key, point_keys
from .space import Space
from .tasks import Tasks, split_result


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

    def __len__(self) -> int:
        return len(self.X)

    def add(self, params: Mapping[str, Any], value: Any, duration: float | None = None) -> None:
        """Record one result (see :meth:`Optimizer.observe`); a handed-out point equal to params
        stops being pending. Everything is checked before anything is recorded."""
        row = self.space.encode([params])[0]
        objective, constraints = split_result(self.tasks, value)
        if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float, np.number))):
            raise ValueError(f"duration: expected a number of seconds or None, got {duration!r}")
        self._drop_handed_out(row)
        self.X.append(row)
        self.objective.append(self.sign * objective)
        for name in self.tasks.constraints:
            self.constraints[name].append(constraints[name])
        self.durations.append(math.nan if duration is None else float(duration))

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
