"""Asynchronous successive halving, in its stopping form (ASHA)."""
from __future__ import annotations

from typing import Sequence

from .curve import CurvePoint, Other, percentile, value_at_rung
from .decision import Decision
from .settings import StoppingSettings


def rungs(settings: StoppingSettings) -> list[float]:
    """ASHA's rungs: min-resource * reduction-factor^k, each below max-steps."""
    out, rung = [], settings.min_resource
    while settings.max_steps is not None and rung < settings.max_steps:
        out.append(rung)
        rung *= settings.reduction_factor
    return out


def asha_rule(settings: StoppingSettings, curve: Sequence[CurvePoint], others: Sequence[Other],
              sign: float, incumbent: float | None = None, since: float | None = None) -> Decision:
    """Asynchronous successive halving (Li et al. 2020, "A System for Massively Parallel
    Hyperparameter Tuning", MLSys; in its stopping form, as Ray Tune's ``ASHAScheduler`` and
    syne-tune's stopping ASHA run it): rungs at min-resource * eta^k steps below max-steps; a job
    reaching a rung continues only if its value there is in the top 1/eta of the values of every
    job that reached that rung (itself included), that is no worse than their (1 - 1/eta)
    quantile for the better direction; else it is stopped. Each rung is judged once, when the
    job's new reports cross it (the rungs above ``since``; with ``since`` None, only the
    highest rung reached, as a restarted daemon cannot know the earlier ones were passed)."""
    t = max(r.step for r in curve)
    crossed = [rung for rung in rungs(settings) if rung <= t and (since is None or rung > since)]
    if since is None:
        crossed = crossed[-1:]
    for rung in crossed:
        mine = value_at_rung(curve, rung)
        recorded = [v for v in (o.value_at(rung) for o in others) if v is not None] + [mine]
        # the top 1/eta in the better direction: at or below the 1/eta quantile when minimising
        q = 100.0 / settings.reduction_factor if sign > 0 else 100.0 * (1 - 1 / settings.reduction_factor)
        cutoff = percentile(recorded, q)
        if sign * mine > sign * cutoff:
            return Decision.stop_it(f"ASHA: its value {mine:.6g} at rung {rung:g} is not in the top "
                                  f"1/{settings.reduction_factor:g} of the {len(recorded)} jobs that reached it "
                                  f"(cutoff {cutoff:.6g})")
    if not crossed:
        return Decision.go_on(f"no new rung reached by step {t:g}")
    return Decision.go_on(f"in the top 1/{settings.reduction_factor:g} at rung {crossed[-1]:g}")
