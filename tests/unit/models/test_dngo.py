"""DNGO: marginal likelihood with the quadratic prior mean, calibration, fantasies, its state."""
import math

import pytest
import torch

from spearmint_nn.models.base import Surrogate
from spearmint_nn.models.blr import BLRPosterior
from spearmint_nn.models.dngo import DNGO
from spearmint_nn.models.dngo_hyperparameters import Hyperparameters, SufficientStatistics, quadratic_features
from spearmint_nn.search import model_store

torch.set_num_threads(1)
DT = torch.float64


def branin(X):
    x1, x2 = 15 * X[:, 0] - 5, 15 * X[:, 1]
    return (x2 - 5.1 / (4 * math.pi**2) * x1**2 + 5 / math.pi * x1 - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * torch.cos(x1) + 10


def smooth4(X):
    return torch.sin(3 * X[:, 0]) + 4 * (X[:, 1] - 0.3) ** 2 + torch.cos(2 * X[:, 2] * X[:, 3]) + X[:, 3]


def standardised_data(f, n, d, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=DT)
    y = f(X)
    mu, sd = y.mean(), y.std()
    X_test = torch.rand(500, d, generator=g, dtype=DT)
    return X, (y - mu) / sd, X_test, (f(X_test) - mu) / sd


@pytest.fixture(scope="module")
def branin_model():
    X, y, X_test, y_test = standardised_data(branin, 100, 2, seed=0)
    model = DNGO(n_inputs=2, seed=0, n_samples=10)
    model.fit(X, y)
    return model, X, y, X_test, y_test


def interval_coverage(mean, var, truth, z=1.6449):
    """Fraction of truth inside the central 90% interval of the moment-matched sample mixture."""
    mixture_mean = mean.mean(0)
    mixture_var = (var + mean**2).mean(0) - mixture_mean**2
    return ((truth - mixture_mean).abs() <= z * mixture_var.sqrt()).double().mean().item()


def test_log_posterior_is_the_multivariate_normal_density_with_quadratic_mean(branin_model):
    model, X, y, _, _ = branin_model
    features = model.state.features(X).detach()
    stats = SufficientStatistics.of(features, quadratic_features(X), y)
    # [log alpha, log beta, lambda, c1, c2, Lambda1, Lambda2]: well-conditioned settings are
    # compared to 1e-8; the sampled states (alpha ~ 1e-3, beta ~ 1e4 make the N x N covariance's
    # condition number ~ 1e10, so no float64 evaluation is better than ~1e-8 relative) to 1e-7.
    fixed = torch.tensor([[0.0, math.log(100.0), -0.3, 0.4, 0.6, 1.5, 0.2],
                          [1.0, math.log(20.0), 0.5, 0.1, 0.9, 0.05, 3.0]], dtype=DT)
    for theta, rtol in ((fixed, 1e-10), (model.chains, 1e-7)):
        hypers = Hyperparameters(theta)
        ours = stats.log_posterior(theta) - hypers.log_prior()
        eta = hypers.mean_coefficients() @ quadratic_features(X).T
        for s in range(len(theta)):
            cov = features @ features.T / hypers.alpha[s] + torch.eye(len(X), dtype=DT) / hypers.beta[s]
            direct = torch.distributions.MultivariateNormal(eta[s], cov).log_prob(y).item()
            assert abs(ours[s].item() - direct) < max(1e-8, rtol * abs(direct)), (s, ours[s].item(), direct)


def test_prior_mean_is_the_quadratic_of_equation_9(branin_model):
    model, _, _, X_test, _ = branin_model
    offset, centre, scale = model.state.hypers.split()
    direct = offset[:, None] + (((X_test[None] - centre[:, None]) ** 2) * scale[:, None]).sum(-1)
    torch.testing.assert_close(model.state.prior_mean(X_test), direct, rtol=0, atol=1e-12)
    assert (scale > 0).all()


@pytest.mark.parametrize("f, n, d, seed", [(branin, 100, 2, 0), (smooth4, 200, 4, 1)])
def test_ninety_percent_intervals_cover_the_truth_and_a_shrunken_variance_does_not(f, n, d, seed):
    X, y, X_test, y_test = standardised_data(f, n, d, seed)
    model = DNGO(n_inputs=d, seed=seed)
    model.fit(X, y)
    mean, var = model.posterior(X_test, observation_noise=True)
    assert mean.shape == var.shape == (10, len(X_test))
    coverage = interval_coverage(mean, var, y_test)
    assert 0.75 <= coverage <= 0.99, coverage
    assert ((mean.mean(0) - y_test) ** 2).mean().sqrt() < 0.3  # it is also a useful regressor
    assert interval_coverage(mean, var / 100, y_test) < 0.75


def test_posterior_is_differentiable_in_x(branin_model):
    model, _, _, X_test, _ = branin_model
    assert_posterior_gradient_matches_finite_differences(model, X_test[:4])


def assert_posterior_gradient_matches_finite_differences(model, X):
    """d(sum of means and variances)/dX by autograd equals central differences, at X (M, D)."""
    x = X.clone().requires_grad_(True)
    mean, var = model.posterior(x)
    (mean.sum() + var.sum()).backward()
    h = 1e-6
    for i in range(X.shape[1]):
        shift = torch.zeros_like(X)
        shift[:, i] = h
        up, down = model.posterior(X + shift), model.posterior(X - shift)
        fd = ((up[0] - down[0]).sum(0) + (up[1] - down[1]).sum(0)) / (2 * h)
        torch.testing.assert_close(x.grad[:, i], fd, rtol=1e-5, atol=1e-6)


def test_fantasy_update_equals_a_refit_with_the_pending_rows(branin_model):
    model, X, y, X_test, _ = branin_model
    g = torch.Generator().manual_seed(3)
    X_pending = torch.rand(6, 2, generator=g, dtype=DT)
    F = 4
    fantasy = model.fantasize(X_pending, F, g)
    values = fantasy.fantasy_values
    assert values.shape == (10 * F, 6)
    mean, var = fantasy.posterior(X_test, observation_noise=True)
    assert mean.shape == var.shape == (10 * F, len(X_test))
    # Reference: a BLR rebuilt from all N + J rows, per (sample, fantasy).
    state = model.state
    Phi = torch.cat([state.features(X), state.features(X_pending)]).detach()
    X_all = torch.cat([X, X_pending])
    eta = state.prior_mean(X_all)  # (S, N + J)
    targets = torch.cat([y.expand(10, F, -1), values.reshape(10, F, -1)], dim=2) - eta[:, None, :]
    refit = BLRPosterior(Phi.T @ Phi, targets @ Phi, state.blr.alpha, state.blr.beta)
    ref_mean, ref_var = refit.predict(state.features(X_test).detach(), observation_noise=True)
    ref_mean = ref_mean + state.prior_mean(X_test)[:, None, :]
    # Sampled hyperparameters make K's condition number ~1e9 (test_blr checks the same identity to
    # 1e-10 on a well-conditioned system), hence the looser tolerance here.
    torch.testing.assert_close(mean, ref_mean.reshape(10 * F, -1), rtol=0, atol=1e-6)
    torch.testing.assert_close(var, ref_var[:, None].expand(10, F, -1).reshape(10 * F, -1), rtol=0, atol=1e-6)
    # Conditioning on more rows never increases the latent variance.
    assert (fantasy.posterior(X_test, False)[1] <= model.posterior(X_test, False)[1].repeat_interleave(F, 0) + 1e-12).all()


def test_fantasies_are_joint_draws_from_the_posterior_predictive(branin_model):
    model, _, _, _, _ = branin_model
    g = torch.Generator().manual_seed(4)
    base = torch.tensor([[0.2, 0.7], [0.9, 0.1]], dtype=DT)
    X_pending = torch.cat([base, base[:1] + 1e-4])  # the third point sits next to the first
    F = 4000
    values = model.fantasize(X_pending, F, g).fantasy_values.reshape(10, F, 3)
    mean, var = model.posterior(X_pending, observation_noise=True)  # the fantasies include noise
    sd = var.sqrt()
    z = (values.mean(1) - mean) / (sd / math.sqrt(F))
    assert z.abs().max() < 4.5
    torch.testing.assert_close(values.var(1) / var, torch.ones_like(var), rtol=0, atol=0.1)
    # Nearby points get consistent fantasies: their difference is only the two noise draws.
    # Independent draws per point would give a gap of sqrt(2 var), which is larger.
    gap = (values[..., 0] - values[..., 2]).std(1)
    noise_only = (2.0 / model.state.blr.beta).sqrt()
    torch.testing.assert_close(gap / noise_only, torch.ones_like(gap), rtol=0, atol=0.1)
    # Fantasies of fantasies multiply the rows.
    twice = model.fantasize(X_pending[:1], 3, g).fantasize(X_pending[1:2], 2, g)
    assert twice.posterior(X_pending)[0].shape == (10 * 3 * 2, 3)


def test_thompson_draws_are_latent_functions_of_random_rows(branin_model):
    model, _, _, _, _ = branin_model
    g = torch.Generator().manual_seed(5)
    points = torch.tensor([[0.2, 0.7], [0.2001, 0.7], [0.9, 0.1]], dtype=DT)
    draws = torch.stack([model.sample_f(points, g) for _ in range(4000)])
    mean, var = model.posterior(points, observation_noise=False)  # (10, 3): f, without noise
    mixture_mean = mean.mean(0)
    mixture_var = (var + mean**2).mean(0) - mixture_mean**2
    z = (draws.mean(0) - mixture_mean) / (mixture_var.sqrt() / math.sqrt(4000))
    assert z.abs().max() < 4.5
    torch.testing.assert_close(draws.var(0) / mixture_var, torch.ones(3, dtype=DT), rtol=0, atol=0.12)
    # a draw is one function of x: next-door points move together, with no noise between them
    # (y-draws would differ by sqrt(2 / beta) in spread)
    noise_sd = (1.0 / model.state.blr.beta).sqrt().min()
    assert (draws[:, 0] - draws[:, 1]).std() < 0.05 * noise_sd


def test_refits_warm_start_and_reinitialise_periodically(branin_model):
    _, X, y, _, _ = branin_model
    model = DNGO(n_inputs=2, seed=5, n_samples=4, reinit_every=2, train_steps=200, warm_steps=50,
                 burn_in=5, reburn_in=2, fresh_fit_max=0)
    model.fit(X[:40], y[:40])
    first = model.net.output.weight.clone()
    model.fit(X[:50], y[:50])
    warm = model.net.output.weight.clone()
    assert model.fits_since_reinit == 2
    # 50 small Adam steps from the previous weights stay close to them.
    assert (warm - first).norm() < 0.5 * first.norm()
    model.fit(X[:60], y[:60])
    assert model.fits_since_reinit == 1  # re-initialised after reinit_every fits
    # A warm start that cannot fit new data (one step on flipped targets) is replaced by a fresh net.
    model.warm_steps = 1
    model.fit(X[:60], y[:60])
    flipped = -y[:60]
    model.fit(X[:60], flipped)
    assert model.fits_since_reinit == 1
    assert model.last_loss < 0.25 * flipped.var()


def test_a_saved_state_reproduces_predictions_and_warm_starts(branin_model, tmp_path):
    model, X, y, X_test, _ = branin_model
    model_store.save_state(tmp_path, model)
    assert torch.load(tmp_path / model_store.STATE_FILE, weights_only=True)["n_samples"] == 10
    restored = model_store.restore_state(tmp_path, DNGO(n_inputs=2, seed=123, n_samples=10, fresh_fit_max=0), 2)  # warm
    for a, b in zip(model.posterior(X_test), restored.posterior(X_test)):  # starts at this N
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(restored.chains, model.chains, rtol=0, atol=0)
    torch.testing.assert_close(restored.generator.get_state(), model.generator.get_state(), rtol=0, atol=0)
    restored.fit(X, y)
    assert restored.fits_since_reinit == model.fits_since_reinit + 1  # continued, not restarted
    other = DNGO(n_inputs=3, seed=0)
    with pytest.raises(ValueError):
        other.load_state_dict(model.state_dict())
    assert other.state is None  # a refused state changes nothing
    assert model_store.restore_state(tmp_path, other, 3).state is None


def test_a_fantasy_is_a_dngo_whose_refit_leaves_the_original_alone(branin_model):
    model, X, y, X_test, _ = branin_model
    before = model.posterior(X_test)
    fantasy = model.fantasize(X_test[:3], 2, torch.Generator().manual_seed(0))
    assert isinstance(fantasy, DNGO) and isinstance(fantasy, Surrogate)
    assert fantasy.fantasy_values.shape == (20, 3) and model.fantasy_values.shape == (10, 0)
    fantasy.fit(X[:20], y[:20])
    assert fantasy.posterior(X_test)[0].shape == (10, len(X_test))
    for a, b in zip(model.posterior(X_test), before):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_predicting_before_fitting_and_bad_shapes_are_errors():
    model = DNGO(n_inputs=2, seed=0)
    with pytest.raises(RuntimeError):
        model.posterior(torch.rand(3, 2, dtype=DT))
    with pytest.raises(ValueError):
        model.fit(torch.rand(5, 3, dtype=DT), torch.rand(5, dtype=DT))


def log_scale_bowl(n, d, seed):
    """A bowl in log x over x in [1e-4, 1]^d, encoded on a linear scale (the optimum near the lower
    faces): inputs (n, d) in the unit cube and standardised targets (n,)."""
    X = torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=DT)
    u = torch.log10(1e-4 + X * (1 - 1e-4)) / 4 + 1
    y = ((u - 0.3) ** 2).sum(1)
    return X, y


