"""The median rule (Optuna's ``MedianPruner``)."""
from __future__ import annotations

from typing import Sequence

from .curve import CurvePoint, Other, percentile, running_best
from .decision import Decision
from .settings import StoppingSettings


def median_rule(settings: StoppingSettings, curve: Sequence[CurvePoint], others: Sequence[Other],
                sign: float, incumbent: float | None = None,
                since: float | None = None) -> Decision:
    """The median rule of Optuna's ``MedianPruner`` (``PercentilePruner`` with another
    percentile; Golovin et al. 2017, "Google Vizier", the median stopping rule): at the job's
    last step t, stop it when its best value so far is worse than the ``percentile``-th
    percentile (the median by default; for maximisation 100 - percentile, as Optuna) of the
    running best values at t of the complete jobs whose curves reached t, once there are at
    least ``min-jobs`` of them. The job's own curve is compared at its latest step, so a job
    whose steps the others never reached is not judged."""
    t = max(r.step for r in curve)
    reached = [o.best_by(t, sign) for o in others if o.final is not None and o.reached(t)]
    reached = [v for v in reached if v is not None]
    if len(reached) < settings.min_jobs:
        return Decision.go_on(f"{len(reached)} complete job(s) reached step {t:g}, fewer than min-jobs "
                               f"{settings.min_jobs}")
    q = settings.percentile if sign > 0 else 100.0 - settings.percentile
    cutoff = percentile(reached, q)
    best = running_best(curve, sign)
    word = "median" if settings.percentile == 50 else f"{settings.percentile:g}th percentile"
    if sign * best > sign * cutoff:
        return Decision.stop_it(f"median rule: its best value {best:.6g} by step {t:g} is worse than the {word} "
                              f"{cutoff:.6g} of {len(reached)} complete jobs at that step")
    return Decision.go_on(f"its best value {best:.6g} by step {t:g} is no worse than the {word} {cutoff:.6g}")
