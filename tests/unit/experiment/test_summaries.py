"""When the model's best (a noisy objective's best by the posterior mean) is worth showing."""
from __future__ import annotations

from spearmint_nn.experiment.summaries import model_best_min_jobs, model_best_shown
from spearmint_nn.problem.space import Space

SMALL = Space.from_config({"lr": {"type": "FLOAT", "size": 1, "min": 1e-4, "max": 1},
                           "act": {"type": "ENUM", "size": 1, "options": ["relu", "tanh", "gelu"]}})
WIDE = Space.from_config({"w": {"type": "FLOAT", "size": 8, "min": -1, "max": 1},
                          "act": {"type": "ENUM", "size": 1, "options": ["relu", "tanh"]}})


def test_at_least_ten_jobs_and_two_per_dimension():
    assert model_best_min_jobs(SMALL) == 10  # 2 elements: the floor of 10
    assert model_best_min_jobs(WIDE) == 18  # 9 elements (an ENUM is one, whatever its options)
    assert model_best_min_jobs(None) == 10  # no valid config: the floor


def test_both_the_completed_jobs_and_the_models_observations_must_reach_it():
    assert not model_best_shown({"observations": 30}, 9, SMALL)
    assert model_best_shown({"observations": 10}, 10, SMALL)
    assert not model_best_shown({"observations": 17}, 40, WIDE)  # fitted before the 18th
    assert model_best_shown({"observations": 18}, 18, WIDE)
    assert model_best_shown({}, 18, WIDE)  # a best.json without the count: the completed jobs decide
    assert not model_best_shown({}, 17, WIDE)