@pytest.mark.slow
def test_the_input_warp_learns_a_log_scale_and_predicts_a_log_scale_function_better():
    X, y = log_scale_bowl(40, 4, seed=0)
    X_test, y_test = log_scale_bowl(512, 4, seed=1)
    mean, sd = y.mean(), y.std()
    errors = {}
    for warping in (False, True):
        model = DNGO(n_inputs=4, seed=0, warping=warping)
        model.fit(X, (y - mean) / sd)
        prediction = model.posterior(X_test)[0].mean(0) * sd + mean
        errors[warping] = ((prediction - y_test) ** 2).mean().sqrt().item()
    # every input is warped towards a log scale (a < 1 stretches the region near 0)
    a, _ = model.net.warp_shapes()
    assert (a < 0.8).all(), a
    assert errors[True] < 0.6 * errors[False], errors


def test_only_the_named_columns_are_warped_and_an_unwarped_net_saves_no_warp():
    model = DNGO(n_inputs=3, seed=0, warping=True, warped_columns=[True, False, True])
    with torch.no_grad():
        model.net.log_warp_a.fill_(-1.0)
    X = torch.rand(5, 3, dtype=DT)
    warped = model.net.warp(X)
    assert torch.equal(warped[:, 1], X[:, 1]) and not torch.allclose(warped[:, [0, 2]], X[:, [0, 2]])
    assert not any("warp" in key for key in DNGO(n_inputs=3, seed=0).net.state_dict())


