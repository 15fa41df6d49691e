"""What a stopped job would have reached: its predicted final value, for the model to learn
that its region is poor without a value it never reached or a failure it never had."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..problem.settings import parse_direction
from .curve import CurvePoint, Other, incumbent_of, moves_after, running_best, sample_sd

# A stopped job's final value is predicted from at least this many complete jobs' moves (fewer:
# it stays a pending point, see predict_final); the 3 that give a mean and a spread at all.
PREDICTION_MIN_JOBS = 3


@dataclass(frozen=True)
class Prediction:
    """A stopped job's predicted final value, the spread of that guess, and the number of
    complete jobs it rests on (:func:`predict_final`)."""

    value: float
    sd: float
    jobs: int


def predict_final(curve: Sequence[CurvePoint], others: Sequence[Other], direction: str = "minimize") -> Prediction | None:
    """Where a stopped job was heading: its best value by its last step t plus the mean move
    after t of the complete jobs whose curves reached t (the model rule's analogy, its mean
    instead of its mixture), with the moves' standard deviation; None when fewer than
    PREDICTION_MIN_JOBS complete jobs reached t (or no report), where there is nothing to
    extrapolate from.

    The value is never better than the incumbent's final value: the job was stopped because a
    rule judged it would not beat it, and a guess must not become the best a search reports or
    improves on (the complete jobs' moves come from the curves that survived, which improve
    more than a stopped one would)."""
    sign = parse_direction(direction)
    if not curve:
        return None
    moves = moves_after(others, max(r.step for r in curve), sign)
    if len(moves) < PREDICTION_MIN_JOBS:
        return None
    value = running_best(curve, sign) + sum(moves) / len(moves)
    incumbent = incumbent_of(others, sign)
    if incumbent is not None and sign * value < sign * incumbent:
        value = incumbent
    return Prediction(value, sample_sd(moves), len(moves))
