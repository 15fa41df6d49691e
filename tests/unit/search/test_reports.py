"""Reports from the model. The model's best (Optimizer.best_by_model): for a noisy objective a
better report than the luckiest draw, in the user's units and sign, for the GP and DNGO, over all
the observations after a restart, and mapped back through nonlinear output transforms. What the
model says (Optimizer.model_picture): importance finds the parameter the objective ignores,
slices and the contour are in the user's units and sign, every transform is inverted."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from spearmint_nn.problem.space import Space
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.reports import elements, in_units, posterior_in_units
from spearmint_nn.search.transforms import OUTPUT_TRANSFORMS, LogShift, Standardisation, YeoJohnson
from helpers.models import FixedPosterior

torch.set_num_threads(1)

LINE = {"x": {"type": "FLOAT", "min": 0, "max": 1}}
OFFSET = 1000.0  # far from 0, so a value left in standardised units is obviously wrong
NOISE = 10.0


def true_f(x: float) -> float:
    """A bowl whose values (0 to 98 above OFFSET) are not much larger than the noise."""
    return 200.0 * (x - 0.3) ** 2 + OFFSET


def noisy_run(seed: int, model: str = "auto", direction: str = "minimize") -> Optimizer:
    """30 observations of true_f plus N(0, NOISE^2) on a Sobol design, GAUSSIAN likelihood."""
    sign = 1.0 if direction == "minimize" else -1.0
    opt = Optimizer(LINE, model=model, seed=seed, direction=direction)
    rng = np.random.default_rng(seed)
    for x in opt.space.sobol(30, seed=seed)[:, 0]:
        opt.observe({"x": [x]}, sign * (true_f(x) + NOISE * rng.standard_normal()))
    return opt


@pytest.mark.slow
def test_the_models_best_is_truly_better_than_the_luckiest_draw_and_in_user_units():
    model_regret, lucky_regret = [], []
    for seed in range(10):
        opt = noisy_run(seed)
        best = opt.best_by_model()
        x_best = float(best.params["x"][0])
        lucky_params, lucky_value = opt.incumbent
        model_regret.append(true_f(x_best) - OFFSET)
        lucky_regret.append(true_f(float(lucky_params["x"][0])) - OFFSET)
        # the observation it names, in the user's units
        assert opt.space.encode([best.params])[0] == pytest.approx(opt._data.X[best.index])
        assert best.observed == pytest.approx(opt._data.objective[best.index])
        # the posterior of f there, in the user's units: within a few std of the truth, and
        # narrower than the noise (it averages neighbours) but not collapsed
        assert abs(best.mean - true_f(x_best)) < 4 * best.std, (seed, best)
        assert 0.5 < best.std < NOISE, (seed, best)
    # Measured: 0.81 against 2.14 on average, 0.36 against 0.84 in the median.
    assert sum(model_regret) < 0.5 * sum(lucky_regret), (model_regret, lucky_regret)
    assert sum(m <= luck for m, luck in zip(model_regret, lucky_regret)) >= 7, (model_regret, lucky_regret)


@pytest.mark.slow
def test_dngo_reports_its_best_in_user_units_and_maximising_flips_the_sign():
    for seed in range(2):
        best = noisy_run(seed, model="dngo").best_by_model()
        x_best = float(best.params["x"][0])
        assert abs(best.mean - true_f(x_best)) < 4 * best.std and 0.5 < best.std < 3 * NOISE, (seed, best)
        assert true_f(x_best) - OFFSET < 10.0
    minimised = noisy_run(0).best_by_model()
    maximised = noisy_run(0, direction="maximize").best_by_model()  # the same values, negated
    assert maximised.index == minimised.index
    assert maximised.mean == pytest.approx(-minimised.mean, rel=1e-3)
    assert maximised.observed == -minimised.observed and maximised.std == pytest.approx(minimised.std, rel=1e-3)


def test_after_a_restart_the_best_is_sought_among_all_observations():
    # The first 20 observations hold the bowl's floor; then ten without improvement restart the
    # search (initial design 2: earliest restart at 20), and three more are all high.
    opt = Optimizer(LINE, model="gp", seed=0, initial_design=2, model_options={"burn_in": 20, "n_samples": 4})
    xs = np.concatenate([np.linspace(0.0, 1.0, 20), [0.85, 0.9, 0.95]])
    for x in xs:
        opt.observe({"x": [x]}, true_f(x))
    assert opt.search_start == 20
    opt.suggest(1)  # fits the objective model to the three of the new segment
    segment_model = opt.models.objective
    best = opt.best_by_model()
    assert opt.models.objective is segment_model  # the search's own model is left as it was
    assert best.index == 6 and abs(float(best.params["x"][0]) - 0.3) < 0.05  # x = 0.316, the floor
    assert abs(best.mean - true_f(6 / 19)) < 1.0


def test_no_model_no_report():
    assert Optimizer(LINE, model="sobol", seed=0).best_by_model() is None
    opt = Optimizer(LINE, seed=0)
    assert opt.best_by_model() is None
    opt.observe({"x": [0.2]}, 1.0)
    opt.observe({"x": [0.4]}, math.nan)
    assert opt.best_by_model() is None  # one value: nothing to fit
    constrained = Optimizer(LINE, seed=0, tasks={"f": "OBJECTIVE", "c": "CONSTRAINT"})
    for x in (0.2, 0.5, 0.8):
        constrained.observe({"x": [x]}, {"f": x, "c": -1.0})
    assert constrained.best_by_model() is None  # nothing feasible


@pytest.mark.parametrize("transform", [
    Standardisation.fit(np.array([1.0, 2.0, 7.0])),
    LogShift.fit(np.array([1.0, 2.0, 7.0, 30.0])),
    YeoJohnson.fit(np.array([1.0, 2.0, 7.0, 30.0, 31.0])),
])
def test_in_units_undoes_every_output_transform(transform):
    y = np.array([1.0, 1.5, 2.0, 7.0, 30.0])
    assert in_units(transform, transform(y), y) == pytest.approx(y, rel=1e-9, abs=1e-9)
    # beyond the image of the bracket (ten ranges around the values): its ends
    far = in_units(transform, np.array([-1e6, 1e6]), y)
    assert far[0] >= y.min() - 10 * np.ptp(y) - 1e-9 and far[1] == pytest.approx(y.max() + 10 * np.ptp(y))


class FixedLatent(FixedPosterior):
    """FixedPosterior, asked as the Surrogate interface asks (for the latent f)."""

    def posterior(self, X: torch.Tensor, observation_noise: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean, self.var


def test_posterior_in_units_maps_mean_and_spread_back_through_the_transform():
    y = np.array([10.0, 20.0, 30.0])
    linear = Standardisation.fit(y)  # y = 20 + 8.165 z
    model = FixedLatent(torch.tensor([[0.5], [1.5]], dtype=torch.float64),
                        torch.tensor([[0.04], [0.04]], dtype=torch.float64))
    mean, std = posterior_in_units(model, linear, torch.zeros(1, 1), y)
    # a mixture of N(0.5, 0.2^2) and N(1.5, 0.2^2) in z: mean 1, std sqrt(0.04 + 0.25)
    assert mean == pytest.approx(20 + linear.std * 1.0, rel=2e-3)
    assert std == pytest.approx(linear.std * math.sqrt(0.29), rel=2e-2)


# ---- the picture ---------------------------------------------------------------------------

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
def test_every_output_transform_is_inverted_exactly_on_the_observed_range(name):
    y = np.random.default_rng(0).lognormal(0, 1.5, 40) + 3.0
    transform = OUTPUT_TRANSFORMS[name].fit(y)
    np.testing.assert_allclose(in_units(transform, transform(y), y), y, rtol=1e-9)


def test_a_draw_beyond_what_the_transform_produces_is_taken_at_the_end_on_its_side():
    y = np.array([1.0, 2.0, 7.0, 30.0])
    class Bounded:  # an increasing transform whose inverse is undefined beyond (-1, 1), as a Yeo-Johnson power's can be
        def __call__(self, u):
            return np.tanh((np.asarray(u) - 10.0) / 10.0)
        def untransform(self, z):
            z = np.asarray(z, dtype=float)
            return np.where(np.abs(z) < 1, 10.0 + 10.0 * np.arctanh(np.clip(z, -0.999999, 0.999999)), np.nan)
    low, middle, high = in_units(Bounded(), np.array([-3.0, 0.0, 3.0]), y)
    assert (low, high) == (1.0 - 10 * 29.0, 30.0 + 10 * 29.0) and middle == pytest.approx(10.0)


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