def test_a_warped_model_reports_its_warp_and_loads_only_into_the_same_warp():
    X, y = log_scale_bowl(30, 2, seed=0)
    model = DNGO(n_inputs=2, seed=0, n_samples=4, warping=True, warped_columns=[1])
    model.fit(X, (y - y.mean()) / y.std())
    summary = model.warpings()
    assert summary["columns"] == [1] and len(summary["inputs"]) == 1
    a, b = model.net.warp_shapes()
    assert summary["inputs"][0]["alpha"] == pytest.approx([a.item()])
    restored = DNGO(n_inputs=2, seed=1, n_samples=4, warping=True, warped_columns=[1])
    restored.load_state_dict(model.state_dict())
    for got, expected in zip(restored.posterior(X[:5]), model.posterior(X[:5])):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    with pytest.raises(ValueError, match="warped_columns"):
        DNGO(n_inputs=2, seed=0, n_samples=4, warping=False).load_state_dict(model.state_dict())


def test_a_warped_posterior_is_differentiable_in_x():
    X, y = log_scale_bowl(30, 2, seed=0)
    model = DNGO(n_inputs=2, seed=0, n_samples=3, warping=True, lbfgs_steps=60, lbfgs_warm_steps=20, burn_in=3)
    model.fit(X, (y - y.mean()) / y.std())
    a, b = model.net.warp_shapes()
    assert not torch.allclose(a, torch.ones_like(a))  # the gradient goes through a real warp
    assert_posterior_gradient_matches_finite_differences(model, torch.tensor([[0.2, 0.7], [0.05, 0.4]], dtype=DT))


