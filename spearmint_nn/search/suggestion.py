"""What one proposal hands out: the points and what is known about the call."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Suggestion:
    """What one :meth:`~spearmint_nn.search.optimizer.Optimizer.propose` gives: the points, and what is known about the call.

    Attributes
    ----------
    points : the n params dicts (wrapper form) to evaluate next.
    predicted_durations : predicted run time in seconds of each point, aligned with ``points``;
        None where no duration model exists yet, or the acquisition is not "ei-per-second".
    seconds : how long the call took.
    refit_seconds : how long refitting the models took in this call; None when nothing was refitted.
    n_observed : the number of observations the points were chosen from.
    segment_start : index of the first observation the objective model is fitted to
        (:attr:`Optimizer.search_start`): 0 until the search restarts.
    warpings : the objective model's learned input warpings (:attr:`Optimizer.warpings`) when it
        was refitted since the previous proposal, else None.
    chosen_by : what chose each point, aligned with ``points``: "sobol" (the initial design or
        random search), "exploration" (nothing succeeded yet) or the surrogate's name.
    """

    points: list[dict[str, Any]]
    predicted_durations: list[float | None]
    seconds: float
    refit_seconds: float | None
    n_observed: int
    segment_start: int
    warpings: dict[str, Any] | None
    chosen_by: list[str]
