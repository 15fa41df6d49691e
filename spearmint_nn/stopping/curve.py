"""A learning curve as the rules see it: the points a job reports, and the other jobs' curves
and final values, with what every rule reads from them (the best value by a step, the value at
a rung, a percentile, the moves of complete jobs after a step)."""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence


@dataclass(frozen=True)
class CurvePoint:
    """One point of a learning curve: ``step`` (an int when written as one), ``value``, and the
    job's attempt. One line of a report file (:mod:`spearmint_nn.experiment.curves`, which reads
    and writes them), one ``job.report`` or ``Optimizer.report`` call."""

    step: int | float
    value: float
    attempt: int = 1


@dataclass(frozen=True)
class Other:
    """Another job as a rule sees it: its curve, and its final objective value when it
    completed and met its constraints (None: running, stopped, failed or infeasible).

    Its lookups are cached, so that judging every running job at one poll against the same
    others costs a binary search per other and job, not a pass over each curve (200 jobs in
    flight against 1000 curves of 50 reports: 10 million steps a poll otherwise)."""

    curve: Sequence[CurvePoint]
    final: float | None = None

    @cached_property
    def last_step(self) -> float | None:
        """The furthest step the job reported (None: no report)."""
        return max((r.step for r in self.curve), default=None)

    def reached(self, t: float) -> bool:
        """Whether the job reported at a step >= t."""
        return self.last_step is not None and self.last_step >= t

    @cached_property
    def _steps(self) -> list[float] | None:
        """The steps in file order when they never go back (else None: looked up by a pass)."""
        steps = [r.step for r in self.curve]
        return steps if all(a <= b for a, b in zip(steps, steps[1:])) else None

    @cached_property
    def _prefix_best(self) -> dict[float, list[float]]:
        return {}

    def best_by(self, t: float, sign: float) -> float | None:
        """:func:`running_best` of the curve at steps <= t."""
        if self._steps is None:
            return running_best(self.curve, sign, t)
        if sign not in self._prefix_best:
            prefix, best = [], math.inf
            for r in self.curve:
                best = min(best, sign * r.value)
                prefix.append(sign * best)
            self._prefix_best[sign] = prefix
        n = bisect_right(self._steps, t)
        return self._prefix_best[sign][n - 1] if n else None

    def value_at(self, rung: float) -> float | None:
        """:func:`value_at_rung` of the curve."""
        if self._steps is None:
            return value_at_rung(self.curve, rung)
        i = bisect_left(self._steps, rung)
        return self.curve[i].value if i < len(self.curve) else None


def running_best(curve: Sequence[CurvePoint], sign: float, until: float | None = None) -> float | None:
    """The best value of the reports at steps <= ``until`` (all: None); None without any.
    ``sign``: 1 to minimise, -1 to maximise."""
    values = [r.value for r in curve if until is None or r.step <= until]
    return min(values, key=lambda v: sign * v) if values else None


def value_at_rung(curve: Sequence[CurvePoint], rung: float) -> float | None:
    """A job's value at a rung: that of its first report (in file order) at a step >= the rung,
    as ASHA records a trial when it reaches the rung; None if it has not reached it."""
    return next((r.value for r in curve if r.step >= rung), None)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, interpolated linearly between the closest
    ranks (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def incumbent_of(others: Sequence[Other], sign: float) -> float | None:
    """The best final value of the others (None: no feasible complete job)."""
    finals = [o.final for o in others if o.final is not None and math.isfinite(o.final)]
    return min(finals, key=lambda v: sign * v) if finals else None


def moves_after(others: Sequence[Other], t: float, sign: float) -> list[float]:
    """final_j - best_j(t) of each complete job j whose curve reached step t."""
    return [o.final - b for o in others if o.final is not None and o.reached(t)
            and (b := o.best_by(t, sign)) is not None]


def sample_sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / max(len(values) - 1, 1))
