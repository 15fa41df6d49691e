"""The rules by name, and the checks every rule shares before the job's own rule is asked.

Whatever the rule, a job whose best value so far is better than the best final value of every
complete job (the incumbent's) is never stopped: it is on its way to be the new best. A rule is
a function ``(settings, curve, others, sign, incumbent, since) -> Decision`` (sign 1 to
minimise, -1 to maximise); a new rule is one more file and one more entry of :data:`RULES` (and
its options in :mod:`.settings`).
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..problem.settings import parse_direction
from .asha import asha_rule
from .curve import CurvePoint, Other, incumbent_of, running_best
from .decision import Decision
from .median import median_rule
from .model import model_rule
from .settings import ASHA, MEDIAN, MODEL, StoppingSettings

Rule = Callable[[StoppingSettings, Sequence[CurvePoint], Sequence[Other], float, "float | None", "float | None"],
                Decision]
RULES: dict[str, Rule] = {MEDIAN: median_rule, ASHA: asha_rule, MODEL: model_rule}


def decide(settings: StoppingSettings, curve: Sequence[CurvePoint], others: Sequence[Other],
           direction: str = "minimize", since: float | None = None) -> Decision:
    """Whether to stop a running job whose reports so far are ``curve`` (in file order), given
    the other jobs; ``since``: the last step at which this job was judged before (None: never,
    or not known). The checks every rule shares come first: min-steps, and the incumbent."""
    sign = parse_direction(direction)
    if not curve:
        return Decision.go_on("no report yet")
    step = max(r.step for r in curve)
    if step < settings.min_steps:
        return Decision.go_on(f"step {step:g} is below min-steps {settings.min_steps:g}")
    best = running_best(curve, sign)
    incumbent = incumbent_of(others, sign)
    if incumbent is not None and sign * best < sign * incumbent:
        return Decision.go_on(f"its best so far {best:.6g} beats the best final value {incumbent:.6g}")
    return RULES[settings.rule](settings, curve, others, sign, incumbent, since)
