"""The multi-task GP: a spherically parametrised task correlation that the sampler recovers, and
per-task warps that recover known opposite warpings."""
from __future__ import annotations

import math

import pytest
import torch

from spearmint_nn.models.gp import GP
from spearmint_nn.models.multitask_gp import MultiTaskGP, task_cholesky
from spearmint_nn.search.model_store import save_state

torch.set_num_threads(1)


def _f(x):
    return torch.sin(6 * x[:, 0]) + 0.5 * torch.cos(4 * x[:, 1])


def _unrelated(x):
    return torch.cos(11 * x[:, 0] + 2) * torch.sin(7 * x[:, 1])


def _standardised(y):
    return (y - y.mean()) / y.std()


def test_the_spherical_factor_gives_a_correlation_matrix_for_any_angles():
    angles = math.pi * torch.rand(5, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    L = task_cholesky(angles, 4)
    C = L @ L.transpose(1, 2)
    torch.testing.assert_close(torch.diagonal(C, dim1=1, dim2=2), torch.ones(5, 4, dtype=torch.float64))
    assert (torch.linalg.eigvalsh(C) > -1e-12).all()
    assert torch.equal(L, torch.tril(L))
    torch.testing.assert_close(C[:, 1, 0], torch.cos(angles[:, 0]))  # two tasks: correlation cos(angle)


@pytest.mark.parametrize("related, low, high", [(lambda x: 3 * _f(x) + 5, 0.9, 1.0),  # same up to scale
                                                (lambda x: -_f(x), -1.0, -0.9),        # opposite
                                                (_unrelated, -0.6, 0.6)])              # unrelated
def test_the_sampler_recovers_a_known_task_correlation(related, low, high):
    gen = torch.Generator().manual_seed(0)
    X_related = torch.rand(30, 2, generator=gen, dtype=torch.float64)
    X = torch.rand(8, 2, generator=gen, dtype=torch.float64)
    model = MultiTaskGP([(X_related, related(X_related))], warping=False, seed=0, n_samples=8, burn_in=30)
    model.fit(X, _standardised(_f(X)))
    correlation = model.task_correlations()[:, 1]
    # a sampler that never moved would sit at its spread start: uniform over (-1, 1)
    assert low <= float(correlation.median()) <= high, correlation
    assert model.task_correlations()[:, 0].eq(1).all()


@pytest.mark.slow
def test_a_related_task_helps_and_an_unrelated_one_does_not_hurt_much():
    gen = torch.Generator().manual_seed(1)
    X_related = torch.rand(30, 2, generator=gen, dtype=torch.float64)
    X = torch.rand(8, 2, generator=gen, dtype=torch.float64)
    X_test = torch.rand(300, 2, generator=gen, dtype=torch.float64)
    y = _f(X)

    def error(model) -> float:
        model.fit(X, _standardised(y))
        mean = model.posterior(X_test)[0].mean(0) * y.std() + y.mean()
        return float(((mean - _f(X_test)) ** 2).mean().sqrt())

    alone = error(GP(warping=False, seed=0, n_samples=8))
    helped = error(MultiTaskGP([(X_related, 2 * _f(X_related))], warping=False, seed=0, n_samples=8, burn_in=30))
    unrelated = error(MultiTaskGP([(X_related, _unrelated(X_related))], warping=False, seed=0, n_samples=8,
                                  burn_in=30))
    assert helped < 0.3 * alone
    assert unrelated < 1.3 * alone


@pytest.mark.slow
def test_each_task_learns_its_own_warp_opposite_warpings_recovered():
    gen = torch.Generator().manual_seed(1)

    def latent(u):  # stationary in the latent input u
        return torch.sin(7 * u[:, 0])

    X_related = torch.rand(40, 1, generator=gen, dtype=torch.float64)
    X = torch.rand(40, 1, generator=gen, dtype=torch.float64)
    # the current task sees u = x^2 (Beta(2, 1)'s CDF), the related one u = 1 - (1 - x)^2 (Beta(1, 2)'s)
    model = MultiTaskGP([(X_related, latent(1 - (1 - X_related) ** 2))], warping=True, seed=0, n_samples=10,
                        burn_in=60)
    model.fit(X, _standardised(latent(X**2)))
    grid = torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)
    warps = model.warp_values(grid).median(0).values[..., 0]  # (T, G)
    torch.testing.assert_close(warps[0], grid**2, atol=0.08, rtol=0)
    torch.testing.assert_close(warps[1], 1 - (1 - grid) ** 2, atol=0.08, rtol=0)
    assert float(model.task_correlations()[:, 1].median()) > 0.9  # the same function, once unwarped


def _two_task_model():
    gen = torch.Generator().manual_seed(2)
    X_related = torch.rand(20, 2, generator=gen, dtype=torch.float64)
    X = torch.rand(6, 2, generator=gen, dtype=torch.float64)
    model = MultiTaskGP([(X_related, _f(X_related))], warping=True, seed=0, n_samples=4, burn_in=10,
                        noiseless=True)
    model.fit(X, _standardised(_f(X)))
    return model, X


def test_fantasies_condition_the_current_task_on_draws_at_pending_points():
    model, X = _two_task_model()
    pending = torch.tensor([[0.5, 0.5], [0.9, 0.1]], dtype=torch.float64)
    fantasy = model.fantasize(pending, 3, torch.Generator().manual_seed(0))
    mean, var = fantasy.posterior(pending)
    assert mean.shape == var.shape == (4 * 3, 2)
    drawn = fantasy._data.Y[:, :, -2:].reshape(12, 2)
    torch.testing.assert_close(mean, drawn, atol=1e-3, rtol=0)  # noiseless: the posterior passes through its draws
    assert float(var.max()) < 1e-3 and model.posterior(pending)[0].shape == (4, 2)  # the original is unchanged
    draw = model.sample_f(torch.rand(50, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64),
                          torch.Generator().manual_seed(3))
    assert draw.shape == (50,) and torch.isfinite(draw).all()
    at_data = model.sample_f(X, torch.Generator().manual_seed(4))
    torch.testing.assert_close(at_data, _standardised(_f(X)), atol=1e-2, rtol=0)  # a draw through the observations


def test_a_saved_state_predicts_the_same_and_refuses_another_model(tmp_path):
    model, X = _two_task_model()
    grid = torch.rand(10, 2, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    save_state(tmp_path, model)  # through torch.save and torch.load(weights_only=True), as the daemon keeps it
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    gen = torch.Generator().manual_seed(2)
    X_related = torch.rand(20, 2, generator=gen, dtype=torch.float64)
    restored = MultiTaskGP([(X_related, _f(X_related))], warping=True, seed=1, n_samples=4, noiseless=True)
    restored.load_state_dict(state)
    torch.testing.assert_close(restored.posterior(grid)[0], model.posterior(grid)[0])
    single = MultiTaskGP([], warping=True, n_samples=4, noiseless=True)
    with pytest.raises(ValueError, match="tasks"):
        single.load_state_dict(state)
    with pytest.raises(ValueError, match="shape"):
        MultiTaskGP([(X_related, _f(X_related))], warping=True, n_samples=3, noiseless=True).load_state_dict(state)
