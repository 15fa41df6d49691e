"""The model's best (Optimizer.best_by_model): for a noisy objective a better report than the
luckiest draw, in the user's units and sign, for the GP and DNGO, over all the observations
after a restart, and mapped back through nonlinear output transforms."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from spearmint_nn.search.model_best import invert, posterior_in_units
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.transforms import LogShift, Standardise, YeoJohnson
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
    Standardise.fit(np.array([1.0, 2.0, 7.0])),
    LogShift.fit(np.array([1.0, 2.0, 7.0, 30.0])),
    YeoJohnson.fit(np.array([1.0, 2.0, 7.0, 30.0, 31.0])),
])
def test_invert_undoes_every_output_transform(transform):
    y = np.array([1.0, 1.5, 2.0, 7.0, 30.0])
    assert invert(transform, transform(y), y) == pytest.approx(y, rel=1e-9, abs=1e-9)
    # beyond the image of the bracket (ten ranges around the values): its ends
    far = invert(transform, np.array([-1e6, 1e6]), y)
    assert far[0] >= y.min() - 10 * np.ptp(y) - 1e-9 and far[1] == pytest.approx(y.max() + 10 * np.ptp(y))


class FixedLatent(FixedPosterior):
    """FixedPosterior, asked as the Surrogate interface asks (for the latent f)."""

    def posterior(self, X: torch.Tensor, observation_noise: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean, self.var


def test_posterior_in_units_maps_mean_and_spread_back_through_the_transform():
    y = np.array([10.0, 20.0, 30.0])
    linear = Standardise.fit(y)  # y = 20 + 8.165 z
    model = FixedLatent(torch.tensor([[0.5], [1.5]], dtype=torch.float64),
                        torch.tensor([[0.04], [0.04]], dtype=torch.float64))
    mean, std = posterior_in_units(model, linear, torch.zeros(1, 1), y)
    # a mixture of N(0.5, 0.2^2) and N(1.5, 0.2^2) in z: mean 1, std sqrt(0.04 + 0.25)
    assert mean == pytest.approx(20 + linear.std * 1.0, rel=2e-3)
    assert std == pytest.approx(linear.std * math.sqrt(0.29), rel=2e-2)
