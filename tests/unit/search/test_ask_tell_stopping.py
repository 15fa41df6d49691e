"""Early stopping in ask/tell (Optimizer.report, should_stop, stop_decision, tell_stopped): the
daemon's rules and options on curves told point by point, each number worked out by hand."""
from __future__ import annotations

import warnings

import pytest

from spearmint_nn import Optimizer
from spearmint_nn.errors import ConfigError

VARIABLES = {"x": {"type": "FLOAT", "min": 0.0, "max": 1.0}}


def optimizer(**keywords) -> Optimizer:
    return Optimizer(VARIABLES, model="sobol", seed=0, **keywords)


def tell(opt: Optimizer, x: float, *reports: tuple[float, float], final: float | None = None) -> dict:
    params = {"x": x}
    for step, value in reports:
        opt.report(params, step, value)
    if final is not None:
        opt.observe(params, final)
    return params


def test_the_median_rule_against_the_observed_points_curves():
    opt = optimizer(early_stopping={"rule": "median", "min-steps": 2, "min-jobs": 2})
    tell(opt, 0.1, (1, 0.5), (2, 0.4), (3, 0.3), final=0.3)
    tell(opt, 0.2, (1, 0.7), (2, 0.6), (3, 0.5), final=0.5)
    c = tell(opt, 0.3, (1, 0.9))
    assert opt.stop_decision(c).why == "step 1 is below min-steps 2"
    # at step 2 the observed points' best values by step 2 are 0.4 and 0.6: median 0.5 < 0.55
    opt.report(c, 2, 0.55)
    decision = opt.stop_decision(c)
    assert opt.should_stop(c) and decision.why == ("median rule: its best value 0.55 by step 2 is worse than the "
                                                   "median 0.5 of 2 complete jobs at that step")
    assert opt.stop_decision(c) is decision  # no new report: the same answer
    d = tell(opt, 0.4, (2, 0.45))  # 0.45 <= 0.5
    assert not opt.should_stop(d) and "no worse than the median 0.5" in opt.stop_decision(d).why
    e = tell(opt, 0.5, (2, 0.25))  # worse than nothing: its 0.25 beats the incumbent's final 0.3
    assert opt.stop_decision(e).why == "its best so far 0.25 beats the best final value 0.3"
    opt.report(c, 3, 0.2)  # c's curve grew: judged again, and now it beats the incumbent
    assert not opt.should_stop(c)
    assert opt.stop_decision({"x": 0.1}).why == "observed: it has finished"
    assert opt.stop_decision({"x": 0.9}).why == "no report yet"


def test_the_median_rule_when_maximising():
    opt = optimizer(direction="maximize", early_stopping={"rule": "median", "min-jobs": 2})
    tell(opt, 0.1, (2, 0.6), final=0.7)
    tell(opt, 0.2, (2, 0.4), final=0.5)
    # the median of 0.6 and 0.4 is 0.5: 0.45 is below it (worse), 0.55 above
    assert opt.should_stop(tell(opt, 0.3, (2, 0.45)))
    assert not opt.should_stop(tell(opt, 0.4, (2, 0.55)))


def test_asha_judges_each_rung_once_on_every_point_that_reached_it():
    # rungs at 1 and 3 (min-resource 1, reduction factor 3, below max-steps 9)
    opt = optimizer(early_stopping={"rule": "asha", "max-steps": 9})
    a = tell(opt, 0.1, (1, 0.2))
    assert not opt.should_stop(a)  # alone at rung 1: the cutoff is its own 0.2
    tell(opt, 0.2, (1, 0.5))
    c = tell(opt, 0.3, (1, 0.8))
    # values at rung 1: 0.2, 0.5, 0.8; the 33.3rd percentile is 0.2 + (0.5 - 0.2) * 2/3 = 0.4 < 0.8
    assert opt.stop_decision(c).why == ("ASHA: its value 0.8 at rung 1 is not in the top 1/3 of the 3 jobs that "
                                        "reached it (cutoff 0.4)")
    opt.report(c, 2, 0.1)  # rung 1 was judged; no rung in (1, 2]
    assert opt.stop_decision(c).why == "no new rung reached by step 2"


def test_the_model_rule_takes_its_options_too():
    opt = optimizer(early_stopping={"rule": "model", "min-jobs": 2, "probability": 0.5})
    tell(opt, 0.1, (2, 0.4), final=0.3)
    tell(opt, 0.2, (2, 0.6), final=0.5)
    # both moved by -0.1 after step 2: 0.7 heads for 0.6, 100 bandwidths (0.01 * 0.3) above the best 0.3
    c = tell(opt, 0.3, (2, 0.7))
    assert opt.should_stop(c) and opt.stop_decision(c).why == (
        "model: P(its final value beats the best 0.3) = 0 < 0.5, from its best 0.7 by step 2 and the moves after "
        "that step of 2 complete jobs")


