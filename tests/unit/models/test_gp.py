"""The Spearmint GP: likelihood and posterior against dense numpy, sampling, jitter, fantasies."""
import dataclasses
import json
import math

import numpy as np
import pytest
import scipy.special
import scipy.stats
import torch

from experiments.benchmarks.functions import FUNCTIONS
from spearmint_nn.models.base import Surrogate
from spearmint_nn.models.gp import GP, GPCapacityError, _TrainingCorrelation
from spearmint_nn.models.gp_posterior import robust_cholesky
from spearmint_nn.models.gp_hyperparameters import HyperLayout, Hypers, log_prior
from spearmint_nn.models.kernels import Conditional
from spearmint_nn.search import model_store
from spearmint_nn.search.candidates import continuous_columns
from spearmint_nn.search.optimizer import Optimizer


def dense_cov(A, B, ls, amp2, alpha=None, beta=None, kernel="matern52"):
    """Reference Matérn 5/2 (or squared exponential) on Beta-CDF-warped inputs, plain numpy/scipy."""
    if alpha is not None:
        A, B = scipy.special.betainc(alpha, beta, A), scipy.special.betainc(alpha, beta, B)
    r = np.sqrt((((A[:, None, :] - B[None, :, :]) / ls) ** 2).sum(-1))
    if kernel == "squared-exponential":
        return amp2 * np.exp(-0.5 * r**2)
    return amp2 * (1 + math.sqrt(5) * r + 5 / 3 * r**2) * np.exp(-math.sqrt(5) * r)


