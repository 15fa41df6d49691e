"""Input warping by the Beta CDF (Snoek et al. 2014), in torch and differentiable in x.

Each warped input dimension x_d in [0, 1] is mapped through w_d(x_d) = I_{x_d}(alpha_d, beta_d),
the regularised incomplete beta function. Only columns with values in between 0 and 1 are worth
warping: on a 0/1 column (a one-hot ENUM option, a relevance indicator) every Beta CDF is the
identity, so :class:`BetaWarp` takes the list of warped columns and passes the others through.

torch has no ``betainc``, so I_x is computed here from the hypergeometric series

    I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) * sum_n t_n,   t_0 = 1,
    t_{n+1} = t_n * x (a + b + n) / (a + 1 + n),

used on the side of x <= 1/2 (else through I_x(a, b) = 1 - I_{1-x}(b, a)), where the term ratio
tends to x <= 1/2. Writing t_n = e^{c_n} x^n, with c_n a cumulative sum that depends on the shape
parameters only, the series is a polynomial in x whose coefficients e^{c_n} are formed once per
shape; the sum over terms is then one contraction of the powers x^n (formed once per input, shared
by every hyperparameter sample) with the coefficients (per sample), which torch turns into a batched
matrix product. For inputs shared by the samples (the usual case) no (samples x inputs x terms)
tensor is formed, which matters both inside slice sampling and when thousands of candidates are
warped per acquisition call (5000 candidates x 6 inputs x 10 samples: ~1 s with a log-sum-exp over
such a tensor, 40-70 ms this way, on a loaded 2-core VM). All terms are
positive and c_n stays below ~50 on the shape support, so the sum is formed without log-sum-exp.

The x-gradient is the Beta density, supplied analytically by a custom autograd function; the shape
parameters carry no gradient (they are slice-sampled, never differentiated).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

# Support of log(alpha), log(beta): +-3 is ~3.5 standard deviations of the paper's log-normal
# (variance 0.75), and keeps the number of series terms needed for 1e-12 accuracy bounded.
LOG_SHAPE_BOUND = 3.0
# Prior variance of log(alpha), log(beta) around the identity warp, as in the warping paper.
LOG_SHAPE_PRIOR_VARIANCE = 0.75
# Prior probability that a model's inputs are warped at all (the GP samples the choice, see
# ``gp.HyperLayout.warp_switch``). With warps always on, the warps of well-scaled inputs keep the
# prior's spread of +-0.5 in log units, which blurs integrated EI: Hartmann3 needed 27 evaluations
# to regret 1e-3 against 21.5 unwarped. Sampled as a choice, warping is on only in as many samples
# as the data support, by the marginal likelihood's own Occam factor. At prior odds of 1:1 a
# dozen Branin values already turn warps on, and the warped samples' stretched edges draw EI to
# the box's boundary (40 seeds, Yeo-Johnson targets: 28/40 runs within 40 evaluations of regret
# 1e-3, against 39/40 at 1/5); at 1/5 a log-scale input still turns them on (benchmarks/RESULTS.md,
# "The GP's targets").
WARP_PROBABILITY = 0.2
WARP_SWITCH_OFF = (1.0 + WARP_PROBABILITY) / 2  # a switch value mid-way through the unwarped interval
# Inputs are clamped this far inside (0, 1) so that logs and the density stay finite.
_EDGE = 1e-12


def _n_terms(a: Tensor, b: Tensor) -> int:
    """Series length for x <= 1/2 given the largest shape parameter (error < 2e-9 on the support).

    The terms grow while x (a + b + n) / (a + 1 + n) > 1, i.e. for n up to about b, then decay at a
    ratio that tends to 1/2; the length covers that peak plus ~40 terms of decay.
    """
    largest = float(torch.maximum(a.max(), b.max())) if a.numel() else 1.0
    return 40 + int(math.ceil(1.75 * largest))


def _series_coefficients(a: Tensor, b: Tensor, n_terms: int) -> Tensor:
    """e^{c_n}, c_n = sum_{k < n} log((a + b + k) / (a + 1 + k)), for (a, b) and for the flipped
    (b, a); shape (2, *a.shape, n_terms), index 0 unflipped, 1 flipped.

    Depends on the shape parameters only, so it is formed at their (small) shape and contracted
    with the powers of the inputs afterwards.
    """
    first = torch.stack([a, b])[..., None]
    n = torch.arange(n_terms, dtype=a.dtype)
    steps = torch.log((a + b)[..., None] + n) - torch.log(first + 1.0 + n)
    return torch.exp(torch.cumsum(steps, dim=-1) - steps)


def _log_beta_fn(a: Tensor, b: Tensor) -> Tensor:
    return torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)


@dataclass(frozen=True)
class BetaShapes:
    """Shape parameters a, b > 0 (broadcast to one shape) with what the CDF needs of them alone.

    ``coefficients`` (2, *shape, K) are the series coefficients for (a, b) and for the flipped
    (b, a), ``log_norm`` is log B(a, b). Prepared once, they serve any number of evaluations.
    """

    a: Tensor
    b: Tensor
    coefficients: Tensor
    log_norm: Tensor

    @classmethod
    def of(cls, a: Tensor, b: Tensor) -> "BetaShapes":
        a, b = torch.broadcast_tensors(a, b)
        return cls(a, b, _series_coefficients(a, b, _n_terms(a, b)), _log_beta_fn(a, b))

    def cdf(self, x: Tensor) -> Tensor:
        """I_x(a, b) without autograd, of the broadcast shape of x and the shapes."""
        a, b = self.a, self.b
        xc = x.clamp(_EDGE, 1.0 - _EDGE)
        # On the flipped side (x > 1/2) evaluate I_{1-x}(b, a): x and 1-x swap, and so do a and b.
        flip = xc > 0.5
        xs = torch.where(flip, 1.0 - xc, xc)
        log_xs = torch.log(xs)
        n_terms = self.coefficients.shape[-1]
        powers = torch.exp(log_xs[..., None] * torch.arange(n_terms, dtype=x.dtype))  # (*x.shape, K)
        series = torch.einsum("...k,f...k->f...", powers, self.coefficients)  # (2, *broadcast shape)
        series = torch.where(flip, series[1], series[0])
        As, Bs = torch.where(flip, b, a), torch.where(flip, a, b)
        tail = torch.exp(As * log_xs + Bs * torch.log1p(-xs) - torch.log(As) - self.log_norm) * series
        inner = torch.where(flip, 1.0 - tail, tail).clamp(0.0, 1.0)
        # The exact endpoints map to themselves whatever the shapes (the clamp above would not).
        return torch.where((x <= 0.0) | (x >= 1.0), x.clamp(0.0, 1.0), inner)

    def pdf(self, x: Tensor) -> Tensor:
        """Beta density x^(a-1) (1-x)^(b-1) / B(a, b), with x clamped inside (0, 1)."""
        x = x.clamp(_EDGE, 1.0 - _EDGE)
        return torch.exp((self.a - 1.0) * torch.log(x) + (self.b - 1.0) * torch.log1p(-x) - self.log_norm)


def beta_cdf_value(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """I_x(a, b) without autograd; x, a, b broadcastable, result of the broadcast shape."""
    return BetaShapes.of(a, b).cdf(x)


class _BetaCDF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, shapes: BetaShapes) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(x)
        ctx.shapes = shapes
        return shapes.cdf(x)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        (x,) = ctx.saved_tensors
        grad_x = grad * ctx.shapes.pdf(x)
        # Reduce over the dimensions x was broadcast along.
        while grad_x.dim() > x.dim():
            grad_x = grad_x.sum(0)
        for d, size in enumerate(x.shape):
            if size == 1 and grad_x.shape[d] != 1:
                grad_x = grad_x.sum(d, keepdim=True)
        return grad_x, None


def beta_cdf(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """Regularised incomplete beta I_x(a, b), differentiable in x (not in a, b).

    x : values in [0, 1], any shape broadcastable with a and b (e.g. x (N, D) with a, b (S, 1, D)
    gives (S, N, D)). a, b : shape parameters > 0.
    """
    return _BetaCDF.apply(x, BetaShapes.of(a, b))


class BetaWarp:
    """The input warps of S hyperparameter samples, log_alpha and log_beta (S, W).

    ``columns`` names the W input columns that are warped (ascending, distinct; None: every
    column, W = D); the other columns pass through unchanged. Calling it on inputs X (N, D), or
    (S, N, D) already batched, gives the warped inputs (S, N, D), differentiable in X. What
    depends on the shapes alone is prepared here once, so an acquisition evaluated a hundred
    times per suggestion does not recompute it.
    """

    def __init__(self, log_alpha: Tensor, log_beta: Tensor, columns: Sequence[int] | None = None):
        self.shapes = BetaShapes.of(torch.exp(log_alpha)[:, None, :], torch.exp(log_beta)[:, None, :])
        self.columns = None if columns is None else torch.as_tensor(columns, dtype=torch.long).reshape(-1)
        if self.columns is not None:
            if len(self.columns) != log_alpha.shape[-1]:
                raise ValueError(f"{len(self.columns)} warped columns but shapes for {log_alpha.shape[-1]}")
            if len(self.columns) > 1 and not bool((self.columns.diff() > 0).all()):
                raise ValueError(f"warped columns must be ascending and distinct, got {self.columns.tolist()}")

    def __call__(self, X: Tensor) -> Tensor:
        # Ascending distinct columns as many as X has are all of them: the plain warp.
        if self.columns is None or len(self.columns) == X.shape[-1]:
            return _BetaCDF.apply(X, self.shapes)
        warped = _BetaCDF.apply(X[..., self.columns], self.shapes)  # (S, N, W)
        kept = torch.ones(X.shape[-1], dtype=torch.bool)
        kept[self.columns] = False
        kept = torch.nonzero(kept)[:, 0]
        rest = X[..., kept].expand(*warped.shape[:-1], len(kept))  # (S, N, D - W), not warped
        order = torch.argsort(torch.cat([self.columns, kept]))
        return torch.cat([warped, rest], dim=-1)[..., order]


def warp(X: Tensor, log_alpha: Tensor, log_beta: Tensor, columns: Sequence[int] | None = None) -> Tensor:
    """Warp the given columns (None: all) of inputs X (N, D) or (S, N, D) in [0, 1] with
    per-sample shapes log_alpha, log_beta (S, W); returns (S, N, D). See :class:`BetaWarp` to
    warp many inputs with the same shapes."""
    return BetaWarp(log_alpha, log_beta, columns)(X)


def warped_column_indices(spec: Sequence[int] | Sequence[bool] | Tensor | None, n_dims: int) -> tuple[int, ...]:
    """The warped input columns, ascending, named by ``spec`` for D = n_dims inputs.

    ``spec`` is a boolean mask (D,), a list of column indices, or None for every column.
    ValueError for a mask of the wrong length or indices that are repeated or out of range.
    """
    if spec is None:
        return tuple(range(n_dims))
    spec = torch.as_tensor(spec)
    if spec.dtype == torch.bool:
        if spec.shape != (n_dims,):
            raise ValueError(f"warped_columns mask of shape {tuple(spec.shape)} for {n_dims} inputs")
        return tuple(torch.nonzero(spec)[:, 0].tolist())
    columns = sorted(set(int(c) for c in spec.reshape(-1).tolist()))
    if len(columns) != spec.numel() or (columns and not 0 <= columns[0] <= columns[-1] < n_dims):
        raise ValueError(f"warped_columns {spec.tolist()} are not distinct columns of {n_dims} inputs")
    return tuple(columns)


def kumaraswamy_cdf(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """1 - (1 - x^a)^b: differentiable in x *and* in the shapes a, b > 0.

    DNGO trains its warp with the network by gradient (the Beta CDF's shapes carry no gradient:
    the GP slice-samples them). The Kumaraswamy CDF spans the same warps as the Beta CDF (the
    identity at a = b = 1, concave log-like warps for a < 1, S-shapes for a, b > 1) in closed
    form; it is also the warp of BoTorch's input warping. x in [0, 1], broadcastable with a, b.
    """
    inner = -torch.expm1(b * torch.log1p(-x.clamp(_EDGE, 1.0 - _EDGE) ** a))
    # At the endpoints the clamp would be visible (1e-12 ** 0.05 = 0.25): they map to themselves.
    return torch.where((x <= 0.0) | (x >= 1.0), x.clamp(0.0, 1.0), inner)


def warping_summary(log_alpha: Tensor, log_beta: Tensor, grid_size: int = 51,
                    columns: Sequence[int] | None = None,
                    cdf: Callable[[Tensor, Tensor, Tensor], Tensor] | None = None) -> dict:
    """JSON-able summary of sampled warpings: per warped input, the warp of a grid for every sample.

    log_alpha, log_beta : (S, W). columns : the encoded input column of each of the W entries
    (default 0..W-1). cdf : the warp as a function of (x, a, b), the Beta CDF by default.
    Returns::

        {"grid": [g_0..g_{G-1}],                    # G points in [0, 1]
         "columns": [W ints],                       # encoded column of each entry of "inputs"
         "inputs": [{"alpha": [S floats], "beta": [S floats],
                     "samples": [[S x G]],           # w(grid) per hyperparameter sample
                     "mean": [G], "std": [G]}, ...]} # one entry per warped input column
    """
    columns = list(range(log_alpha.shape[1])) if columns is None else [int(c) for c in columns]
    if len(columns) != log_alpha.shape[1]:
        raise ValueError(f"{len(columns)} columns named for warps of {log_alpha.shape[1]} inputs")
    grid = torch.linspace(0.0, 1.0, grid_size, dtype=log_alpha.dtype)
    with torch.no_grad():
        warped = (cdf or beta_cdf_value)(grid[None, :, None], torch.exp(log_alpha)[:, None, :],
                                         torch.exp(log_beta)[:, None, :])
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
    return {"grid": grid.tolist(), "columns": columns, "inputs": inputs}
