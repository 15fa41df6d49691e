"""What the model says: importance finds the parameter the objective ignores, slices and the
contour are in the user's units and sign, every transform is inverted."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from spearmint_nn.search.model_picture import elements, monotone_inverse
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.problem.space import Space
from spearmint_nn.search.transforms import OUTPUT_TRANSFORMS

torch.set_num_threads(1)

THREE = {"a": {"type": "FLOAT", "min": 0, "max": 1}, "ignored": {"type": "FLOAT", "min": 0, "max": 1},
         "b": {"type": "FLOAT", "min": 0, "max": 1}}


def _steep_in_a_gentle_in_b(p) -> float:
    return 4 * (float(p["a"][0]) - 0.3) ** 2 + math.sin(3 * float(p["b"][0]))


@pytest.mark.parametrize("model", ["gp", "dngo"])
def test_the_parameter_the_objective_ignores_is_the_least_important(model):
    opt = Optimizer(THREE, model=model, seed=0, initial_design=30)
    for params in opt.suggest(30):
        opt.observe(params, _steep_in_a_gentle_in_b(params))
    picture = opt.model_picture()
    share = {item["name"]: item for item in picture["importance"]}
    assert list(share) == ["a", "ignored", "b"]
    # a broken estimate (uniform, random or reversed) would not order them: a >> b >> ignored
    assert share["ignored"]["mean"] < 0.05 < share["b"]["mean"] < share["a"]["mean"]
    # the function is additive, so the main effects hold all of its variance: a 0.78, b 0.22 (exact)
    assert 0.85 < sum(item["mean"] for item in picture["importance"]) < 1.05
    assert 0.6 < share["a"]["mean"] < 0.9
    assert all(item["std"] >= 0 for item in picture["importance"])
    assert picture["samples"] >= 1 and picture["model"] == model and picture["observations"] == 30
    # the contour takes the two most important
    assert (picture["contour"]["x_name"], picture["contour"]["y_name"]) == ("a", "b")


def test_slices_are_in_the_users_units_and_sign_through_the_best_point():
    space = {"lr": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"},
             "act": {"type": "ENUM", "options": ["relu", "tanh"]}, "units": {"type": "INT", "min": 1, "max": 4}}

    def accuracy(p):  # maximised: best near lr = 1e-2 with tanh
        return 10 - (math.log10(float(p["lr"][0])) + 2) ** 2 - (0 if p["act"][0] == "tanh" else 3) - 0.1 * int(p["units"][0])

    opt = Optimizer(space, model="gp", seed=1, direction="maximize", initial_design=24)
    for params in opt.suggest(24):
        opt.observe(params, accuracy(params))
    picture = opt.model_picture()
    cuts = {cut["name"]: cut for cut in picture["slices"]}
    lr = np.asarray(cuts["lr"]["x"])
    assert lr.min() == pytest.approx(1e-4) and lr.max() == pytest.approx(1.0) and (np.diff(np.log(lr)) > 0).all()
    mean = np.asarray(cuts["lr"]["mean"])
    assert 1e-3 < lr[mean.argmax()] < 1e-1  # the user's sign: a maximum, near 1e-2
    assert cuts["act"]["x"] == ["relu", "tanh"] and cuts["act"]["mean"][1] > cuts["act"]["mean"][0] + 1
    assert cuts["units"]["x"][0] == 1 and cuts["units"]["x"][-1] == 4
    low, high = np.asarray(cuts["lr"]["low"]), np.asarray(cuts["lr"]["high"])
    assert (np.minimum(low, high) <= mean + 1e-9).all() and (mean <= np.maximum(low, high) + 1e-9).all()
    best_params, best_value = opt.incumbent
    assert max(mean) == pytest.approx(best_value, abs=1.0)  # through the best point: the model agrees with it
    assert "contour" not in picture or picture["contour"]["x_name"] != "act"  # an ENUM has no contour axis


def test_no_picture_without_a_model():
    opt = Optimizer(THREE, model="sobol", seed=0)
    for params in opt.suggest(5):
        opt.observe(params, 1.0)
    assert opt.model_picture() is None
    assert Optimizer(THREE, model="gp", seed=0).model_picture() is None


@pytest.mark.parametrize("name", sorted(OUTPUT_TRANSFORMS))
def test_every_output_transform_is_inverted_on_the_observed_range(name):
    y = np.random.default_rng(0).lognormal(0, 1.5, 40) + 3.0
    transform = OUTPUT_TRANSFORMS[name].fit(y)
    inverse = monotone_inverse(transform, y)
    np.testing.assert_allclose(inverse(transform(y)), y, rtol=1e-3, atol=1e-3 * np.ptp(y))


def test_elements_name_each_column_of_vectors_and_options():
    space = Space.from_config({"w": {"type": "FLOAT", "size": 2, "min": 0, "max": 1},
                               "act": {"type": "ENUM", "options": ["a", "b", "c"]}})
    found = [(e.label, e.columns) for e in elements(space)]
    assert found == [("w[0]", [0]), ("w[1]", [1]), ("act", [2, 3, 4])]


def test_a_conditional_parameter_inactive_at_the_best_point_has_no_slice():
    space = {"layers": {"type": "INT", "min": 1, "max": 2},
             "width_2": {"type": "INT", "min": 4, "max": 64, "scale": "log", "when": {"layers": 2}},
             "lr": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"}}

    def loss(p):  # one layer is better: the best point has no width_2
        return (math.log10(float(p["lr"][0])) + 2) ** 2 + (1.0 if int(p["layers"][0]) == 2 else 0.0)

    opt = Optimizer(space, model="gp", seed=0, initial_design=16)
    for params in opt.suggest(16):
        opt.observe(params, loss(params))
    assert "width_2" not in opt.incumbent[0]
    picture = opt.model_picture()
    assert [item["name"] for item in picture["importance"]] == ["layers", "width_2", "lr"]
    assert [cut["name"] for cut in picture["slices"]] == ["layers", "lr"]
    assert {picture["contour"]["x_name"], picture["contour"]["y_name"]} == {"layers", "lr"}
    share = {item["name"]: item["mean"] for item in picture["importance"]}
    assert share["lr"] > share["width_2"]  # width_2 matters nowhere in this objective