def data(n=12, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sin(5 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.standard_normal(n)
    return X, (y - y.mean()) / y.std()


@pytest.mark.parametrize("kernel", ["matern52", "squared-exponential"])
@pytest.mark.parametrize("warping", [True, False])
def test_log_marginal_likelihood_matches_dense_computation(warping, kernel):
    X, y = data()
    gp = GP(warping=warping, kernel=kernel, seed=0)
    layout = gp.layout_for(2)
    ls, alpha, beta = np.array([0.3, 1.2]), np.array([0.5, 2.0]), np.array([1.5, 0.7])
    theta = torch.stack([
        layout.pack(mean=0.2, amp2=1.7, noise=0.01, lengthscales=torch.tensor(ls), alpha=torch.tensor(alpha), beta=torch.tensor(beta)),
        layout.pack(mean=-0.1, amp2=0.5, noise=1e-4, lengthscales=0.7),
    ])
    got = gp.log_marginal_likelihood(theta, torch.tensor(X), torch.tensor(y)).numpy()
    expected = []
    for mean, amp2, noise, ls_s, a, b in [(0.2, 1.7, 0.01, ls, alpha, beta), (-0.1, 0.5, 1e-4, 0.7, 1.0, 1.0)]:
        K = dense_cov(X, X, ls_s, amp2, a if warping else None, b, kernel) + noise * np.eye(len(X))
        expected.append(scipy.stats.multivariate_normal(mean * np.ones(len(X)), K).logpdf(y))
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize("kernel", ["matern52", "squared-exponential"])
def test_posterior_matches_dense_computation_for_every_sample(kernel):
    X, y = data(n=15)
    gp = GP(seed=1, burn_in=3, sweeps_per_fit=1, n_samples=4, kernel=kernel)
    gp.fit(torch.tensor(X), torch.tensor(y))
    Xs = np.random.default_rng(5).random((9, 2))
    mean, var = gp.posterior(torch.tensor(Xs))
    assert mean.shape == var.shape == (4, 9)
    h = Hypers.unpack(gp.chains, gp.layout)
    for s in range(4):
        ls = np.exp(h.log_lengthscales[s].numpy())
        a, b = np.exp(h.log_alpha[s].numpy()), np.exp(h.log_beta[s].numpy())
        amp2, noise, m = h.amp2[s].item(), h.noise[s].item(), h.mean[s].item()
        K = dense_cov(X, X, ls, amp2, a, b, kernel) + noise * np.eye(len(X))
        Ks = dense_cov(X, Xs, ls, amp2, a, b, kernel)
        np.testing.assert_allclose(mean[s].numpy(), m + Ks.T @ np.linalg.solve(K, y - m), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(var[s].numpy(), amp2 - np.einsum("nm,nm->m", Ks, np.linalg.solve(K, Ks)), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("warped_columns", [None, [False, True]])
def test_posterior_is_differentiable_in_x(warped_columns):
    X, y = data()
    gp = GP(seed=2, burn_in=2, sweeps_per_fit=1, n_samples=3, warped_columns=warped_columns)
    gp.fit(torch.tensor(X), torch.tensor(y))
    x = torch.tensor([[0.3, 0.6]], dtype=torch.float64, requires_grad=True)
    mean, var = gp.posterior(x)
    (mean.sum() + var.sum()).backward()
    h = 1e-6
    numeric = []
    for d in range(2):
        e = torch.zeros(1, 2, dtype=torch.float64)
        e[0, d] = h
        up, down = gp.posterior(x.detach() + e), gp.posterior(x.detach() - e)
        numeric.append(((up[0].sum() + up[1].sum()) - (down[0].sum() + down[1].sum())).item() / (2 * h))
    np.testing.assert_allclose(x.grad[0].numpy(), numeric, rtol=1e-5)


def test_slice_sampling_recovers_known_lengthscales():
    """Data drawn from a Matérn 5/2 GP with l = (0.15, 0.6): the sampled l lands within 35%.

    A kernel with a wrong distance scaling (e.g. sqrt(5) r missing) or without ARD misses this.
    """
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    K = dense_cov(X, X, np.array([0.15, 0.6]), 1.0) + 1e-4 * np.eye(60)
    y = np.linalg.cholesky(K) @ rng.standard_normal(60)
    gp = GP(warping=False, seed=0, burn_in=30)
    gp.fit(torch.tensor(X), torch.tensor(y))
    median = np.median(np.array(gp.hyperparameters()["lengthscales"]), axis=0)
    np.testing.assert_allclose(median, [0.15, 0.6], rtol=0.35)


def test_log_prior_is_the_sum_of_the_per_coordinate_priors():
    """The batched prior equals its terms written out one by one, and is -inf off the support."""
    layout = HyperLayout(n_dims=3, warped=(0, 2), noiseless=False, n_arc=1)
    assert layout.size == 3 + 3 + 2 * 2 + 1 + 1  # mean, amp2, noise; length scales; 2 warps; switch; rho
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(50, layout.size, generator=g, dtype=torch.float64).clamp(-2.0, 2.0)  # inside every box
    theta[:, layout.warp_switch] = torch.rand(50, generator=g, dtype=torch.float64)
    theta[:, layout.rho] = 0.2 + 0.7 * torch.rand(50, 1, generator=g, dtype=torch.float64)
    theta[:, layout.log_noise] = -8.0 + 6.0 * torch.rand(50, generator=g, dtype=torch.float64)
    noise = theta[:, layout.log_noise]
    expected = (
        -0.5 * theta[:, 0] ** 2
        - 0.5 * theta[:, 1] ** 2
        + torch.log(torch.log1p(3.0 * 0.1**2 * torch.exp(-2.0 * noise))) + noise
        # log-normal length scales: the Gaussian in log l up to its constant
        - 0.5 * ((theta[:, layout.log_lengthscales] - math.log(0.5)) ** 2 - math.log(0.5) ** 2).sum(-1)
        # the paper's log-normal warp shapes: a Gaussian of variance 0.75 in log shape; the switch
        # is uniform, so it adds nothing inside [0, 1]
        - 0.5 * (theta[:, layout.log_alpha] ** 2 + theta[:, layout.log_beta] ** 2).sum(-1) / 0.75
    )
    got = log_prior(theta, layout)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    for coordinate, value in ((layout.log_lengthscales.start, 3.0), (layout.log_alpha.start, 3.5),
                              (layout.rho.start, 1.5), (layout.log_noise, 3.0), (layout.warp_switch, 1.01),
                              (layout.warp_switch, -0.01)):
        off = theta[:2].clone()
        off[:, coordinate] = value
        assert torch.isinf(log_prior(off, layout)).all()
    # Spearmint's top-hat instead: uniform in l, so density l in the sampled log l, same support.
    log_ls = theta[:, layout.log_lengthscales]
    top_hat = expected + 0.5 * ((log_ls - math.log(0.5)) ** 2 - math.log(0.5) ** 2).sum(-1) + log_ls.sum(-1)
    np.testing.assert_allclose(log_prior(theta, layout, "top-hat").numpy(), top_hat.numpy(), rtol=1e-12, atol=1e-12)
    off = theta[:2].clone()
    off[:, layout.log_lengthscales.start] = 3.0
    assert torch.isinf(log_prior(off, layout, "top-hat")).all()
    with pytest.raises(ValueError, match="length-scale prior"):
        GP(lengthscale_prior="uniform")


@pytest.mark.parametrize("warped_columns", [None, [0, 2]])
def test_training_correlation_memo_matches_a_fresh_computation_along_a_sweep(warped_columns):
    """The per-input memo of the warped inputs gives the exact correlation for every move a
    sweep makes: one coordinate of C chains, or of both bracket ends (2C states) at once, or of
    any of them (the ends still growing, the chains still shrinking)."""
    X, _ = data(n=10, d=3)
    X = torch.tensor(X)
    gp = GP(3, seed=0, warped_columns=warped_columns)
    layout = gp.layout_for(3)
    memo = _TrainingCorrelation(gp, X, layout)
    g = torch.Generator().manual_seed(1)
    chains = layout.pack(lengthscales=0.4) + 0.3 * torch.randn(4, layout.size, generator=g, dtype=torch.float64)
    memo(chains, Hypers.unpack(chains, layout))
    for coordinate in [0, layout.log_lengthscales.start + 1, layout.log_alpha.stop - 1, layout.log_beta.start,
                       layout.warp_switch, layout.log_alpha.start]:
        for copies, some in ((2, False), (2, True), (1, False), (1, True), (2, False)):
            moved = chains.repeat(copies, 1)
            moved[:, coordinate] += 0.2 * torch.randn(len(moved), generator=g, dtype=torch.float64)
            if some:  # a random part of them, the same state twice among it
                moved = moved[torch.randint(len(moved), (3,), generator=g)][[0, 1, 2, 0]]
            h = Hypers.unpack(moved, layout)
            np.testing.assert_allclose(memo(moved, h).numpy(), gp._correlation(X, h).numpy(), rtol=0, atol=1e-13)
            if not some:
                chains = moved[: len(chains)]


def test_jitter_escalation_factorises_a_duplicated_point_covariance():
    X = np.random.default_rng(0).random((6, 2))
    X = np.vstack([X, X[:3]])  # exact duplicates: the noise-free covariance is singular
    singular = torch.tensor(dense_cov(X, X, 0.4, 1.0))
    fine = singular + 0.1 * torch.eye(len(X), dtype=torch.float64)
    K = torch.stack([singular, fine])
    L, jitter, ok = robust_cholesky(K)
    assert ok.all()
    assert jitter[0] > 0 and jitter[1] == 0
    np.testing.assert_allclose((L @ L.transpose(1, 2)).numpy(), (K + jitter[:, None, None] * torch.eye(len(X))).numpy(), atol=1e-12)
    # and a noiseless GP fits and predicts on that data set
    gp = GP(noiseless=True, seed=0, burn_in=2, sweeps_per_fit=1, n_samples=3)
    y = np.sin(4 * X[:, 0])
    gp.fit(torch.tensor(X), torch.tensor(y - y.mean()))
    mean, var = gp.posterior(torch.tensor(X[:2]))
    np.testing.assert_allclose(mean.numpy(), np.broadcast_to(y[:2] - y.mean(), (3, 2)), atol=1e-3)
    assert (var < 1e-3).all()


def test_too_many_observations_is_a_clear_error():
    gp = GP(max_observations=50)
    with pytest.raises(GPCapacityError, match="DNGO"):
        gp.fit(torch.rand(51, 2, dtype=torch.float64), torch.zeros(51, dtype=torch.float64))


def test_fantasies_condition_on_joint_draws_at_the_pending_points():
    X, y = data(n=10)
    gp = GP(noiseless=True, seed=3, burn_in=3, sweeps_per_fit=1, n_samples=4)
    gp.fit(torch.tensor(X), torch.tensor(y))
    pending = torch.tensor([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]], dtype=torch.float64)
    fantasy = gp.fantasize(pending, 5, torch.Generator().manual_seed(0))
    values = fantasy.fantasy_values
    assert values.shape == (20, 3)
    mean, var = fantasy.posterior(pending)
    assert mean.shape == (20, 3)
    # noise-free: each fantasised model interpolates its own draws
    np.testing.assert_allclose(mean.numpy(), values.numpy(), atol=1e-3)
    assert (var < 1e-3).all()
    # the draws are centred on the original posterior mean (many fantasies, one sample's rows)
    many = gp.fantasize(pending, 4000, torch.Generator().manual_seed(1)).fantasy_values
    prior_mean, prior_var = gp.posterior(pending)
    draws = many.reshape(4, 4000, 3)
    np.testing.assert_allclose(draws.mean(1).numpy(), prior_mean.numpy(), atol=4 * (prior_var.max().sqrt().item() + 1e-3) / math.sqrt(4000))
    # the original model is unchanged
    assert gp.fantasy_values.shape == (4, 0)
    assert gp.posterior(pending)[0].shape == (4, 3)


def test_a_thompson_draw_has_its_rows_posterior_mean_and_covariance():
    X, y = data(n=10)
    gp = GP(seed=3, burn_in=3, sweeps_per_fit=1, n_samples=1)
    gp.fit(torch.tensor(X), torch.tensor(y))
    points = torch.tensor([[0.5, 0.5], [0.52, 0.5], [0.9, 0.1]], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([gp.sample_f(points, g) for _ in range(4000)]).numpy()
    h = Hypers.unpack(gp.chains, gp.layout)
    ls, amp2, noise, m = np.exp(h.log_lengthscales[0].numpy()), h.amp2[0].item(), h.noise[0].item(), h.mean[0].item()
    a, b = np.exp(h.log_alpha[0].numpy()), np.exp(h.log_beta[0].numpy())
    K = dense_cov(X, X, ls, amp2, a, b) + noise * np.eye(len(X))
    Ks = dense_cov(X, points.numpy(), ls, amp2, a, b)
    mean = m + Ks.T @ np.linalg.solve(K, y - m)
    cov = dense_cov(points.numpy(), points.numpy(), ls, amp2, a, b) - Ks.T @ np.linalg.solve(K, Ks)
    sd = np.sqrt(np.diag(cov))
    assert np.abs((draws.mean(0) - mean) / (sd / math.sqrt(4000))).max() < 4.5
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.08 * sd.max() ** 2)
    # f, not f plus noise, and drawn jointly: the two close points move together
    assert np.corrcoef(draws[:, 0], draws[:, 1])[0, 1] > 0.9 and abs(np.corrcoef(draws[:, 0], draws[:, 2])[0, 1]) < 0.5


def test_many_joint_draws_spread_evenly_over_every_sample_and_fantasy_row():
    X, y = data(n=10)
    gp = GP(seed=3, burn_in=3, sweeps_per_fit=1, n_samples=4)
    gp.fit(torch.tensor(X), torch.tensor(y))
    fantasy = gp.fantasize(torch.tensor([[0.5, 0.45]], dtype=torch.float64), 3, torch.Generator().manual_seed(2))
    points = torch.tensor([[0.5, 0.5], [0.5001, 0.5], [0.9, 0.1]], dtype=torch.float64)
    paths = fantasy.sample_paths(points, 4800, torch.Generator().manual_seed(6))
    assert paths.shape == (4800, 3)
    mean, var = fantasy.posterior(points)  # (12, 3): 400 draws of each (sample, fantasy) row
    mixture_mean = mean.mean(0)
    mixture_var = (var + mean**2).mean(0) - mixture_mean**2
    z = (paths.mean(0) - mixture_mean) / (mixture_var.sqrt() / math.sqrt(4800))
    assert z.abs().max() < 4.5
    torch.testing.assert_close(paths.var(0) / mixture_var, torch.ones(3, dtype=torch.float64), rtol=0, atol=0.12)
    # one function per path: next-door points move together, far ones much less
    assert torch.corrcoef(paths[:, :2].T)[0, 1] > 0.99
    assert torch.corrcoef(paths[:, [0, 2]].T)[0, 1].abs() < 0.5


def test_chains_advance_in_proportion_to_the_new_observations(monkeypatch):
    import spearmint_nn.models.gp as gp_module
    sweeps = []
    real = gp_module.slice_sweep
    monkeypatch.setattr(gp_module, "slice_sweep", lambda *args: sweeps.append(1) or real(*args))
    X, y = data(n=40)
    gp = GP(seed=0, burn_in=5, sweeps_per_fit=2, n_samples=2)
    counts = []
    for n in (10, 11, 12, 15, 40, 40):  # first fit, one result, one, a batch of 3, 25 (capped at 5), none
        sweeps.clear()
        gp.fit(torch.tensor(X[:n]), torch.tensor(y[:n]))
        counts.append(len(sweeps))
    assert counts == [5 + 2, 2, 2, 6, 10, 2]


def test_a_loaded_state_predicts_as_the_saved_gp_and_continues_its_chains():
    X, y = data(n=8)
    gp = GP(seed=4, burn_in=2, sweeps_per_fit=1, n_samples=3)
    gp.fit(torch.tensor(X), torch.tensor(y))
    restored = GP(seed=5, burn_in=1000, sweeps_per_fit=1, n_samples=3)
    restored.load_state_dict(gp.state_dict())
    X_test = torch.rand(6, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for a, b in zip(restored.posterior(X_test, observation_noise=True), gp.posterior(X_test, observation_noise=True)):
        assert torch.equal(a, b)
    restored.fit(torch.tensor(X), torch.tensor(y))  # would take minutes if it burned in again
    assert restored.chains.shape == gp.chains.shape
    assert not torch.equal(restored.chains, gp.chains)  # one more sweep moved them


def test_a_saved_state_restores_the_chains_and_only_into_the_same_inputs_and_chains(tmp_path):
    X, y = data(n=8)
    gp = GP(n_inputs=2, seed=4, burn_in=2, sweeps_per_fit=1, n_samples=3)
    gp.fit(torch.tensor(X), torch.tensor(y))
    model_store.save_state(tmp_path, gp)
    restored = model_store.restore_state(tmp_path, GP(n_inputs=2, seed=5, burn_in=1000, sweeps_per_fit=1, n_samples=3), 2)
    assert torch.equal(restored.chains, gp.chains)
    assert torch.equal(restored.fantasy_values, gp.fantasy_values)
    with pytest.raises(ValueError):
        GP(n_inputs=3, n_samples=3).load_state_dict(gp.state_dict())
    other = GP(n_inputs=2, n_samples=4)
    with pytest.raises(ValueError):
        other.load_state_dict(gp.state_dict())
    assert other.chains is None and model_store.restore_state(tmp_path, other, 2).chains is None


def test_a_fantasy_is_a_gp_whose_refit_leaves_the_original_alone():
    X, y = data(n=10)
    gp = GP(seed=3, burn_in=3, sweeps_per_fit=1, n_samples=4)
    gp.fit(torch.tensor(X), torch.tensor(y))
    chains, stream = gp.chains.clone(), gp.generator.get_state()
    fantasy = gp.fantasize(torch.tensor([[0.5, 0.5]], dtype=torch.float64), 3, torch.Generator().manual_seed(0))
    assert isinstance(fantasy, GP) and isinstance(fantasy, Surrogate)
    fantasy.fit(torch.tensor(X[:6]), torch.tensor(y[:6]))
    assert torch.equal(gp.chains, chains) and torch.equal(gp.generator.get_state(), stream)
    assert gp.posterior(torch.tensor(X[:2]))[0].shape == (4, 2)


def test_warpings_are_json_per_input():
    X, y = data(n=10)
    gp = GP(seed=6, burn_in=2, sweeps_per_fit=1, n_samples=3)
    gp.fit(torch.tensor(X), torch.tensor(y))
    summary = json.loads(json.dumps(gp.warpings(grid_size=21)))
    assert len(summary["inputs"]) == 2
    assert np.array(summary["inputs"][0]["samples"]).shape == (3, 21)
    assert GP(warping=False).warpings is not None  # method exists either way
    nowarp = GP(warping=False, seed=0, burn_in=1, sweeps_per_fit=1, n_samples=2)
    nowarp.fit(torch.tensor(X), torch.tensor(y))
    assert nowarp.warpings() is None


def test_a_sample_whose_switch_is_off_is_unwarped_whatever_its_shapes():
    """Below WARP_PROBABILITY the switch applies the sampled shapes; above it the sample is the
    unwarped GP: its likelihood equals that of a GP without warping and ignores the shapes."""
    X, y = data(n=12)
    X, y = torch.tensor(X), torch.tensor(y)
    gp, plain = GP(n_inputs=2, seed=0), GP(n_inputs=2, warping=False, seed=0)
    layout, plain_layout = gp.layout_for(2), plain.layout_for(2)
    on = layout.pack(lengthscales=[0.3, 0.6], alpha=[0.4, 2.0], beta=[1.5, 0.7])
    off = layout.pack(lengthscales=[0.3, 0.6], alpha=[0.4, 2.0], beta=[1.5, 0.7], warped=False)
    off_other_shapes = layout.pack(lengthscales=[0.3, 0.6], alpha=[3.0, 0.2], beta=[0.5, 1.1], warped=False)
    theta = torch.stack([on, off, off_other_shapes])
    h = Hypers.unpack(theta, layout)
    assert h.warp_on.tolist() == [True, False, False]
    assert (h.log_alpha[1:] == 0).all() and (h.log_beta[1:] == 0).all()
    ll = gp.log_marginal_likelihood(theta, X, y)
    unwarped = plain.log_marginal_likelihood(plain_layout.pack(lengthscales=[0.3, 0.6])[None], X, y)
    np.testing.assert_allclose(ll[1:].numpy(), unwarped.expand(2).numpy(), rtol=1e-12)
    assert abs(float(ll[0] - ll[1])) > 1e-3  # the warps of the switched-on sample do change the fit


@pytest.mark.slow
@pytest.mark.parametrize("log_scale", [True, False])
def test_the_sampler_warps_where_the_data_want_it_and_not_elsewhere(log_scale):
    """The share of samples that warp is the posterior probability of the warped model: near 1
    for a function of log x (it varies fast near 0), near 0 for sin(6 x), which an unwarped
    Matern GP fits as well, so the Occam factor of the warp shapes decides (measured with the
    prior probability 1/5: 0.975-1.0 and 0.0-0.075 over three data seeds each)."""
    x = np.random.default_rng(0).random((20, 1))
    y = np.sin(3 * np.log10(0.999 * x[:, 0] + 1e-3)) if log_scale else np.sin(6 * x[:, 0])
    X, y = torch.tensor(x), torch.tensor((y - y.mean()) / y.std())
    gp = GP(n_inputs=1, seed=0, noiseless=True, burn_in=60)
    shares = []
    for _ in range(4):
        gp._n_observed = 0  # each refit sweeps as after ten new observations
        gp.fit(X, y)
        shares.append(gp.warpings()["share_warped"])
    if log_scale:
        assert np.mean(shares) > 0.8
    else:
        assert np.mean(shares) < 0.2


def test_conditional_gp_ignores_inactive_values():
    """With the arc kernel, changing an inactive input never changes the prediction."""
    conditional = Conditional(dims=(1,), active=lambda X: torch.stack([X[:, 0] >= 0, X[:, 0] > 0.5], dim=-1))
    rng = np.random.default_rng(7)
    X = rng.random((14, 2))
    y = np.where(X[:, 0] > 0.5, np.sin(6 * X[:, 1]), X[:, 0])
    gp = GP(conditional=conditional, seed=7, burn_in=3, sweeps_per_fit=1, n_samples=3)
    gp.fit(torch.tensor(X), torch.tensor(y - y.mean()))
    assert len(gp.hyperparameters()["rho"][0]) == 1
    a = torch.tensor([[0.2, 0.1], [0.3, 0.9]], dtype=torch.float64)
    b = a.clone()
    b[:, 1] = torch.tensor([0.7, 0.4])
    for got, expected in zip(gp.posterior(a), gp.posterior(b)):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    # training values of the inactive input do not matter either
    X2 = X.copy()
    X2[X[:, 0] <= 0.5, 1] = 0.5
    assert torch.allclose(gp.log_marginal_likelihood(gp.chains, torch.tensor(X), torch.tensor(y)),
                          gp.log_marginal_likelihood(gp.chains, torch.tensor(X2), torch.tensor(y)), rtol=1e-12)


@pytest.mark.slow
def test_warping_learns_a_log_like_warp_for_a_function_of_log_x():
    """f(x) = sin(3 log(x + 0.01)) varies fast near 0: the learned warp stretches small x."""
    x = np.random.default_rng(8).random((30, 1))
    y = np.sin(3 * np.log(x[:, 0] + 0.01))
    gp = GP(seed=8, burn_in=40)
    gp.fit(torch.tensor(x), torch.tensor((y - y.mean()) / y.std()))
    summary = gp.warpings(grid_size=11)
    assert summary["inputs"][0]["mean"][1] > 0.5  # w(0.1) far above 0.1 (0.79 measured)


def test_duration_model_predicts_log_duration_and_is_differentiable():
    from spearmint_nn.models.duration import DurationModel

    rng = np.random.default_rng(9)
    X = rng.random((20, 2))
    log_seconds = 1.0 + 3.0 * X[:, 0]  # ten times longer at x0 = 1 than at x0 = 0.2 or so
    model = DurationModel(seed=9)
    model.fit(torch.tensor(X), torch.tensor(log_seconds))
    Xt = torch.tensor(rng.random((6, 2)), requires_grad=True)
    predicted = model.predict(Xt)
    assert predicted.shape == (6,)
    np.testing.assert_allclose(predicted.detach().numpy(), 1.0 + 3.0 * Xt.detach().numpy()[:, 0], atol=0.05)
    predicted.sum().backward()
    np.testing.assert_allclose(Xt.grad[:, 0].numpy(), 3.0, atol=0.3)
    # constant durations are fine (no division by a zero spread)
    model.fit(torch.tensor(X), torch.full((20,), 2.0, dtype=torch.float64))
    np.testing.assert_allclose(model.predict(Xt.detach()).numpy(), 2.0, atol=1e-4)


def test_ei_per_second_divides_integrated_ei_by_predicted_duration():
    from spearmint_nn.search.acquisition import ACQUISITIONS, LogExpectedImprovement

    X, y = data(n=10)
    gp = GP(seed=10, burn_in=2, sweeps_per_fit=1, n_samples=3)
    gp.fit(torch.tensor(X), torch.tensor(y))

    class SlowOnTheRight:
        def predict(self, X):
            return 5.0 * X[:, 0]  # log seconds

    candidates = torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    per_second = ACQUISITIONS["ei-per-second"](gp, float(y.min()), duration=SlowOnTheRight())
    plain = LogExpectedImprovement(gp, float(y.min()))
    np.testing.assert_allclose(per_second(candidates).detach().numpy(),
                               (plain(candidates) - 5.0 * candidates[:, 0]).detach().numpy(), rtol=1e-12)
    assert candidates[per_second(candidates).argmax(), 0] <= candidates[plain(candidates).argmax(), 0]


# ---- which inputs are warped -----------------------------------------------------------------

def _one_hot_data(n=14, seed=11):
    """Two continuous inputs and a 0/1 column (one option of a one-hot ENUM)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    X[:, 2] = rng.integers(0, 2, n)
    y = np.sin(5 * X[:, 0]) + X[:, 1] ** 2 + 0.8 * X[:, 2]
    return torch.tensor(X), torch.tensor((y - y.mean()) / y.std())


def _conditioned_on(gp, layout, theta, X, y):
    """gp conditioned on (X, y) at exactly the states theta (C, size), as a fit ending there would."""
    gp.layout, gp.chains, gp._n_observed = layout, theta, len(X)
    gp._data = gp._condition(Hypers.unpack(theta, layout), X, y.expand(len(theta), 1, len(X)), len(X))
    return gp


def test_an_unwarped_one_hot_column_has_no_shapes_and_predicts_as_if_its_warp_were_absent():
    X, y = _one_hot_data()
    full = GP(n_inputs=3, seed=0, n_samples=4)
    part = GP(n_inputs=3, seed=0, n_samples=4, warped_columns=[True, True, False])
    full_layout, part_layout = full.layout_for(3), part.layout_for(3)
    assert part_layout.warped == (0, 1) and full_layout.warped == (0, 1, 2)
    assert full_layout.size - part_layout.size == 2  # the one-hot column's (log alpha, log beta)
    assert part.layout_for(3) == GP(n_inputs=3, warped_columns=[1, 0]).layout_for(3)  # indices or mask

    g = torch.Generator().manual_seed(0)
    theta_full = full_layout.pack(lengthscales=0.5) + 0.3 * torch.randn(4, full_layout.size, generator=g, dtype=torch.float64)
    theta_full[:, full_layout.log_alpha.start + 2] = 1.5  # a strong warp of the one-hot column,
    theta_full[:, full_layout.log_beta.start + 2] = -1.0  # which cannot matter at 0 and 1
    kept = [i for i in range(full_layout.size) if i not in (full_layout.log_alpha.start + 2, full_layout.log_beta.start + 2)]
    theta_part = theta_full[:, kept]
    identity = theta_full.clone()
    identity[:, [full_layout.log_alpha.start + 2, full_layout.log_beta.start + 2]] = 0.0

    np.testing.assert_allclose(part.log_marginal_likelihood(theta_part, X, y).numpy(),
                               full.log_marginal_likelihood(theta_full, X, y).numpy(), rtol=1e-12)
    _conditioned_on(full, full_layout, theta_full, X, y)
    _conditioned_on(part, part_layout, theta_part, X, y)
    Xs = torch.tensor(np.random.default_rng(1).random((7, 3)))
    Xs[:, 2] = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    for got, expected in zip(part.posterior(Xs), full.posterior(Xs)):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    # Between 0 and 1 the unwarped column is the identity, not the sampled warp.
    Xs[:, 2] = 0.3
    with_identity = _conditioned_on(GP(n_inputs=3, seed=0, n_samples=4), full_layout, identity, X, y)
    for got, expected in zip(part.posterior(Xs), with_identity.posterior(Xs)):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    assert not torch.allclose(part.posterior(Xs)[0], full.posterior(Xs)[0], atol=1e-3)

    hypers = part.hyperparameters()
    assert hypers["warped_columns"] == [0, 1] and np.array(hypers["alpha"]).shape == (4, 2)
    assert part.warpings(grid_size=5)["columns"] == [0, 1]
    assert len(part.warpings(grid_size=5)["inputs"]) == 2


def test_a_gp_warping_no_column_has_no_warp_shapes_and_no_warpings():
    X, y = _one_hot_data(n=8)
    gp = GP(n_inputs=3, seed=0, n_samples=2, burn_in=1, sweeps_per_fit=1, warped_columns=[False] * 3)
    assert gp.layout_for(3).size == GP(n_inputs=3, warping=False).layout_for(3).size
    gp.fit(X, y)
    assert gp.warpings() is None and "alpha" not in gp.hyperparameters()


@pytest.mark.parametrize("bad", [[0, 3], [1, 1], [True, False], [-1]])
def test_a_bad_warped_column_list_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="warped_columns"):
        GP(n_inputs=3, warped_columns=bad)


def test_saved_chains_of_another_warped_column_set_or_layout_format_are_rejected():
    X, y = _one_hot_data(n=8)
    everything = GP(n_inputs=3, seed=0, n_samples=3, burn_in=1, sweeps_per_fit=1)
    everything.fit(X, y)
    masked = GP(n_inputs=3, n_samples=3, warped_columns=[True, True, False])
    with pytest.raises(ValueError, match="layout"):
        masked.load_state_dict(everything.state_dict())
    assert masked.chains is None
    # A layout without its warped columns (as GPs recorded it before they were chosen).
    old = {**everything.state_dict(), "layout": {"n_dims": 3, "warping": True, "noiseless": False, "n_arc": 0}}
    for model in (masked, GP(n_inputs=3, n_samples=3)):
        with pytest.raises(ValueError, match="not in this version's format"):
            model.load_state_dict(old)


def test_a_model_folder_of_an_earlier_version_restores_a_fresh_model(tmp_path, caplog):
    """Model folders written before the one state file (gp.json, dngo_state.json with
    dngo_weights.pt, classifier.pt) are not read: the model starts afresh, as after a crash."""
    X, y = data(n=8)
    (tmp_path / "gp.json").write_text(json.dumps({"n_inputs": 2, "layout": None, "chains": None}))
    (tmp_path / "warpings.json").write_text("{}")
    with caplog.at_level("INFO", logger="spearmint_nn"):
        fresh = model_store.restore_state(tmp_path, GP(n_inputs=2, seed=0, n_samples=2, burn_in=1), 2)
    assert fresh.chains is None and "starting afresh" in caplog.text
    fresh.fit(torch.tensor(X), torch.tensor(y))
    (tmp_path / model_store.STATE_FILE).write_bytes(b"PK\x03\x04 not a zip")
    caplog.clear()
    with caplog.at_level("WARNING", logger="spearmint_nn"):
        assert model_store.restore_state(tmp_path, GP(n_inputs=2, n_samples=2), 2).chains is None
    assert "ignoring unreadable saved" in caplog.text


MIXED = {
    "kind": {"type": "ENUM", "options": ["a", "b", "c"]},
    "shared": {"type": "FLOAT", "min": 0.0, "max": 1.0, "size": 2},
    "layers": {"type": "INT", "min": 1, "max": 3},
    "only_a": {"type": "FLOAT", "min": 0.0, "max": 1.0, "when": {"kind": "a"}},
    "second": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"layers": {">=": 2}}},
}
QUICK = {"n_samples": 3, "burn_in": 2, "sweeps_per_fit": 1}


def _observe_random(opt, n, seed=0):
    rng = np.random.default_rng(seed)
    for params in opt.space.decode(opt.space.project(rng.random((n, opt.space.dim)))):
        opt.observe(params, float(rng.random()))


def test_the_optimizer_warps_the_float_and_int_value_columns_only(tmp_path):
    opt = Optimizer(MIXED, model="gp", seed=0, initial_design=3, model_options=QUICK, state_dir=tmp_path)
    space = opt.space
    value_columns = [col for name in ("shared", "layers", "only_a", "second")
                     for col in range(space.dim)[space.value_columns(name)]]
    assert np.flatnonzero(continuous_columns(space)).tolist() == value_columns
    gp = opt.models.new_surrogate("main")
    assert gp.layout_for(space.dim).warped == tuple(value_columns)
    # Not warped: the three one-hot columns of "kind" and the indicators of "only_a" and "second".
    assert space.dim - len(value_columns) == 5
    every = GP(n_inputs=space.dim, conditional=gp.conditional, noiseless=gp.noiseless)
    assert every.layout_for(space.dim).size - gp.layout_for(space.dim).size == 2 * 5
    _observe_random(opt, 6)
    opt.suggest(1)
    assert opt.models.objective.hyperparameters()["warped_columns"] == value_columns
    assert opt.models.objective.warpings()["columns"] == value_columns
    assert Optimizer(MIXED, model="gp-nowarp", seed=0).models.new_surrogate("main").layout_for(space.dim).warped == ()
    # DNGO's trained warp gets the same columns, and reports its warp the same way.
    dngo_dir = tmp_path / "dngo"
    opt = Optimizer(MIXED, model="dngo-warp", seed=0, initial_design=3, state_dir=dngo_dir,
                    model_options={"n_samples": 3, "burn_in": 2, "lbfgs_steps": 30, "lbfgs_warm_steps": 10})
    assert opt.models.new_surrogate("main").net.warped_columns == tuple(value_columns)
    _observe_random(opt, 6)
    opt.suggest(1)
    assert opt.models.objective.warpings()["columns"] == value_columns
    plain = Optimizer(MIXED, model="dngo", seed=0).models.new_surrogate("main").net
    assert plain.warped_columns == () and plain.fourier_features == 128
    assert opt.models.new_surrogate("main").net.fourier_features == 0  # dngo-warp keeps the paper's basis


def test_the_optimizer_starts_fresh_chains_over_a_state_that_warped_every_column(tmp_path, caplog):
    fresh = Optimizer(MIXED, model="gp", seed=0, model_options=QUICK).models.new_surrogate("main")
    space_dim = fresh.n_inputs
    everything = GP(n_inputs=space_dim, n_samples=3, conditional=fresh.conditional, noiseless=fresh.noiseless)
    layout = everything.layout_for(space_dim)
    assert dataclasses.replace(layout, warped=fresh.layout_for(space_dim).warped) == fresh.layout_for(space_dim)
    everything.layout, everything.chains = layout, layout.pack().expand(3, -1)
    model_store.save_state(tmp_path / "objective", everything)
    opt = Optimizer(MIXED, model="gp", seed=0, initial_design=3, model_options=QUICK, state_dir=tmp_path)
    _observe_random(opt, 6)
    with caplog.at_level("WARNING", logger="spearmint_nn"):
        opt.suggest(1)
    assert "ignoring saved objective model" in caplog.text and "layout" in caplog.text
    assert opt.models.objective.layout.warped == tuple(np.flatnonzero(continuous_columns(opt.space)))
    saved = torch.load(tmp_path / "objective" / model_store.STATE_FILE, weights_only=True)
    assert saved["layout"]["warped"] == list(opt.models.objective.layout.warped)  # replaced by the fresh chains


def test_few_points_of_a_smooth_function_are_not_explained_as_noise():
    """Eight Sobol points of Branin (standardised): the samples put the noise well below the data.

    Under Spearmint's top-hat on the length scales (density ~ l in log l) the posterior of so few
    points sits in an "all noise" mode, noise variance 0.5-0.85 of the data's (measured, seeds
    0-5); the log-normal length-scale prior keeps it at 0.04-0.16, which lets EI exploit.
    """
    branin = FUNCTIONS["branin"]
    lower, upper = np.array(branin.bounds).T
    for seed in range(6):
        X = scipy.stats.qmc.Sobol(branin.dim, seed=seed).random(8)
        y = np.array([branin.function(lower + x * (upper - lower)) for x in X])
        gp = GP(warping=False, seed=seed)
        gp.fit(torch.tensor(X), torch.tensor((y - y.mean()) / y.std()))
        assert np.median(gp.hyperparameters()["noise"]) < 0.3, seed


def test_training_correlation_memo_computes_each_new_shape_once_and_reuses_kept_ones():
    X, _ = data(n=10, d=3)
    X = torch.tensor(X)
    gp = GP(3, seed=0)
    layout = gp.layout_for(3)
    computed = []
    fresh = gp._correlation
    gp._correlation = lambda X, h, W=None: computed.append(len(h.mean)) or fresh(X, h, W)
    memo = _TrainingCorrelation(gp, X, layout)
    chains = layout.pack(lengthscales=0.4) + 0.3 * torch.randn(4, layout.size, generator=torch.Generator().manual_seed(1),
                                                               dtype=torch.float64)
    memo(chains, Hypers.unpack(chains, layout))
    ends = chains.repeat(2, 1)
    ends[:, 0] += 1.0  # the mean: no shape moves, every state is kept
    memo(ends, Hypers.unpack(ends, layout))
    some = chains[[2, 0]].clone()
    some[:, layout.log_lengthscales.start] += 0.1  # a length scale: two new shapes, each computed once
    memo(some.repeat(2, 1), Hypers.unpack(some.repeat(2, 1), layout))
    memo(chains[[3]], Hypers.unpack(chains[[3]], layout))  # kept from the first call
    assert computed == [4, 2]


@pytest.mark.parametrize("multitask", [False, True])
def test_a_screened_posterior_is_each_fantasy_posterior_at_its_candidates(multitask):
    """Pending points added one at a time to a fixed candidate set give, under a fantasy's own
    draws, the posterior of that fantasy (conditioned anew on all of them) at the candidates."""
    from spearmint_nn.models.multitask_gp import MultiTaskGP

    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.random((25, 3)))
    y = torch.sin(6 * X).sum(1)
    if multitask:
        X_related = torch.as_tensor(rng.random((15, 3)))
        model = MultiTaskGP([(X_related, torch.sin(6 * X_related).sum(1))], seed=0, n_samples=4, burn_in=5)
    else:
        model = GP(seed=0, burn_in=5, n_samples=4)
    model.fit(X, y)
    C = torch.as_tensor(rng.random((300, 3)))
    screened = model.screen(C)
    for got, want in zip(screened.posterior(), model.posterior(C)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-12)
    pending = torch.as_tensor(rng.random((12, 3)))
    for j in (1, 2, 3, 12):
        screened.add_pending(pending[len(screened.X_pending):j])
        fantasy = model.fantasize(pending[:j], 3, torch.Generator().manual_seed(j))
        mean, var = fantasy.posterior(C)
        got_mean, got_var = screened.posterior(fantasy.whitened_fantasies)
        np.testing.assert_allclose(got_mean.numpy(), mean.numpy(), rtol=0, atol=1e-10)
        np.testing.assert_allclose(got_var.numpy(), var.numpy(), rtol=0, atol=1e-10)
        rows = slice(40, 90)
        np.testing.assert_allclose(screened.posterior(fantasy.whitened_fantasies, rows)[0].numpy(), mean[:, rows].numpy(),
                                   rtol=0, atol=1e-10)
    assert float(var.max() - var.min()) > 0.1  # the pending points moved the variance
    with pytest.raises(ValueError, match="whitened fantasies"):
        screened.posterior()
    with pytest.raises(ValueError, match="not from a fantasy"):
        fantasy.screen(C)
