"""The rules' registry: every rule the config key accepts has a function, and a decision can say
continue, stop or pause (the answer the freeze-thaw search adds)."""
from __future__ import annotations

from spearmint_nn.stopping.decision import Action, Decision
from spearmint_nn.stopping.rules import RULES, decide
from spearmint_nn.stopping.settings import RULE_NAMES, StoppingSettings
from spearmint_nn.stopping.curve import CurvePoint, Other


def test_every_rule_the_key_accepts_is_registered():
    assert set(RULES) == set(RULE_NAMES)


def test_a_decision_says_what_to_do_and_stop_reads_it():
    assert [Decision(action, "x").stop for action in Action] == [action is Action.STOP for action in Action]
    assert Decision.stop_it("y") == Decision(Action.STOP, "y") and not Decision.go_on("z").stop


def test_decide_asks_the_job_s_own_rule():
    """The median rule and the model rule answer the same curve differently: decide() dispatches."""
    complete = [Other([CurvePoint(1, 1.0 + i / 10), CurvePoint(2, 0.5 + i / 10)], 0.5 + i / 10) for i in range(5)]
    curve = [CurvePoint(1, 3.0), CurvePoint(2, 2.9)]
    median = decide(StoppingSettings(rule="median", min_jobs=5), curve, complete)
    model = decide(StoppingSettings(rule="model", min_jobs=5), curve, complete)
    assert median.stop and median.why.startswith("median rule:")
    assert model.stop and model.why.startswith("model:")
