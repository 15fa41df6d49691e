"""The early-stopping rules on synthetic curves, each number worked out by hand in a comment."""
from __future__ import annotations

import pytest

from helpers.experiments import quick_config, write_experiment
from spearmint_nn.errors import ConfigError
from spearmint_nn.experiment.config import load_config
from spearmint_nn.stopping.curve import CurvePoint
from spearmint_nn.stopping.asha import rungs
from spearmint_nn.stopping.curve import Other, percentile, running_best, value_at_rung
from spearmint_nn.stopping.prediction import Prediction, predict_final
from spearmint_nn.stopping.rules import decide
from spearmint_nn.stopping.settings import ASHA, MEDIAN, MODEL, StoppingSettings, parse_early_stopping


def curve(*points: tuple[float, float]) -> list[CurvePoint]:
    return [CurvePoint(step, value) for step, value in points]


# Three complete jobs whose running bests at step 2 are 0.8, 0.7 and 0.6: the median is 0.7.
COMPLETE = [Other(curve((1, 1.0), (2, 0.8), (3, 0.6)), final=0.5),
            Other(curve((1, 0.9), (2, 0.7), (3, 0.5)), final=0.4),
            Other(curve((1, 0.8), (2, 0.6), (3, 0.4)), final=0.3)]
MEDIAN_3 = StoppingSettings(rule=MEDIAN, min_jobs=3)


def test_percentile_interpolates_between_ranks_as_numpy():
    assert percentile([0.8, 0.7, 0.6], 50) == pytest.approx(0.7)
    # 6 values, the 33.3rd percentile lies 2/3 of the way from the 2nd (0.55) to the 3rd (0.6)
    assert percentile([0.5, 0.6, 0.7, 0.8, 0.9, 0.55], 100 / 3) == pytest.approx(0.55 + 0.05 * 2 / 3)


def test_median_rule_stops_a_job_worse_than_the_median_at_its_step():
    # best so far 1.1 by step 2 > the median 0.7 of the others' bests by step 2
    decision = decide(MEDIAN_3, curve((1, 1.2), (2, 1.1)), COMPLETE)
    assert decision.stop
    assert "1.1" in decision.why and "0.7" in decision.why


def test_median_rule_keeps_a_job_no_worse_than_the_median():
    # best so far 0.65 <= 0.7
    assert not decide(MEDIAN_3, curve((1, 0.75), (2, 0.65)), COMPLETE).stop
    # its best so far counts, not its last value: 0.69 at step 1, then 0.9 at step 2
    assert not decide(MEDIAN_3, curve((1, 0.69), (2, 0.9)), COMPLETE).stop


def test_median_rule_respects_min_steps_and_min_jobs():
    bad = curve((1, 1.2), (2, 1.1))
    assert not decide(StoppingSettings(rule=MEDIAN, min_jobs=3, min_steps=3), bad, COMPLETE).stop
    assert decide(StoppingSettings(rule=MEDIAN, min_jobs=3, min_steps=2), bad, COMPLETE).stop
    # 3 complete jobs reached step 2, fewer than 4
    assert not decide(StoppingSettings(rule=MEDIAN, min_jobs=4), bad, COMPLETE).stop
    # running and stopped jobs (no final value) are not the median's population (Optuna: complete trials)
    running = [Other(o.curve, None) for o in COMPLETE]
    assert not decide(MEDIAN_3, bad, running).stop
    # no complete job reached step 4: nothing to compare with
    assert not decide(MEDIAN_3, curve((1, 1.2), (4, 1.1)), COMPLETE).stop


def test_the_incumbent_is_never_stopped():
    # complete jobs that were good at step 2 (bests 0.2, 0.3, 0.4: median 0.3) but ended worse
    # (finals 0.9, 0.8, 0.7): a job at 0.5 is worse than the median, yet better than the best final 0.7
    others = [Other(curve((1, 0.2), (2, 0.2)), 0.9), Other(curve((1, 0.3), (2, 0.3)), 0.8),
              Other(curve((1, 0.4), (2, 0.4)), 0.7)]
    protected = decide(MEDIAN_3, curve((1, 0.6), (2, 0.5)), others)
    assert not protected.stop and "beats the best final value 0.7" in protected.why
    assert decide(MEDIAN_3, curve((1, 0.8), (2, 0.75)), others).stop  # 0.75: worse than 0.7 and than 0.3


