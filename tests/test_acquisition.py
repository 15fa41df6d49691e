"""Acquisition functions: log-EI against Monte Carlo and finite differences, numerical safety,
fantasies over pending jobs, and the constrained variants.

``ExactGP`` below is a small exact-GP test double of the Surrogate seam (batched over
length-scale "samples", with joint fantasies); test_optimize and test_optimizer reuse it.
"""
from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from spearmint_nn.acquisition import (
    FeasibilityWeighted,
    LogExpectedImprovement,
    LogProbabilityOfFeasibility,
    LogProbabilityOfImprovement,
    LowerConfidenceBound,
    condition_on_pending,
    log_h,
    make_acquisition,
)
from spearmint_nn.models.base import Surrogate

torch.set_num_threads(1)


class ExactGP(Surrogate):
    """Zero-mean GP, squared-exponential kernel, one row per length scale (the "samples").

    Targets may differ per row (fantasies): ``Y`` has shape (R, N) and ``lengthscales`` (R,).
    """

    def __init__(self, n_inputs: int = 1, seed: int | None = None, lengthscales=(0.15, 0.25), noise: float = 1e-4):
        self.n_inputs, self.noise = n_inputs, noise
        self.lengthscales = torch.as_tensor(lengthscales, dtype=torch.float64)
        self.X = torch.zeros(0, n_inputs, dtype=torch.float64)
        self.Y = torch.zeros(len(lengthscales), 0, dtype=torch.float64)
        self.n_fits = 0

    def _kernel(self, A: Tensor, B: Tensor) -> Tensor:
        sq = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)  # (M, N)
        return torch.exp(-0.5 * sq[None] / self.lengthscales[:, None, None] ** 2)  # (R, M, N)

    def fit(self, X: Tensor, y: Tensor) -> None:
        self.X = torch.as_tensor(X, dtype=torch.float64)
        self.Y = torch.as_tensor(y, dtype=torch.float64).expand(len(self.lengthscales), -1).clone()
        self.n_fits += 1

    def _factor(self) -> Tensor:
        K = self._kernel(self.X, self.X) + self.noise * torch.eye(self.X.shape[0], dtype=torch.float64)
        return torch.linalg.cholesky(K)

    def posterior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        L = self._factor()
        Ks = self._kernel(self.X, X)  # (R, N, M)
        alpha = torch.cholesky_solve(self.Y[..., None], L)  # (R, N, 1)
        mean = (Ks * alpha).sum(1)  # (R, M)
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        return mean, (1.0 - (v * v).sum(1)).clamp_min(1e-12)

    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "ExactGP":
        L = self._factor()
        Ks = self._kernel(self.X, X_pending)
        alpha = torch.cholesky_solve(self.Y[..., None], L)
        mean = (Ks * alpha).sum(1)  # (R, J)
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        J = X_pending.shape[0]
        cov = self._kernel(X_pending, X_pending) - v.transpose(1, 2) @ v + self.noise * torch.eye(J, dtype=torch.float64)
        chol = torch.linalg.cholesky(cov)  # (R, J, J)
        z = torch.randn(len(self.lengthscales), J, n_fantasies, generator=generator, dtype=torch.float64)
        draws = mean[..., None] + chol @ z  # (R, J, F)
        new = ExactGP(self.n_inputs, lengthscales=self.lengthscales.repeat_interleave(n_fantasies), noise=self.noise)
        new.X = torch.cat([self.X, X_pending])
        new.Y = torch.cat([self.Y.repeat_interleave(n_fantasies, 0), draws.transpose(1, 2).reshape(-1, J)], dim=1)
        return new

    def sample_f(self, X: Tensor, generator: torch.Generator) -> Tensor:
        row = int(torch.randint(len(self.lengthscales), (1,), generator=generator))
        mean, _ = self.posterior(X)
        L = self._factor()[row]
        v = torch.linalg.solve_triangular(L, self._kernel(self.X, X)[row], upper=False)
        cov = self._kernel(X, X)[row] - v.T @ v + 1e-9 * torch.eye(X.shape[0], dtype=torch.float64)
        return mean[row] + torch.linalg.cholesky(cov) @ torch.randn(X.shape[0], generator=generator, dtype=torch.float64)


