"""Bayesian linear regression against the equivalent linear-kernel Gaussian process."""
import math

import pytest
import torch

from spearmint_nn.models.blr import BLRPosterior, GramSpectrum, log_marginal_likelihood

torch.set_num_threads(1)
DT = torch.float64


def problem(seed=0, n=25, d=7, s=3):
    g = torch.Generator().manual_seed(seed)
    Phi = torch.tanh(torch.randn(n, d, generator=g, dtype=DT))
    ytil = torch.randn(s, n, generator=g, dtype=DT)  # one target vector per hyperparameter sample
    alpha = torch.tensor([0.3, 1.0, 5.0], dtype=DT)[:s]
    beta = torch.tensor([2.0, 50.0, 400.0], dtype=DT)[:s]
    return g, Phi, ytil, alpha, beta


def gp_covariance(A, B, alpha):
    """Linear kernel of the BLR: k(x, x') = phi(x)^T phi(x') / alpha."""
    return A @ B.T / alpha


@pytest.mark.parametrize("n, d", [(25, 7), (6, 40)])  # (6, 40): more basis functions than data
def test_log_marginal_likelihood_equals_multivariate_normal_density(n, d):
    _, Phi, ytil, alpha, beta = problem(n=n, d=d)
    n = Phi.shape[0]
    ours = log_marginal_likelihood(GramSpectrum.of(Phi.T @ Phi), ytil @ Phi, (ytil * ytil).sum(-1), n, alpha, beta)
    for s in range(len(alpha)):
        cov = gp_covariance(Phi, Phi, alpha[s]) + torch.eye(n, dtype=DT) / beta[s]
        direct = torch.distributions.MultivariateNormal(torch.zeros(n, dtype=DT), cov).log_prob(ytil[s])
        assert abs(ours[s].item() - direct.item()) < 1e-8, (s, ours[s].item(), direct.item())


def test_log_marginal_likelihood_is_minus_infinity_for_a_singular_system():
    _, Phi, ytil, _, _ = problem()
    bad = log_marginal_likelihood(GramSpectrum.of(Phi.T @ Phi), ytil @ Phi, (ytil * ytil).sum(-1), len(Phi),
                                  torch.tensor([-1.0, 1.0, 1.0], dtype=DT), torch.ones(3, dtype=DT))
    assert bad[0] == -math.inf and torch.isfinite(bad[1:]).all()


def test_posterior_equals_linear_kernel_gp_posterior():
    g, Phi, ytil, alpha, beta = problem()
    Phi_star = torch.tanh(torch.randn(9, Phi.shape[1], generator=g, dtype=DT))
    blr = BLRPosterior(Phi.T @ Phi, (ytil @ Phi)[:, None, :], alpha, beta)
    mean, latent_var = blr.predict(Phi_star, observation_noise=False)
    _, noisy_var = blr.predict(Phi_star, observation_noise=True)
    n = Phi.shape[0]
    for s in range(len(alpha)):
        K = gp_covariance(Phi, Phi, alpha[s]) + torch.eye(n, dtype=DT) / beta[s]
        k_star = gp_covariance(Phi_star, Phi, alpha[s])
        gp_mean = k_star @ torch.linalg.solve(K, ytil[s])
        gp_var = torch.diagonal(gp_covariance(Phi_star, Phi_star, alpha[s])) - (
            k_star * torch.linalg.solve(K, k_star.T).T
        ).sum(-1)
        torch.testing.assert_close(mean[s, 0], gp_mean, rtol=0, atol=1e-9)
        torch.testing.assert_close(latent_var[s], gp_var, rtol=0, atol=1e-9)
        torch.testing.assert_close(noisy_var[s], gp_var + 1 / beta[s], rtol=0, atol=1e-9)


def test_rank_j_update_equals_refit_with_the_extra_rows():
    g, Phi, ytil, alpha, beta = problem(n=30)
    base_rows, J, k = 22, 8, 4
    Phi_base, Phi_new = Phi[:base_rows], Phi[base_rows:]
    base = BLRPosterior(Phi_base.T @ Phi_base, (ytil[:, :base_rows] @ Phi_base)[:, None, :], alpha, beta)
    # k different target vectors for the new rows per sample, as fantasies produce.
    new_targets = torch.randn(len(alpha), k, J, generator=g, dtype=DT)
    updated = base.add_rows(Phi_new, new_targets)
    Phi_star = torch.tanh(torch.randn(5, Phi.shape[1], generator=g, dtype=DT))
    mean, var = updated.predict(Phi_star)
    assert mean.shape == (len(alpha), k, 5) and var.shape == (len(alpha), 5)
    for i in range(k):
        full_targets = torch.cat([ytil[:, :base_rows], new_targets[:, i]], dim=1)
        refit = BLRPosterior(Phi.T @ Phi, (full_targets @ Phi)[:, None, :], alpha, beta)
        refit_mean, refit_var = refit.predict(Phi_star)
        torch.testing.assert_close(mean[:, i], refit_mean[:, 0], rtol=0, atol=1e-10)
        torch.testing.assert_close(var, refit_var, rtol=0, atol=1e-10)


def test_weight_draws_have_the_posterior_mean_and_covariance():
    g, Phi, ytil, alpha, beta = problem(d=4)
    blr = BLRPosterior(Phi.T @ Phi, (ytil @ Phi)[:, None, :], alpha, beta)
    draws = blr.sample_weights(20000, g)  # (S, 1, n, D)
    for s in range(len(alpha)):
        w = draws[s, 0]
        covariance = torch.cholesky_inverse(blr.chol[s])  # reference only
        sd = covariance.diagonal().sqrt()
        assert ((w.mean(0) - blr.mean[s, 0]).abs() < 4 * sd / math.sqrt(len(w))).all()
        empirical = torch.cov(w.T)
        torch.testing.assert_close(empirical, covariance, rtol=0, atol=0.05 * sd.max().item() ** 2)