def test_median_rule_maximising():
    # accuracies: the others' bests by step 2 are 0.3, 0.4, 0.5; median 0.4 (percentile 100 - 50)
    others = [Other(curve((1, 0.1), (2, 0.3)), 0.5), Other(curve((1, 0.2), (2, 0.4)), 0.6),
              Other(curve((1, 0.3), (2, 0.5)), 0.7)]
    assert decide(MEDIAN_3, curve((1, 0.1), (2, 0.2)), others, "maximize").stop       # 0.2 < 0.4
    assert not decide(MEDIAN_3, curve((1, 0.3), (2, 0.45)), others, "maximize").stop  # 0.45 >= 0.4
    # a lower percentile keeps more jobs: the 25th for maximising is the 75th of the values, 0.45
    strict = StoppingSettings(rule=MEDIAN, min_jobs=3, percentile=25)
    assert decide(strict, curve((1, 0.3), (2, 0.44)), others, "maximize").stop


ASHA_27 = StoppingSettings(rule=ASHA, max_steps=27, reduction_factor=3, min_resource=1)
# Five other jobs at rung 3 (first report at a step >= 3): 0.5, 0.6, 0.7, 0.8, 0.9
AT_RUNG_3 = [Other(curve((1, 0.9), (3, 0.5))), Other(curve((3, 0.6))), Other(curve((3, 0.7), (4, 0.1))),
             Other(curve((5, 0.8))), Other(curve((3, 0.9)))]


def test_asha_rungs_lie_below_max_steps():
    assert rungs(ASHA_27) == [1, 3, 9]
    assert rungs(StoppingSettings(rule=ASHA, max_steps=100, reduction_factor=4, min_resource=2)) == [2, 8, 32]


def test_asha_keeps_the_top_third_at_a_rung_and_stops_the_rest():
    # with 0.55: values 0.5 0.55 0.6 0.7 0.8 0.9, cutoff 0.55 + 0.05 * 2/3 = 0.5833: kept
    assert not decide(ASHA_27, curve((1, 0.95), (3, 0.55)), AT_RUNG_3, since=1).stop
    # with 0.65: values 0.5 0.6 0.65 0.7 0.8 0.9, cutoff 0.6 + 0.05 * 2/3 = 0.6333: stopped
    decision = decide(ASHA_27, curve((1, 0.95), (3, 0.65)), AT_RUNG_3, since=1)
    assert decision.stop and "rung 3" in decision.why and "0.633333" in decision.why


def test_asha_judges_each_rung_once_and_respects_min_steps():
    job = curve((1, 0.95), (3, 0.65), (4, 0.64))
    assert not decide(ASHA_27, job, AT_RUNG_3, since=3).stop  # rung 3 was judged at step 3
    assert decide(ASHA_27, job, AT_RUNG_3, since=None).stop   # a restarted daemon judges the rung reached
    assert not decide(StoppingSettings(rule=ASHA, max_steps=27, min_steps=5), job, AT_RUNG_3, since=1).stop
    # the first job to reach a rung is in its own top third
    assert not decide(ASHA_27, curve((1, 5.0)), [], since=None).stop


def test_asha_never_stops_the_incumbent_and_maximises():
    # 0.65 at rung 3 is outside the top third, but better than the best final value 0.66
    others = AT_RUNG_3 + [Other(curve((1, 0.99)), final=0.66)]
    assert not decide(ASHA_27, curve((1, 0.95), (3, 0.65)), others, since=1).stop
    # maximising, the top third is at or above the 66.7th percentile (position 5 * 2/3 = 3.33):
    # of 0.5 0.55 0.6 0.7 0.8 0.9 it is 0.7 + 0.1 / 3 = 0.7333 (0.55 stopped); of 0.5 0.6 0.7 0.8
    # 0.85 0.9 it is 0.8 + 0.05 / 3 = 0.8167 (0.85 kept)
    assert decide(ASHA_27, curve((1, 0.0), (3, 0.55)), AT_RUNG_3, "maximize", since=1).stop
    assert not decide(ASHA_27, curve((1, 0.0), (3, 0.85)), AT_RUNG_3, "maximize", since=1).stop


