"""What the Optimizer has been told, in the order told, and the points it handed out that await a result.

Every observation is one encoded point with its objective value, each constraint's value and
the job's duration. A call that is refused (a point outside the space, a value that is not a
number, an unknown task) raises before anything is recorded, so the record never holds a point
without its values.

The learning curves of points still running are told too (ask/tell early stopping, the
Optimizer's ``report``, ``should_stop``, ``stop_decision`` and ``tell_stopped``), and judged by the daemon's rules with the daemon's options
(:mod:`spearmint_nn.stopping`). What a rule sees, for the point judged: its curve
(the reports told for it, in the order told), and every other point that has a curve or an
observation, with its curve and its final value: the objective observed there when that
observation is feasible (the last one, for a point observed more than once), None for a point
running, stopped, failed or infeasible. As the daemon judges a job only when its curve grew, a
point asked about again without a new report gets the same answer (and the ASHA rule judges
only the rungs that new reports crossed). A stopped point is told to the model as the daemon
tells its stopped jobs: observed at its predicted final value
(:func:`~spearmint_nn.stopping.predict_final`: where the complete points' curves
say it was heading, never better than the incumbent) with its constraints unknown, so the model
learns that its region is poor without a value it never reached or a failure it never had; a
point stopped before 3 complete points reached its step, with nothing to extrapolate from, is a
pending point for good instead (handed out, if it was not). Either way its neighbourhood is not
proposed again, and to the rules it stays a curve without a final value.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..stopping.curve import CurvePoint, Other
from ..stopping.decision import Decision
from ..stopping.prediction import Prediction, predict_final
from ..stopping.rules import decide
from ..stopping.settings import parse_early_stopping
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

    def __init__(self, space: Space, tasks: Tasks, sign: float = 1.0,
                 early_stopping: Mapping[str, Any] | None = None):
        self.space, self.tasks, self.sign = space, tasks, sign
        self.X: list[np.ndarray] = []
        self.objective: list[float] = []
        self.constraints: dict[str, list[float]] = {name: [] for name in tasks.constraints}
        self.durations: list[float] = []
        self.handed_out: list[np.ndarray] = []
        self._observed_keys: set[tuple] = set()  # point_key of every observed point
        #: The ``early-stopping`` options (None: ``{}``, the key's defaults); a wrong one is a
        #: ConfigError naming ``early_stopping.<option>``.
        self.stopping = parse_early_stopping("early_stopping", {} if early_stopping is None else early_stopping)
        self._curves: dict[tuple, _Curve] = {}  # point_key -> the curve told for the point
        self._predictions: dict[tuple, Prediction] = {}  # stopped points observed at their predicted final value

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
        self._append(row, objective, constraints, seconds)

    def _append(self, row: np.ndarray, objective: float, constraints: Mapping[str, float], seconds: float) -> None:
        self._observed_keys.add(point_key(row))
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

    def report(self, params: Mapping[str, Any], step: Any, value: Any) -> None:
        """Add a report to the curve of ``params``: see :meth:`Optimizer.report <spearmint_nn.search.optimizer.Optimizer.report>`."""
        key = point_key(self.space.encode([params])[0])
        number = one_number(step)
        if number is None or not math.isfinite(number):
            raise ValueError(f"report: step: expected a finite number, got {describe(step)}")
        reported = one_number(value)
        if reported is None:
            raise ValueError(f"report: value: expected {wanted(value)}, got {describe(value)}")
        if not math.isfinite(reported):
            # as the daemon skips such a report line: a diverged training is no crash of the caller
            warnings.warn(f"report: the value {reported} at step {number:g} is not finite; skipped", stacklevel=3)
            return
        self._curves.setdefault(key, _Curve()).reports.append(CurvePoint(number, reported))

    def stop_decision(self, params: Mapping[str, Any]) -> Decision:
        """The rule's answer for ``params``: see :meth:`Optimizer.stop_decision <spearmint_nn.search.optimizer.Optimizer.stop_decision>`."""
        key = point_key(self.space.encode([params])[0])
        curve = self._curves.get(key)
        if curve is not None and curve.stopped:
            return Decision.stop_it("told stopped before")
        if key in self._observed_keys:
            return Decision.go_on("observed: it has finished")
        if curve is None or not curve.reports:
            return Decision.go_on("no report yet")
        if curve.judged is None or curve.judged[0] != len(curve.reports):
            decision = decide(self.stopping, curve.reports, self._others(key), self._direction, curve.since)
            curve.judged = (len(curve.reports), decision)
            curve.since = max(r.step for r in curve.reports)
        return curve.judged[1]

    def stopped(self, params: Mapping[str, Any]) -> Prediction | None:
        """Record ``params`` as stopped: see :meth:`Optimizer.tell_stopped <spearmint_nn.search.optimizer.Optimizer.tell_stopped>`."""
        row = self.space.encode([params])[0]
        key = point_key(row)
        if key in self._predictions:  # told stopped again
            return self._predictions[key]
        if key in self._observed_keys:
            raise ValueError(f"tell_stopped: {_point_text(self.space, row)} was observed: it has finished")
        curve = self._curves.setdefault(key, _Curve())
        curve.stopped = True
        prediction = predict_final(curve.reports, self._others(key), self._direction)
        if prediction is not None:
            self._predictions[key] = prediction
            self._append(row, prediction.value, {name: math.nan for name in self.tasks.constraints}, math.nan)
        elif key not in point_keys(np.asarray(self.handed_out).reshape(-1, self.space.dim)):
            self.handed_out.append(row)
        return prediction

    @property
    def _direction(self) -> str:
        return "minimize" if self.sign > 0 else "maximize"

    def _others(self, key: tuple) -> list[Other]:
        """Every point but ``key`` as the rules see it: its curve and final value."""
        finals = self._finals()
        others = [Other(c.reports, finals.get(k)) for k, c in self._curves.items() if k != key]
        return others + [Other([], final) for k, final in finals.items() if k not in self._curves]

    def _finals(self) -> dict[tuple, float | None]:
        """point_key -> the objective observed there in the user's sign when that observation is
        feasible and not a stopped point's prediction, else None; the last observation of a point
        observed more than once."""
        if not self.X:
            return {}
        feasible = self.feasible_mask()
        return {key: self.sign * y if ok and key not in self._predictions else None
                for key, y, ok in zip(point_keys(np.asarray(self.X)), self.objective, feasible)}

    def _drop_handed_out(self, row: np.ndarray) -> bool:
        key = point_key(row)
        for i, x in enumerate(self.handed_out):
            if point_key(x) == key:
                del self.handed_out[i]
                return True
        return False


@dataclass
class _Curve:
    """One point's reports, and what the rule said on them."""

    reports: list[CurvePoint] = field(default_factory=list)
    judged: tuple[int, Decision] | None = None  # (reports judged, the answer), given again until one more comes
    since: float | None = None                  # the last step judged: the ASHA rule's rungs above it are new
    stopped: bool = False                       # told stopped: never judged again


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