class FixedPosterior(Surrogate):
    """A model with a prescribed posterior, for testing acquisitions at extreme values."""

    def __init__(self, mean: Tensor, var: Tensor):
        self.mean, self.var = mean, var

    def fit(self, X, y):  # pragma: no cover - never fitted
        raise NotImplementedError

    def posterior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        return self.mean, self.var

    def fantasize(self, X_pending, n_fantasies, generator):  # pragma: no cover
        raise NotImplementedError

    def sample_f(self, X, generator):  # pragma: no cover
        raise NotImplementedError


class DiskFeasibility:
    """P(feasible) = sigmoid((r0 - |x - 0.5|) / width), differentiable."""

    def __init__(self, radius: float = 0.3, width: float = 0.05):
        self.radius, self.width = radius, width

    def probability(self, X: Tensor) -> Tensor:
        return torch.sigmoid((self.radius - (X - 0.5).norm(dim=1)) / self.width)


def fitted_gp() -> ExactGP:
    X = torch.tensor([[0.1], [0.3], [0.55], [0.8], [0.95]], dtype=torch.float64)
    y = torch.tensor([0.5, -0.4, 0.2, -1.0, 0.3], dtype=torch.float64)
    gp = ExactGP(1, lengthscales=(0.1, 0.2, 0.3))
    gp.fit(X, y)
    return gp


def test_log_h_matches_high_precision_reference():
    mpmath = pytest.importorskip("mpmath")
    z = [-1e4, -300.0, -200.0001, -199.9999, -40.0, -10.0, -5.0, -1.0001, -1.0, -0.5, 0.0, 3.0, 30.0]
    got = log_h(torch.tensor(z, dtype=torch.float64))
    for zi, gi in zip(z, got.tolist()):
        mpmath.mp.dps = 50
        ref = float(mpmath.log(mpmath.npdf(zi) + zi * mpmath.ncdf(zi)))
        assert gi == pytest.approx(ref, rel=1e-10, abs=1e-12), zi


def test_ei_matches_monte_carlo_average_over_samples():
    gp = fitted_gp()
    best = -1.0
    X = torch.tensor([[0.0], [0.2], [0.45], [0.7], [0.88]], dtype=torch.float64)
    ei = torch.exp(LogExpectedImprovement(gp, best)(X))
    mean, var = gp.posterior(X)  # (3, 5)
    gen = torch.Generator().manual_seed(0)
    f = mean + var.sqrt() * torch.randn(400_000, *mean.shape, generator=gen, dtype=torch.float64)
    improvement = (best - f).clamp_min(0).mean(dim=1)  # (draws, M): EI averaged over samples
    mc, standard_error = improvement.mean(0), improvement.std(0) / math.sqrt(improvement.shape[0])
    assert ((ei - mc).abs() < 4 * standard_error).all(), (ei, mc, standard_error)
    assert (standard_error < 0.02 * mc).all()  # the check above is tight enough to mean something
    # Averaging over samples happens on EI, not on its log: a single-row EI would differ.
    single = torch.exp(LogExpectedImprovement(FixedPosterior(mean[:1], var[:1]), best)(X))
    assert not torch.allclose(single, ei, rtol=0.05)


