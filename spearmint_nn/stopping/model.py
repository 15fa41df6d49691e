"""The model rule: the chance that a job's final value beats the incumbent's, from where the
complete jobs' curves went after the job's step."""
from __future__ import annotations

import math
from typing import Sequence

from .curve import CurvePoint, Other, moves_after, running_best, sample_sd
from .decision import Decision
from .settings import StoppingSettings


def model_rule(settings: StoppingSettings, curve: Sequence[CurvePoint], others: Sequence[Other], sign: float,
               incumbent: float | None, since: float | None = None) -> Decision:
    """A model of where the job is heading, from the complete jobs' curves: stop it when the
    probability that its final value beats the incumbent's is below ``probability``.

    At the job's last step t, each complete job j whose curve reached t says how much a job
    still moves from its best by t to its final value: d_j = final_j - best_j(t). The job's
    final value is modelled as its best by t plus such a move, a mixture of normals centred on
    best + d_j with Silverman's bandwidth (1.06 sd n^(-1/5), and at least 1% of the moves'
    range and of the incumbent's size, so that identical moves still leave some doubt): the
    empirical predictive distribution of learning-curve extrapolation by analogy with the jobs
    that finished (the spirit of freeze-thaw's "how far will this curve still go", Swersky,
    Snoek and Adams 2014, without its kernel). It needs ``min-jobs`` complete jobs at t and an
    incumbent; then P(final better than the incumbent) = mean_j Phi((incumbent - (best + d_j)) / h),
    sign-flipped for maximisation."""
    t = max(r.step for r in curve)
    moves = moves_after(others, t, sign)
    if incumbent is None or len(moves) < settings.min_jobs:
        return Decision.go_on(f"{len(moves)} complete job(s) reached step {t:g}, fewer than min-jobs "
                               f"{settings.min_jobs}")
    best = running_best(curve, sign)
    n = len(moves)
    sd = sample_sd(moves)
    floor = 0.01 * max(max(moves) - min(moves), abs(incumbent), 1e-12)
    h = max(1.06 * sd * n ** -0.2, floor)
    chance = sum(0.5 * math.erfc(-sign * (incumbent - (best + d)) / (h * math.sqrt(2))) for d in moves) / n
    if chance < settings.probability:
        return Decision.stop_it(f"model: P(its final value beats the best {incumbent:.6g}) = {chance:.3g} < "
                              f"{settings.probability:g}, from its best {best:.6g} by step {t:g} and the moves "
                              f"after that step of {n} complete jobs")
    return Decision.go_on(f"P(its final value beats the best {incumbent:.6g}) = {chance:.3g}")