def test_the_key_parses_with_defaults_and_names_the_wrong_key():
    assert parse_early_stopping("early-stopping", None) is None
    assert parse_early_stopping("early-stopping", {}) == StoppingSettings(rule=MODEL)
    assert parse_early_stopping("early-stopping", {"rule": "ASHA", "max-steps": 50, "reduction-factor": 4}) == \
        StoppingSettings(rule=ASHA, max_steps=50, reduction_factor=4)
    cases = [({"rule": "median", "percentile": 150}, "early-stopping.percentile"),
             ({"min-jobs": 0}, "early-stopping.min-jobs"),
             ({"rule": "asha", "max-steps": 10, "min-resource": 10}, "early-stopping.min-resource"),
             ({"rule": "asha", "max-steps": 10, "reduction-factor": 1}, "early-stopping.reduction-factor"),
             ({"min-steps": 5, "max-steps": 5}, "early-stopping.min-steps"),
             ({"percentile": 40}, "early-stopping.percentile"),  # a median option, not the default model rule's
             ("median", "early-stopping")]
    for value, key in cases:
        with pytest.raises(ConfigError) as info:
            parse_early_stopping("early-stopping", value)
        assert str(info.value).startswith(key + ":"), (value, str(info.value))


def test_config_json_reads_the_key(tmp_path):
    wrapper = {"wrapper.py": "def main(job_id, params):\n    return 0.0\n"}
    key = {"early-stopping": {"rule": "median", "min-steps": 3}}
    folder = write_experiment(tmp_path / "exp", quick_config(**key), wrapper)
    assert load_config(folder, check_driver=False).early_stopping == StoppingSettings(rule=MEDIAN, min_steps=3)
    plain = write_experiment(tmp_path / "plain", quick_config(), wrapper)
    assert load_config(plain, check_driver=False).early_stopping is None


# Three complete jobs whose moves from their best by step 2 to their final value are -0.3
# (0.8 -> 0.5), -0.5 (0.7 -> 0.2) and -0.1 (0.6 -> 0.5): mean -0.3, sd 0.2, bandwidth
# 1.06 * 0.2 * 3^(-1/5) = 0.1702; the incumbent is 0.2.
MOVING = [Other(curve((1, 1.0), (2, 0.8)), 0.5), Other(curve((1, 0.9), (2, 0.7)), 0.2),
          Other(curve((1, 0.8), (2, 0.6)), 0.5)]


def test_the_model_rule_stops_a_job_unlikely_to_beat_the_incumbent():
    # best 0.75 by step 2: finals 0.45, 0.25, 0.65; P = mean(Phi(-1.469), Phi(-0.294), Phi(-2.644))
    # = mean(0.0709, 0.3845, 0.0041) = 0.153
    job = curve((1, 0.9), (2, 0.75))
    kept = decide(StoppingSettings(rule=MODEL, min_jobs=3), job, MOVING)
    assert not kept.stop and "= 0.153" in kept.why
    stopped = decide(StoppingSettings(rule=MODEL, min_jobs=3, probability=0.2), job, MOVING)
    assert stopped.stop and stopped.why.startswith("model: P(its final value beats the best 0.2) = 0.153 < 0.2")
    # best 0.9 (its last value 1.1 is worse): finals 0.6, 0.4, 0.8, P = mean(0.0094, 0.1201, 0.0002) = 0.0432
    assert decide(StoppingSettings(rule=MODEL, min_jobs=3), curve((1, 0.9), (2, 1.1)), MOVING).stop
    # min-jobs, min-steps and the incumbent as for every rule
    assert not decide(StoppingSettings(rule=MODEL, min_jobs=4), curve((1, 0.9), (2, 1.1)), MOVING).stop
    assert not decide(StoppingSettings(rule=MODEL, min_jobs=3, min_steps=3), curve((1, 0.9), (2, 1.1)), MOVING).stop
    assert not decide(StoppingSettings(rule=MODEL, min_jobs=3), curve((1, 0.9), (2, 0.19)), MOVING).stop


