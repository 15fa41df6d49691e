"""The real hyperparameter tasks: Bayesmark's spaces warped to a box and mapped back, names
checked before anything is built, and the models' cross-validated losses deterministic and
telling good settings from bad ones."""
from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.benchmarks import hpo
from experiments.benchmarks.problems import get_function, is_function


def test_names_are_checked_without_scikit_learn():
    assert hpo.parse_name("hpo-svm-wine-nll") == ("svm", "wine", "nll")
    for name, says in [("hpo-xgb-wine-nll", "model one of"), ("hpo-svm-boston-mse", "dataset one of"),
                       ("hpo-svm-diabetes-acc", "regression dataset"), ("hpo-svm-wine-mse", "classification"),
                       ("hpo-lasso-diabetes-mse", "but lasso and linear")]:
        with pytest.raises(ValueError, match=says):
            hpo.parse_name(name)
        assert not is_function(name)
    assert all(is_function(task) for task in hpo.TASKS) and len(set(hpo.TASKS)) == len(hpo.TASKS) == 24


def test_the_box_is_the_warped_range_and_maps_back_to_bayesmarks_values():
    alpha = hpo.Hyperparameter("alpha", 1e-5, 1e1, "log")
    assert alpha.box == pytest.approx((-5.0, 1.0)) and alpha.value(-2.0) == pytest.approx(1e-2)
    beta = hpo.Hyperparameter("beta_2", 0.9, 1 - 1e-6, "logit")
    low, high = beta.box
    assert beta.value(low) == pytest.approx(0.9) and beta.value(high) == pytest.approx(1 - 1e-6)
    assert beta.value(high + 5) == pytest.approx(1 - 1e-6)  # clipped into the range
    depth = hpo.Hyperparameter("max_depth", 1, 15, integer=True)
    assert depth.box == (1, 15) and depth.value(7.4) == 7 and isinstance(depth.value(7.6), int)
    mlp = get_function("hpo-mlp-wine-nll")
    assert mlp.dim == 9 and math.isnan(mlp.minimum) and mlp.bounds[1] == pytest.approx((-5.0, 1.0))


def test_a_task_is_a_deterministic_loss_that_tells_good_settings_from_bad():
    pytest.importorskip("sklearn", reason="the tasks' models: pip install -r experiments/benchmarks/requirements.txt")
    task = get_function("hpo-linear-wine-nll")  # (log10 C, log10 intercept_scaling): log loss
    good = np.array([0.0, 0.0])
    assert task.function(good) == task.function(good)  # the same CV split and seed every time
    # C = 1 between a penalty too strong and one too weak (0.15 against 0.40 and 0.30 here)
    assert 0 < task.function(good) < 0.2 < task.function(np.array([2.0, 2.0])) < task.function(np.array([-2.0, -2.0]))
    error_rate = get_function("hpo-linear-breast-acc").function(good)  # 1 - accuracy
    assert 0 < error_rate < 0.1
    regression = get_function("hpo-knn-diabetes-mse")  # (n_neighbors, p)
    assert regression.function(np.array([15.0, 2.0])) < regression.function(np.array([1.0, 2.0]))


@pytest.mark.slow  # about 5 s: every task once
def test_every_task_evaluates_to_a_finite_loss_at_its_box_centre():
    pytest.importorskip("sklearn", reason="the tasks' models: pip install -r experiments/benchmarks/requirements.txt")
    for name in hpo.TASKS:
        task = get_function(name)
        value = task.function(np.array([(low + high) / 2 for low, high in task.bounds]))
        assert math.isfinite(value) and value >= 0, name