def test_log_ei_gradient_matches_finite_differences():
    gp = fitted_gp()
    acq = LogExpectedImprovement(gp, -1.0)
    X = torch.tensor([[0.02], [0.21], [0.47], [0.66], [0.9]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: acq(x), (X,), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("variance", [1e-30, 1e-12, 1e-4, 1.0])
def test_log_ei_finite_and_monotone_for_tiny_sigma_and_far_gamma(variance):
    means = torch.linspace(-5.0, 1e6, 2001, dtype=torch.float64)[:, None].T.contiguous()  # (1, M)
    values = LogExpectedImprovement(FixedPosterior(means, torch.full_like(means, variance)), 0.0)(None)
    assert torch.isfinite(values).all()
    assert (values[1:] < values[:-1]).all()  # a worse predicted mean never has more EI


def test_log_ei_grows_with_sigma_far_below_the_incumbent():
    sigmas = torch.logspace(-8, 1, 200, dtype=torch.float64)[None]
    values = LogExpectedImprovement(FixedPosterior(torch.full_like(sigmas, 5.0), sigmas**2), 0.0)(None)
    assert torch.isfinite(values).all() and (values[1:] > values[:-1]).all()


def test_probability_of_improvement_and_lcb_closed_forms():
    mean = torch.tensor([[0.0, 1.0], [0.5, -1.0]], dtype=torch.float64)
    var = torch.tensor([[1.0, 4.0], [0.25, 1.0]], dtype=torch.float64)
    model = FixedPosterior(mean, var)
    normal = torch.distributions.Normal(0.0, 1.0)
    expected_pi = normal.cdf((0.2 - mean) / var.sqrt()).mean(0)
    assert torch.allclose(torch.exp(LogProbabilityOfImprovement(model, 0.2)(None)), expected_pi)
    expected_lcb = (2.5 * var.sqrt() - mean).mean(0)
    assert torch.allclose(LowerConfidenceBound(model, kappa=2.5)(None), expected_lcb)


def test_fantasies_move_incumbent_and_kill_ei_next_to_pending_point():
    gp = fitted_gp()
    gen = torch.Generator().manual_seed(1)
    pending = torch.tensor([[0.7]], dtype=torch.float64)
    fantasy, best_rows = condition_on_pending(gp, -1.0, pending, 16, gen)
    mean, _ = fantasy.posterior(pending)
    assert best_rows.shape == (3 * 16, 1) and mean.shape == (3 * 16, 1)
    assert (best_rows <= -1.0).all()
    assert torch.allclose(best_rows[:, 0], torch.clamp(mean[:, 0], max=-1.0))
    near = torch.tensor([[0.701]], dtype=torch.float64)
    before = LogExpectedImprovement(gp, -1.0)(near)
    after = LogExpectedImprovement(fantasy, best_rows)(near)
    assert after < before - math.log(10.0)  # at least ten times less EI next to the pending job
    far = torch.tensor([[0.2]], dtype=torch.float64)
    far_before = LogExpectedImprovement(gp, -1.0)(far)
    far_after = LogExpectedImprovement(fantasy, best_rows)(far)
    assert far_before - 1.0 < far_after <= far_before  # far away only the incumbent moved a little
    same_model, scalar_best = condition_on_pending(gp, -1.0, pending[:0], 16, gen)
    assert same_model is gp and scalar_best.shape == ()


def test_constrained_ei_is_ei_times_probability_of_feasibility():
    gp = ExactGP(2, lengthscales=(0.2, 0.3))
    gp.fit(torch.rand(8, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
           torch.linspace(-1, 1, 8, dtype=torch.float64))
    disk = DiskFeasibility()
    X = torch.rand(50, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    constrained = make_acquisition("ei", gp, -0.5, [disk, disk])
    assert isinstance(constrained, FeasibilityWeighted)
    expected = torch.exp(LogExpectedImprovement(gp, -0.5)(X)) * disk.probability(X) ** 2
    assert torch.allclose(torch.exp(constrained(X)), expected, rtol=1e-10)


def test_without_a_feasible_incumbent_probability_of_feasibility_alone_is_maximised():
    disk = DiskFeasibility()
    acq = make_acquisition("ei", fitted_gp(), None, [disk])
    assert isinstance(acq, LogProbabilityOfFeasibility)
    X = torch.tensor([[0.5, 0.5], [0.9, 0.9]], dtype=torch.float64)
    values = acq(X)
    assert values[0] > values[1] and torch.allclose(torch.exp(values), disk.probability(X))
    with pytest.raises(ValueError):
        make_acquisition("ei", None, None, [])
    with pytest.raises(ValueError):
        make_acquisition("nope", fitted_gp(), 0.0)


def test_per_sample_probabilities_are_averaged_before_the_log():
    class TwoSamples:
        def probability(self, X):
            return torch.stack([torch.full((X.shape[0],), 0.9), torch.full((X.shape[0],), 0.1)]).double()

    X = torch.zeros(3, 1, dtype=torch.float64)
    values = LogProbabilityOfFeasibility([TwoSamples()])(X)
    assert torch.allclose(values, torch.full((3,), math.log(0.5), dtype=torch.float64))