@pytest.mark.parametrize("scales", [(0.4,), (0.2, 0.4)])
def test_fourier_features_approximate_the_average_rbf_kernel_are_fixed_by_the_seed_and_saved(scales):
    from spearmint_nn.models.basis import BasisNetwork

    wide = BasisNetwork(3, fourier_features=20000, fourier_length_scales=scales,
                        generator=torch.Generator().manual_seed(0)).double()
    X = torch.rand(6, 3, generator=torch.Generator().manual_seed(1), dtype=DT)
    fourier = wide.features(X)[:, 50:]
    rbf = sum(torch.exp(-torch.cdist(X, X) ** 2 / (2 * scale**2)) for scale in scales) / len(scales)
    torch.testing.assert_close(fourier @ fourier.T, rbf, rtol=0, atol=0.03)

    model, other = DNGO(n_inputs=3, seed=0), DNGO(n_inputs=3, seed=1)
    assert model.net.features(X).shape == (6, 50 + 2 * 128)  # 128 for each of the two default scales
    assert torch.equal(model.net.fourier_weights, DNGO(n_inputs=3, seed=0).net.fourier_weights)
    assert not torch.equal(model.net.fourier_weights, other.net.fourier_weights)
    assert {"fourier_weights", "fourier_phases"} <= set(model.net.state_dict())
    # the network is trained on its tanh features alone
    output = model.net(X)
    with torch.no_grad():
        model.net.fourier_weights.mul_(2.0)
    torch.testing.assert_close(model.net(X), output, rtol=0, atol=0)


