"""Matérn 5/2, the squared exponential and the arc kernel for conditional inputs (Swersky et al. 2013)."""
import math

import numpy as np
import torch

from spearmint_nn.models.kernels import CORRELATIONS, Conditional, covariance, embed, matern52, squared_distances, squared_exponential

# Input 0 is always active; input 1 is active when input 0 > 0.5; input 2 when input 0 > 0.25.
CONDITIONAL = Conditional(dims=(1, 2), active=lambda X: torch.stack([X[:, 0] >= 0, X[:, 0] > 0.5, X[:, 0] > 0.25], dim=-1))


def arc_cov(X: torch.Tensor, log_ls: torch.Tensor, rho: torch.Tensor, conditional=CONDITIONAL) -> torch.Tensor:
    E = embed(X, log_ls, conditional, conditional.active(X), rho)
    return covariance(E, E, torch.ones(log_ls.shape[0], dtype=X.dtype))


def test_matern52_matches_the_closed_form_and_has_a_finite_gradient_at_zero():
    r = np.linspace(0, 4, 41)
    expected = (1 + math.sqrt(5) * r + 5 / 3 * r**2) * np.exp(-math.sqrt(5) * r)
    np.testing.assert_allclose(matern52(torch.tensor(r**2)).numpy(), expected, rtol=1e-14)
    A = torch.rand(1, 5, 3, dtype=torch.float64, requires_grad=True)
    covariance(A, A, torch.ones(1, dtype=torch.float64)).sum().backward()
    assert torch.isfinite(A.grad).all()


def test_squared_exponential_matches_the_closed_form_and_is_positive_definite_on_the_arc_embedding():
    r = np.linspace(0, 4, 41)
    np.testing.assert_allclose(squared_exponential(torch.tensor(r**2)).numpy(), np.exp(-0.5 * r**2), rtol=1e-14)
    assert CORRELATIONS["squared-exponential"] is squared_exponential and CORRELATIONS["matern52"] is matern52
    # Distinct points of a conditional space, some inactive: the arc embedding keeps K PD.
    X = torch.rand(12, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    log_ls = torch.full((1, 3), math.log(0.4), dtype=torch.float64)
    E = embed(X, log_ls, CONDITIONAL, CONDITIONAL.active(X), torch.full((1, 2), 0.7, dtype=torch.float64))
    K = covariance(E, E, torch.ones(1, dtype=torch.float64), squared_exponential)[0]
    assert torch.linalg.eigvalsh(K).min() > 0
    # It is smoother than Matérn 5/2: higher correlation at short range, lower far away.
    r2 = torch.tensor([0.01, 9.0], dtype=torch.float64)
    assert squared_exponential(r2)[0] > matern52(r2)[0] and squared_exponential(r2)[1] < matern52(r2)[1]


def test_squared_distances_match_direct_differences():
    A, B = torch.rand(2, 6, 4, dtype=torch.float64), torch.rand(2, 3, 4, dtype=torch.float64)
    direct = ((A[:, :, None, :] - B[:, None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(squared_distances(A, B).numpy(), direct.numpy(), atol=1e-13)


def test_arc_inactive_values_do_not_matter():
    """Property 1: for two points with the same inactive set, inactive values never matter."""
    log_ls = torch.log(torch.tensor([[0.3, 0.2, 0.5]], dtype=torch.float64))
    rho = torch.tensor([[0.7, 0.4]], dtype=torch.float64)
    a = torch.tensor([[0.1, 0.9, 0.05], [0.2, 0.1, 0.2]], dtype=torch.float64)  # inputs 1, 2 inactive
    b = a.clone()
    b[:, 1] = torch.tensor([0.33, 0.77])
    b[:, 2] = torch.tensor([0.99, 0.01])
    np.testing.assert_allclose(arc_cov(a, log_ls, rho).numpy(), arc_cov(b, log_ls, rho).numpy(), atol=1e-15)
    # and the inactive coordinates embed at the origin
    E = embed(b, log_ls, CONDITIONAL, CONDITIONAL.active(b), rho)
    assert torch.all(E[0, :, [1, 2, 3, 4]] == 0)


def test_arc_active_inactive_covariance_depends_only_on_shared_inputs():
    """Property 2: between an active and an inactive point, only input 0 (shared) matters."""
    log_ls = torch.log(torch.tensor([[0.3, 0.2, 0.5]], dtype=torch.float64))
    rho = torch.tensor([[0.9, 0.6]], dtype=torch.float64)
    values = []
    for x1_inactive, x1_active in [(0.1, 0.2), (0.9, 0.2), (0.5, 0.95), (0.0, 0.0)]:
        pair = torch.tensor([[0.2, x1_inactive, 0.0], [0.6, x1_active, 0.3]], dtype=torch.float64)
        values.append(arc_cov(pair, log_ls, rho)[0, 0, 1].item())
    np.testing.assert_allclose(values, values[0], rtol=1e-13)
    # while between two active points the conditional input does matter
    both = torch.tensor([[0.6, 0.1, 0.3], [0.6, 0.8, 0.3]], dtype=torch.float64)
    assert arc_cov(both, log_ls, rho)[0, 0, 1] < 0.99


def test_arc_kernel_is_positive_semidefinite_on_random_mixed_inputs():
    g = torch.Generator().manual_seed(3)
    X = torch.rand(150, 3, generator=g, dtype=torch.float64)
    log_ls = torch.log(torch.rand(6, 3, generator=g, dtype=torch.float64) * 2 + 0.01)
    rho = torch.rand(6, 2, generator=g, dtype=torch.float64)
    K = arc_cov(X, log_ls, rho)
    eigenvalues = torch.linalg.eigvalsh(K)
    assert eigenvalues.min() > -1e-10 * K.shape[-1]
    # and genuinely mixed: some points have input 1 inactive, some active
    active = CONDITIONAL.active(X)
    assert 0 < active[:, 1].sum() < len(X)


def test_embed_without_conditions_is_inputs_over_lengthscales():
    X = torch.rand(4, 2, dtype=torch.float64)
    log_ls = torch.log(torch.tensor([[0.5, 2.0]], dtype=torch.float64))
    np.testing.assert_allclose(embed(X, log_ls).numpy()[0], (X / torch.tensor([0.5, 2.0])).numpy(), rtol=1e-15)
