"""Related searches as other tasks: variables matched by name and type, each point encoded
through its own ranges, a subset beyond the GP's reach, and the Optimizer's ``related=``."""
from __future__ import annotations

import numpy as np
import pytest

from spearmint_nn.errors import ConfigError
from spearmint_nn.models.multitask_gp import MultiTaskGP
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.related import RelatedTask, related_task, subset_for_the_gp
from spearmint_nn.problem.space import Space

VARIABLES = {
    "lr": {"type": "FLOAT", "min": 1e-5, "max": 1.0, "scale": "log"},
    "layers": {"type": "INT", "min": 1, "max": 8},
    "act": {"type": "ENUM", "options": ["relu", "tanh"]},
}
SPACE = Space.from_config(VARIABLES)


def _with(**changes):
    variables = {name: dict(spec) for name, spec in VARIABLES.items()}
    for name, spec in changes.items():
        if spec is None:
            del variables[name]
        else:
            variables[name].update(spec)
    return variables


def test_each_related_point_is_encoded_through_its_own_ranges_in_this_searchs_columns():
    # The related search listed its variables in another order and searched lr over [1e-4, 1e-2].
    theirs = {"act": VARIABLES["act"], "layers": VARIABLES["layers"],
              "lr": {"type": "FLOAT", "min": 1e-4, "max": 1e-2, "scale": "log"}}
    results = [({"lr": [1e-2], "layers": [8], "act": ["tanh"]}, 2.0),
               ({"lr": [1e-3], "layers": [1], "act": ["relu"]}, {"main": 1.0}),
               ({"lr": [1e-4], "layers": [4], "act": ["relu"]}, float("nan")),  # a failure: left out
               ({"lr": [5.0], "layers": [4], "act": ["relu"]}, 0.5)]  # outside its own space: left out
    task = related_task(SPACE, theirs, results, "old")
    assert task.y.tolist() == [2.0, 1.0]
    lr, layers = SPACE.value_columns("lr"), SPACE.value_columns("layers")
    assert task.X[0, lr] == pytest.approx(1.0) and task.X[1, lr] == pytest.approx(0.5)  # its own log range
    assert task.X[0, layers] == pytest.approx(7.5 / 8) and task.X[1, layers] == pytest.approx(0.5 / 8)
    assert task.X[0, SPACE.value_columns("act")].tolist() == [0.0, 1.0]
    maximised = related_task(SPACE, theirs, results[:1], "old", sign=-1.0)
    assert maximised.y.tolist() == [-2.0]


@pytest.mark.parametrize("changes, path, words", [
    ({"layers": None}, "old", "'layers' is only in this experiment"),
    ({"depth": {"type": "INT", "min": 1, "max": 3}}, "old", "'depth' is only in the related experiment"),
    ({"layers": {"type": "FLOAT"}}, "old.variables.layers.type", "is 'FLOAT' in the related experiment, 'INT' here"),
    ({"lr": {"size": 2}}, "old.variables.lr.size", "is 2 in the related experiment, 1 here"),
    ({"act": {"options": ["relu", "gelu"]}}, "old.variables.act.options", "['relu', 'gelu'] in the related"),
])
def test_a_mismatched_variable_is_named(changes, path, words):
    variables = _with(**{k: v for k, v in changes.items() if k in VARIABLES})
    variables.update({k: v for k, v in changes.items() if k not in VARIABLES})
    with pytest.raises(ConfigError) as error:
        related_task(SPACE, variables, [], "old")
    assert error.value.path == path and words in error.value.problem


def test_the_subset_keeps_each_tasks_best_and_a_spread_of_the_rest_within_the_limit():
    rng = np.random.default_rng(0)
    big = RelatedTask("big", rng.random((1000, 2)), rng.random(1000))
    small = RelatedTask("small", rng.random((40, 2)), rng.random(40))
    kept_big, kept_small = subset_for_the_gp([big, small], limit=300)
    assert len(kept_small) == 40 and len(kept_big) == 150
    best = np.sort(big.y)[:75]
    assert np.isin(best, kept_big.y).all()  # the best half-share is kept whole
    rest = kept_big.y[~np.isin(kept_big.y, best)]
    assert rest.min() > best.max() and rest.max() > np.quantile(big.y, 0.8)  # and a draw from the rest


def _quadratic(params):
    return float((np.log10(params["lr"][0]) + 2.5) ** 2 + 0.3 * abs(params["layers"][0] - 3)
                 + (params["act"][0] == "tanh") * 0.4)


@pytest.mark.slow
def test_the_optimizer_models_related_searches_with_the_multi_task_gp_and_says_how_they_correlate():
    rng = np.random.default_rng(1)
    results = [(params, _quadratic(params)) for params in SPACE.decode(rng.random((25, SPACE.dim)))]
    opt = Optimizer(VARIABLES, seed=0, initial_design=3, related=[(VARIABLES, results)],
                    model_options={"n_samples": 6, "burn_in": 20})
    assert [task.name for task in opt.related] == ["related 1"] and len(opt.related[0]) == 25
    assert opt.related_summary()[0]["correlation"] is None  # nothing fitted yet
    for _ in range(8):
        params = opt.suggest(1)[0]
        opt.observe(params, _quadratic(params))
    assert isinstance(opt.models.objective, MultiTaskGP)
    (summary,) = opt.related_summary()
    assert summary["observations"] == summary["used"] == 25
    mean, sd = summary["correlation"]
    assert -1.0 <= mean <= 1.0 and 0.0 <= sd <= 1.0


def test_related_searches_need_a_gp_and_two_successes():
    results = [({"lr": [1e-3], "layers": [2], "act": ["relu"]}, 1.0)]
    with pytest.raises(ConfigError) as error:
        Optimizer(VARIABLES, model="dngo", related=[(VARIABLES, results)])
    assert error.value.path == "related" and "'dngo'" in error.value.problem
    assert Optimizer(VARIABLES, related=[(VARIABLES, results)]).related == ()  # one result teaches nothing