@pytest.mark.slow
def test_fourier_features_give_variance_away_from_the_data():
    """Fitted to points in one corner of the cube, the paper's basis is nearly certain in the
    opposite corner; with the Fourier features the latent sd there is close to the prior's."""
    g = torch.Generator().manual_seed(0)
    X = 0.4 * torch.rand(30, 4, generator=g, dtype=DT)
    y = smooth4(X)
    far = 0.6 + 0.4 * torch.rand(200, 4, generator=g, dtype=DT)
    far_sd = {}
    for m in (0, 128):
        model = DNGO(n_inputs=4, seed=0, fourier_features=m)
        model.fit(X, (y - y.mean()) / y.std())
        far_sd[m] = model.posterior(far, observation_noise=False)[1].sqrt().median().item()
    assert far_sd[128] > 0.5 and far_sd[128] > 2 * far_sd[0], far_sd


def test_a_model_saved_without_fourier_features_loads_only_into_the_same_basis():
    X, y, _, _ = standardised_data(branin, 30, 2, seed=0)
    model = DNGO(n_inputs=2, seed=0, n_samples=4, fourier_features=0)
    model.fit(X, y)
    state = model.state_dict()
    assert "fourier_weights" not in state["net"]
    with pytest.raises(ValueError, match="fourier_features"):
        DNGO(n_inputs=2, seed=0, n_samples=4).load_state_dict(state)
    DNGO(n_inputs=2, seed=1, n_samples=4, fourier_features=0).load_state_dict(state)


def test_a_model_saved_with_other_fourier_length_scales_does_not_load():
    X, y, _, _ = standardised_data(branin, 30, 2, seed=0)
    model = DNGO(n_inputs=2, seed=0, n_samples=4, fourier_length_scales=(0.4,))
    model.fit(X, y)
    with pytest.raises(ValueError, match=r"fourier_length_scales.*\[0\.4\].*\[0\.2, 0\.4\]"):
        DNGO(n_inputs=2, seed=0, n_samples=4).load_state_dict(model.state_dict())
    DNGO(n_inputs=2, seed=1, n_samples=4, fourier_length_scales=[0.4]).load_state_dict(model.state_dict())


def test_many_paths_are_joint_draws_spread_evenly_over_the_rows(branin_model):
    model, _, _, _, _ = branin_model
    points = torch.tensor([[0.2, 0.7], [0.2001, 0.7], [0.9, 0.1]], dtype=DT)
    paths = model.sample_paths(points, 4000, torch.Generator().manual_seed(6))
    assert paths.shape == (4000, 3)
    mean, var = model.posterior(points, observation_noise=False)
    # 400 draws of each of the 10 rows: the mixture's mean and variance, to sampling error
    mixture_mean = mean.mean(0)
    mixture_var = (var + mean**2).mean(0) - mixture_mean**2
    z = (paths.mean(0) - mixture_mean) / (mixture_var.sqrt() / math.sqrt(4000))
    assert z.abs().max() < 4.5
    torch.testing.assert_close(paths.var(0) / mixture_var, torch.ones(3, dtype=DT), rtol=0, atol=0.12)
    # each path is one function: next-door points move together, with no noise between them
    assert (paths[:, 0] - paths[:, 1]).std() < 0.05 * (1.0 / model.state.blr.beta).sqrt().min()


def test_conditioning_adds_results_to_the_regression_without_training_the_network():
    X, y, _, _ = standardised_data(branin, 60, 2, seed=4)
    model = DNGO(n_inputs=2, seed=0, n_samples=4)
    model.fit(X[:40], y[:40])
    weights = {k: v.clone() for k, v in model.net.state_dict().items()}
    before = model.posterior(X[40:])[0].mean(0)
    model.condition(X, y)
    assert all(torch.equal(v, model.net.state_dict()[k]) for k, v in weights.items())  # the same basis
    after = model.posterior(X[40:])[0].mean(0)
    # the 20 new results pull the mean to themselves
    assert (after - y[40:]).abs().mean() < 0.5 * (before - y[40:]).abs().mean()
    fresh = DNGO(n_inputs=2, seed=0, n_samples=4)
    fresh.condition(X, y)  # nothing trained yet: a fit
    assert fresh._trained and fresh.posterior(X)[0].shape == (4, 60)