def test_a_stopped_point_stays_pending_is_no_value_and_its_curve_stays_for_the_rules():
    opt = optimizer(early_stopping={"rule": "asha", "max-steps": 9})
    handed = opt.suggest(1)[0]
    opt.report(handed, 1, 0.1)
    opt.tell_stopped(handed)
    assert len(opt.pending) == 1 and opt.pending[0]["x"] == pytest.approx(handed["x"])
    assert opt.should_stop(handed) and opt.stop_decision(handed).why == "told stopped before"
    elsewhere = {"x": 0.77}  # stopped, not handed out: pending from now on, once
    opt.tell_stopped(elsewhere)
    opt.tell_stopped(elsewhere)
    assert sorted(p["x"][0] for p in opt.pending) == pytest.approx(sorted([handed["x"][0], 0.77]))
    assert opt.incumbent is None and opt.n_observed == 0
    # rung 1 holds the stopped point's 0.1 and 0.5: the 33.3rd percentile is 0.1 + 0.4 / 3 = 0.2333 < 0.5
    # (alone, 0.5 would be its own cutoff and kept)
    assert "(cutoff 0.233333)" in opt.stop_decision(tell(opt, 0.5, (1, 0.5))).why
    opt.observe({"x": 0.2}, 1.0)
    with pytest.raises(ValueError, match="was observed"):
        opt.tell_stopped({"x": 0.2})


def test_refused_reports_change_nothing_and_a_nan_value_is_skipped_with_a_warning():
    opt = optimizer()
    with pytest.raises(ValueError, match="step"):
        opt.report({"x": 0.5}, "one", 1.0)
    with pytest.raises(ValueError, match="value"):
        opt.report({"x": 0.5}, 1, "low")
    with pytest.raises(ConfigError):
        opt.report({"x": 2.0}, 1, 1.0)
    with pytest.warns(UserWarning, match="not finite"):
        opt.report({"x": 0.5}, 1, float("nan"))
    assert opt.stop_decision({"x": 0.5}).why == "no report yet"


def test_wrong_options_name_the_option():
    with pytest.raises(ConfigError, match="early_stopping.percentil"):
        optimizer(early_stopping={"rule": "median", "percentil": 40})
    with pytest.raises(ConfigError, match="early_stopping.max-steps"):
        optimizer(early_stopping={"rule": "asha"})


def test_the_options_change_no_proposal():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = optimizer().suggest(4)
        stopping = optimizer(early_stopping={"rule": "asha", "max-steps": 9}).suggest(4)
    assert [p["x"].tolist() for p in plain] == [p["x"].tolist() for p in stopping]


def test_a_point_stopped_past_three_observed_curves_is_observed_at_its_predicted_final_value():
    opt = optimizer(early_stopping={"rule": "median", "min-jobs": 3})
    tell(opt, 0.1, (1, 1.0), (2, 0.8), final=0.6)  # moves after step 1: -0.4, -0.5, -0.6
    tell(opt, 0.2, (1, 0.9), (2, 0.7), final=0.4)
    tell(opt, 0.3, (1, 0.8), (2, 0.6), final=0.2)
    stopped = tell(opt, 0.4, (1, 2.0))
    assert opt.should_stop(stopped)  # 2.0 by step 1, worse than the median 0.9
    prediction = opt.tell_stopped(stopped)
    assert (prediction.value, prediction.sd, prediction.jobs) == (pytest.approx(1.5), pytest.approx(0.1), 3)
    assert opt.tell_stopped(stopped) is prediction  # told again: nothing changes
    assert opt.n_observed == 4 and opt.pending == [] and opt.should_stop(stopped)
    assert opt.incumbent[1] == pytest.approx(0.2)
    # to the rules it is still a curve without a final value: the median at step 1 stays that of
    # the three observed points (0.9), not of four finals
    assert opt.should_stop(tell(opt, 0.5, (1, 0.95)))
    assert not opt.should_stop(tell(opt, 0.6, (1, 0.85)))
    # a prediction never beats the incumbent: 0.5 by step 1, less 0.5, is 0.0 < 0.2
    assert opt.tell_stopped(tell(opt, 0.7, (1, 0.5))).value == pytest.approx(0.2)
    assert opt.incumbent[0]["x"] == pytest.approx(0.3)
