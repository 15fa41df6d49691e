"""The input warpings: the Beta CDF (value and x-gradient against scipy), the Kumaraswamy CDF
(closed form, gradients in x and in the shapes), column selection, JSON summary."""
import json

import numpy as np
import pytest
import scipy.special
import scipy.stats
import torch

from spearmint_nn.models.warping import (
    LOG_SHAPE_BOUND,
    BetaWarp,
    beta_cdf,
    kumaraswamy_cdf,
    warp,
    warped_column_indices,
    warping_summary,
)

SHAPES = np.exp(np.linspace(-LOG_SHAPE_BOUND, LOG_SHAPE_BOUND, 9))


@pytest.mark.parametrize("a", SHAPES)
def test_beta_cdf_matches_scipy_over_the_prior_support(a):
    x = np.concatenate([[0.0, 1e-9, 0.5, 1 - 1e-9, 1.0], np.random.default_rng(0).random(200)])
    for b in SHAPES:
        got = beta_cdf(torch.tensor(x), torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_allclose(got, scipy.special.betainc(a, b, x), atol=5e-9, rtol=0)


def test_beta_cdf_gradient_is_the_beta_density():
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.uniform(0.01, 0.99, size=(40, 3)), requires_grad=True)
    a = torch.tensor([0.3, 1.0, 4.0], dtype=torch.float64)
    b = torch.tensor([2.5, 1.0, 0.6], dtype=torch.float64)
    beta_cdf(x, a, b).sum().backward()
    expected = scipy.stats.beta.pdf(x.detach().numpy(), a.numpy(), b.numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-9)
    # and the density is the derivative of scipy's CDF (central differences)
    h = 1e-6
    xn = x.detach().numpy()
    numeric = (scipy.special.betainc(a.numpy(), b.numpy(), xn + h) - scipy.special.betainc(a.numpy(), b.numpy(), xn - h)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-5)


def test_warp_broadcasts_over_samples_and_sums_their_gradients():
    X = torch.rand(7, 2, dtype=torch.float64, requires_grad=True)
    log_alpha = torch.tensor([[0.5, -1.0], [0.0, 0.3], [-0.2, 1.1]], dtype=torch.float64)
    log_beta = torch.tensor([[-0.5, 0.2], [0.0, 0.7], [1.0, -0.4]], dtype=torch.float64)
    W = warp(X, log_alpha, log_beta)
    assert W.shape == (3, 7, 2)
    W.sum().backward()
    a, b = np.exp(log_alpha.numpy()), np.exp(log_beta.numpy())
    expected = sum(scipy.stats.beta.pdf(X.detach().numpy(), a[s], b[s]) for s in range(3))
    np.testing.assert_allclose(X.grad.numpy(), expected, rtol=1e-9)
    # the identity shapes (row 1, first input) leave the input unchanged
    np.testing.assert_allclose(W[1, :, 0].detach().numpy(), X[:, 0].detach().numpy(), atol=1e-12)


def test_only_the_named_columns_are_warped_and_the_others_pass_through():
    X = torch.rand(6, 4, dtype=torch.float64, requires_grad=True)
    log_alpha = torch.tensor([[0.5, -1.0], [1.2, 0.3]], dtype=torch.float64)
    log_beta = torch.tensor([[-0.5, 0.2], [0.1, -0.9]], dtype=torch.float64)
    W = warp(X, log_alpha, log_beta, columns=[1, 3])
    assert W.shape == (2, 6, 4)
    everywhere = warp(X[:, [1, 3]], log_alpha, log_beta)
    np.testing.assert_allclose(W[:, :, [1, 3]].detach().numpy(), everywhere.detach().numpy(), rtol=1e-14)
    np.testing.assert_array_equal(W[:, :, [0, 2]].detach().numpy(), X[:, [0, 2]].detach().expand(2, 6, 2).numpy())
    W.sum().backward()
    np.testing.assert_allclose(X.grad[:, [0, 2]].numpy(), 2.0)  # identity, summed over 2 samples
    a, b = np.exp(log_alpha.numpy()), np.exp(log_beta.numpy())
    xw = X.detach().numpy()[:, [1, 3]]
    expected = sum(scipy.stats.beta.pdf(xw, a[s], b[s]) for s in range(2))
    np.testing.assert_allclose(X.grad[:, [1, 3]].numpy(), expected, rtol=1e-9)
    # inputs already batched over samples
    batched = X.detach().expand(2, 6, 4)
    np.testing.assert_allclose(BetaWarp(log_alpha, log_beta, [1, 3])(batched).numpy(), W.detach().numpy(), rtol=1e-14)
    with pytest.raises(ValueError, match="ascending"):
        BetaWarp(log_alpha, log_beta, [3, 1])
    with pytest.raises(ValueError, match="warped columns"):
        BetaWarp(log_alpha, log_beta, [0, 1, 2])


