"""Acquisition functions: log-EI against Monte Carlo and finite differences, numerical safety,
fantasies over pending jobs, and the constrained variants.

``ExactGP`` (tests/helpers/models.py) is a small exact-GP test double of the Surrogate seam.
"""
from __future__ import annotations

import math

import pytest
import torch

from spearmint_nn.search.acquisition import (
    FeasibilityWeighted,
    LogExpectedImprovement,
    LogProbabilityOfFeasibility,
    LogProbabilityOfImprovement,
    LowerConfidenceBound,
    condition_on_pending,
    log_h,
    make_acquisition,
)
from helpers.models import DiskFeasibility, ExactGP, FixedPosterior, fitted_gp

torch.set_num_threads(1)


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