def test_the_model_rule_maximising():
    # accuracies moving +0.3, +0.5, +0.1 from their best by step 2 (0.2, 0.3, 0.4) to finals 0.5,
    # 0.8, 0.5: the incumbent is 0.8. A job at 0.25: finals 0.55, 0.75, 0.35, P(> 0.8) =
    # mean(Phi(-1.469), Phi(-0.294), Phi(-2.644)) = 0.153 again, by symmetry
    others = [Other(curve((1, 0.0), (2, 0.2)), 0.5), Other(curve((1, 0.1), (2, 0.3)), 0.8),
              Other(curve((1, 0.2), (2, 0.4)), 0.5)]
    settings = StoppingSettings(rule=MODEL, min_jobs=3, probability=0.2)
    decision = decide(settings, curve((1, 0.1), (2, 0.25)), others, "maximize")
    assert decision.stop and "= 0.153 < 0.2" in decision.why
    assert not decide(settings, curve((1, 0.1), (2, 0.45)), others, "maximize").stop


@pytest.mark.parametrize("points", [
    [(0, 0.9), (1, 0.7), (2, 0.8), (3, 0.4), (5, 0.5)],          # steps that grow (from 0)
    [(1, 0.9), (2, 0.7), (3, 0.6), (2, 0.65), (3, 0.5), (4, 0.3)],  # a resumed attempt goes back
    [(1, 0.5), (1, 0.4), (2, 0.45)]])                                 # a step repeated
def test_the_cached_lookups_of_another_job_are_the_plain_ones(points):
    other = Other(curve(*points))
    for sign in (1.0, -1.0):
        for t in (-1, 0, 0.5, 1, 2, 2.5, 3, 4, 5, 9):
            assert other.best_by(t, sign) == running_best(other.curve, sign, t), (sign, t)
            assert other.value_at(t) == value_at_rung(other.curve, t), t
    assert other.last_step == max(step for step, _ in points)
    assert Other([]).last_step is None and Other([]).best_by(3, 1.0) is None and Other([]).value_at(1) is None


def test_a_stopped_jobs_final_value_is_predicted_from_the_complete_jobs_moves():
    # moves after step 2: 0.5 - 0.8, 0.4 - 0.7, 0.3 - 0.6 = -0.3 each; best by step 2 is 1.5
    prediction = predict_final(curve((1, 2.0), (2, 1.5)), COMPLETE)
    assert prediction == Prediction(pytest.approx(1.2), pytest.approx(0.0), 3)
    # moves after step 1 of -0.4, -0.5 and -0.6: mean -0.5, sd 0.1
    spread = predict_final(curve((1, 2.0)), [Other(curve((1, 1.0), (2, 0.8)), final=0.6),
                                             Other(curve((1, 0.9), (2, 0.7)), final=0.4),
                                             Other(curve((1, 0.8), (2, 0.6)), final=0.2)])
    assert (spread.value, spread.sd, spread.jobs) == (pytest.approx(1.5), pytest.approx(0.1), 3)
    # maximising: the best by step 2 is 2.0 and the moves from the highest values by step 2 are
    # -0.5 each; 1.5 would beat the incumbent 0.5, so 0.5
    assert predict_final(curve((1, 2.0), (2, 1.5)), COMPLETE, "maximize").value == pytest.approx(0.5)


def test_a_prediction_is_never_better_than_the_incumbent_and_needs_three_complete_jobs():
    # 0.55 by step 2, minus 0.3, would be 0.25: below the incumbent 0.3, so 0.3
    assert predict_final(curve((1, 0.7), (2, 0.55)), COMPLETE).value == pytest.approx(0.3)
    assert predict_final(curve((1, 2.0), (2, 1.5)), COMPLETE[:2]) is None
    assert predict_final(curve((1, 2.0), (4, 1.5)), COMPLETE) is None  # none reached step 4
    assert predict_final([], COMPLETE) is None