def test_warp_is_monotone_and_fixes_the_endpoints():
    x = torch.linspace(0, 1, 501, dtype=torch.float64)
    w = beta_cdf(x, torch.tensor(0.05, dtype=torch.float64), torch.tensor(20.0, dtype=torch.float64))
    assert w[0] == 0.0 and w[-1] == 1.0
    assert (w.diff() >= -1e-9).all()  # monotone up to the series' accuracy at this extreme shape


def test_warping_summary_is_json_with_mean_and_spread_per_input():
    log_alpha = torch.tensor([[0.0, -1.0], [0.0, -1.5]], dtype=torch.float64)
    log_beta = torch.zeros(2, 2, dtype=torch.float64)
    summary = json.loads(json.dumps(warping_summary(log_alpha, log_beta, grid_size=11)))
    assert len(summary["grid"]) == 11 and len(summary["inputs"]) == 2
    identity, concave = summary["inputs"]
    np.testing.assert_allclose(identity["mean"], summary["grid"], atol=1e-12)
    np.testing.assert_allclose(identity["std"], 0.0, atol=1e-12)
    assert np.array(concave["samples"]).shape == (2, 11)
    assert concave["mean"][2] > 0.5  # alpha < 1 stretches small inputs (a log-like warp)
    assert max(concave["std"]) > 0.01
    assert summary["columns"] == [0, 1]  # by default entry k is encoded column k
    assert warping_summary(log_alpha, log_beta, grid_size=3, columns=[4, 7])["columns"] == [4, 7]
    with pytest.raises(ValueError, match="columns"):
        warping_summary(log_alpha, log_beta, columns=[4])


def test_kumaraswamy_cdf_is_the_closed_form_fixes_endpoints_and_is_the_identity_at_unit_shapes():
    x = torch.tensor([0.0, 1e-9, 0.2, 0.5, 0.9, 1 - 1e-9, 1.0], dtype=torch.float64)
    for a, b in ((0.05, 1.0), (1.0, 20.0), (3.0, 0.5), (20.0, 20.0)):
        got = kumaraswamy_cdf(x, torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64))
        expected = 1.0 - (1.0 - x.numpy() ** a) ** b
        np.testing.assert_allclose(got.numpy()[1:-1], expected[1:-1], rtol=1e-9, atol=1e-12)
        assert got[0] == 0.0 and got[-1] == 1.0  # even where a clamped x would give 1e-12 ** 0.05
        assert (got.diff() >= 0).all()
    one = torch.tensor(1.0, dtype=torch.float64)
    torch.testing.assert_close(kumaraswamy_cdf(x, one, one), x, rtol=0, atol=1e-15)


def test_kumaraswamy_cdf_gradients_in_x_and_in_the_shapes_match_finite_differences():
    x = torch.tensor([0.01, 0.3, 0.7, 0.99], dtype=torch.float64, requires_grad=True)
    a = torch.tensor([0.3, 1.0, 2.5, 0.8], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([1.5, 0.4, 1.0, 3.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(kumaraswamy_cdf, (x, a, b))


def test_warped_columns_are_named_by_a_mask_or_indices():
    assert warped_column_indices(None, 3) == (0, 1, 2)
    assert warped_column_indices([True, False, True], 3) == (0, 2)
    assert warped_column_indices([2, 0], 3) == (0, 2)
    assert warped_column_indices([], 3) == ()
    for bad in ([True, False], [0, 0], [3]):
        with pytest.raises(ValueError):
            warped_column_indices(bad, 3)
