"""Input warping by the Beta CDF (Snoek et al. 2014), in torch and differentiable in x.

Each input dimension x_d in [0, 1] is mapped through w_d(x_d) = I_{x_d}(alpha_d, beta_d), the
regularised incomplete beta function. torch has no ``betainc``, so it is computed here from the
hypergeometric series

    I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) * sum_n t_n,   t_0 = 1,
    t_{n+1} = t_n * x (a + b + n) / (a + 1 + n),

used on the side of x <= 1/2 (else through I_x(a, b) = 1 - I_{1-x}(b, a)), where the term ratio
tends to x <= 1/2. All terms are formed at once: log t_n = n log x + c_n(a, b) with c_n a cumulative
sum that depends on the shape parameters only, so one evaluation is a handful of tensor operations
regardless of the number of terms, which matters inside slice sampling.

The x-gradient is the Beta density, supplied analytically by a custom autograd function; the shape
parameters carry no gradient (they are slice-sampled, never differentiated).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

# Support of log(alpha), log(beta): +-3 is ~3.5 prior standard deviations (variance 0.75), and
# keeps the number of series terms needed for 1e-12 accuracy bounded.
LOG_SHAPE_BOUND = 3.0
# Prior variance of log(alpha), log(beta) around the identity warp, as in the warping paper.
LOG_SHAPE_PRIOR_VARIANCE = 0.75
# Inputs are clamped this far inside (0, 1) so that logs and the density stay finite.
_EDGE = 1e-12


def _n_terms(a: Tensor, b: Tensor) -> int:
    """Series length for x <= 1/2 given the largest shape parameter (error < 2e-9 on the support).

    The terms grow while x (a + b + n) / (a + 1 + n) > 1, i.e. for n up to about b, then decay at a
    ratio that tends to 1/2; the length covers that peak plus ~40 terms of decay.
    """
    largest = float(torch.maximum(a.max(), b.max())) if a.numel() else 1.0
    return 40 + int(math.ceil(1.75 * largest))


def _log_term_offsets(a: Tensor, b: Tensor, n_terms: int) -> Tensor:
    """c_n = sum_{k < n} log((a + b + k) / (a + 1 + k)) for n < n_terms; shape (*a.shape, K).

    Depends on the shape parameters only, so it is formed at their (small) shape and broadcast
    against the inputs afterwards.
    """
    n = torch.arange(n_terms, dtype=a.dtype)
    steps = torch.log((a[..., None] + b[..., None] + n) / (a[..., None] + 1.0 + n))
    return torch.cumsum(steps, dim=-1) - steps


def _log_beta_fn(a: Tensor, b: Tensor) -> Tensor:
    return torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)


def beta_cdf_value(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """I_x(a, b) without autograd; x, a, b broadcastable, result of the broadcast shape."""
    a, b = torch.broadcast_tensors(a, b)
    K = _n_terms(a, b)
    # On the flipped side (x > 1/2) evaluate I_{1-x}(b, a): x and 1-x swap, and so do a and b.
    offsets = _log_term_offsets(a, b, K)
    offsets_flipped = _log_term_offsets(b, a, K)
    log_norm = _log_beta_fn(a, b)
    xc = x.clamp(_EDGE, 1.0 - _EDGE)
    flip = xc > 0.5
    xs = torch.where(flip, 1.0 - xc, xc)
    log_x, log_1mx = torch.log(xs), torch.log1p(-xs)
    n = torch.arange(K, dtype=x.dtype)
    log_series = torch.logsumexp(n * log_x[..., None] + torch.where(flip[..., None], offsets_flipped, offsets), dim=-1)
    As, Bs = torch.where(flip, b, a), torch.where(flip, a, b)
    tail = torch.exp(As * log_x + Bs * log_1mx - torch.log(As) - log_norm + log_series)
    inner = torch.where(flip, 1.0 - tail, tail).clamp(0.0, 1.0)
    # The exact endpoints map to themselves whatever the shapes (the clamp above would not).
    return torch.where((x <= 0.0) | (x >= 1.0), x.clamp(0.0, 1.0), inner)


def beta_pdf(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """Beta density x^(a-1) (1-x)^(b-1) / B(a, b), with x clamped inside (0, 1)."""
    x = x.clamp(_EDGE, 1.0 - _EDGE)
    return torch.exp((a - 1.0) * torch.log(x) + (b - 1.0) * torch.log1p(-x) - _log_beta_fn(a, b))


class _BetaCDF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, a: Tensor, b: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(x, a, b)
        return beta_cdf_value(x, a, b)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        x, a, b = ctx.saved_tensors
        grad_x = grad * beta_pdf(x, a, b)
        # Reduce over the dimensions x was broadcast along.
        while grad_x.dim() > x.dim():
            grad_x = grad_x.sum(0)
        for d, size in enumerate(x.shape):
            if size == 1 and grad_x.shape[d] != 1:
                grad_x = grad_x.sum(d, keepdim=True)
        return grad_x, None, None


def beta_cdf(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """Regularised incomplete beta I_x(a, b), differentiable in x (not in a, b).

    x : values in [0, 1], any shape broadcastable with a and b (e.g. x (N, D) with a, b (S, 1, D)
    gives (S, N, D)). a, b : shape parameters > 0.
    """
    return _BetaCDF.apply(x, a, b)


def warp(X: Tensor, log_alpha: Tensor, log_beta: Tensor) -> Tensor:
    """Warp inputs X (..., N, D) in [0, 1] with per-sample shapes log_alpha, log_beta (S, D).

    Returns (S, N, D) when X is (N, D), or (S, N, D) when X is already batched as (S, N, D).
    """
    return beta_cdf(X, torch.exp(log_alpha)[:, None, :], torch.exp(log_beta)[:, None, :])


def log_shape_prior(log_shape: Tensor) -> Tensor:
    """Log density of the log-normal prior on alpha or beta, in log coordinates; (C, D) -> (C,).

    Centred on log 1 = 0 (the identity warp) with variance 0.75, truncated to |log| <= 3.
    """
    inside = (log_shape.abs() <= LOG_SHAPE_BOUND).all(-1)
    logp = -0.5 * (log_shape**2).sum(-1) / LOG_SHAPE_PRIOR_VARIANCE
    return torch.where(inside, logp, torch.full_like(logp, -math.inf))


def warping_summary(log_alpha: Tensor, log_beta: Tensor, grid_size: int = 51) -> dict:
    """JSON-able summary of sampled warpings: per input, the warp of a grid for every sample.

    log_alpha, log_beta : (S, D). Returns::

        {"grid": [g_0..g_{G-1}],                    # G points in [0, 1]
         "inputs": [{"alpha": [S floats], "beta": [S floats],
                     "samples": [[S x G]],           # w(grid) per hyperparameter sample
                     "mean": [G], "std": [G]}, ...]} # one entry per encoded input dimension
    """
    grid = torch.linspace(0.0, 1.0, grid_size, dtype=log_alpha.dtype)
    with torch.no_grad():
        warped = beta_cdf_value(grid[None, :, None], torch.exp(log_alpha)[:, None, :], torch.exp(log_beta)[:, None, :])
    inputs = []
    for d in range(log_alpha.shape[1]):
        samples = warped[:, :, d]
        inputs.append({
            "alpha": torch.exp(log_alpha[:, d]).tolist(),
            "beta": torch.exp(log_beta[:, d]).tolist(),
            "samples": samples.tolist(),
            "mean": samples.mean(0).tolist(),
            "std": samples.std(0, unbiased=False).tolist(),
        })
    return {"grid": grid.tolist(), "inputs": inputs}
