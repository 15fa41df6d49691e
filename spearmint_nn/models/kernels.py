"""Covariance functions of the GP: ARD Matérn 5/2 (or squared exponential), optionally on the arc
embedding of conditional inputs.

Every kernel here is a stationary, isotropic correlation of squared distances in a Euclidean
*embedding* of the (warped) inputs, so the covariance is always positive semi-definite and one
code path serves plain and conditional spaces:

- an ordinary input d contributes the coordinate w_d / l_d (ARD length scale l_d);
- a conditional input d (Swersky et al. 2013, "Raiders of the lost architecture") contributes the
  two coordinates g_d = omega_d [sin(pi rho_d w_d), cos(pi rho_d w_d)] when it is active and
  [0, 0] when it is not, with omega_d = 1 / l_d (so the length-scale prior carries over) and
  rho_d in (0, 1]. Two inactive values are then at distance 0 whatever they are, and an active
  value is at distance omega_d from every inactive one, so inactive values never influence the
  covariance.

Shapes: S hyperparameter samples, N and M points, D inputs, E embedding coordinates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor

# X (N, D) in the unit cube -> bool (N, D): which inputs are relevant at each point.
ActivityFn = Callable[[Tensor], Tensor]

_SQRT5 = math.sqrt(5.0)


@dataclass(frozen=True)
class Conditional:
    """Which inputs are conditional and how to tell, per point, whether they are active.

    dims : indices of the inputs that may be inactive (each gets an arc with its own rho).
    active : maps X (N, D) in the unit cube to a bool tensor (N, D); only the columns in ``dims``
        are read (the others are always active). It is evaluated on raw, unwarped inputs.
    """

    dims: Sequence[int]
    active: ActivityFn

    def __post_init__(self) -> None:
        if len(set(self.dims)) != len(self.dims):
            raise ValueError(f"Conditional.dims has duplicates: {list(self.dims)}")


def matern52(r2: Tensor) -> Tensor:
    """Matérn 5/2 correlation (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r) of squared distances r2."""
    if not r2.requires_grad:
        # Scoring thousands of candidates spends much of a proposal here: in place, the same
        # operations in the same order (the same numbers) take half the time of the expression.
        r = r2.clamp_min(1e-30).sqrt_()
        out = (r * _SQRT5).add_(1.0).add_(r2 * (5.0 / 3.0))
        return out.mul_(r.mul_(-_SQRT5).exp_())
    # The clamp keeps the gradient of sqrt finite at r = 0, where the true derivative is 0.
    r = torch.sqrt(r2.clamp_min(1e-30))
    return (1.0 + _SQRT5 * r + (5.0 / 3.0) * r2) * torch.exp(-_SQRT5 * r)


def squared_exponential(r2: Tensor) -> Tensor:
    """Squared-exponential (RBF) correlation exp(-r^2 / 2) of squared distances r2."""
    return torch.exp(-0.5 * r2)


#: Correlation functions of squared length-scaled distances, by the name the config uses.
#: Matérn 5/2 is Spearmint's choice (Snoek et al. 2012: sample paths twice differentiable, not
#: infinitely smooth like the squared exponential's, which suits objectives of real experiments).
#: The squared exponential is the default of other GP libraries and fits very smooth objectives
#: better (models/DESIGN.md and benchmarks/RESULTS.md of e90882b, "Which kernel").
CORRELATIONS: dict[str, Callable[[Tensor], Tensor]] = {"matern52": matern52, "squared-exponential": squared_exponential}
#: The GPs' default: the first, as the search's settings take it (``problem.settings.KERNELS``, which
#: the optimizer checks lists these in this order).
DEFAULT_CORRELATION = next(iter(CORRELATIONS))


def embed(
    W: Tensor,
    log_lengthscales: Tensor,
    conditional: Conditional | None = None,
    active: Tensor | None = None,
    rho: Tensor | None = None,
) -> Tensor:
    """Embed warped inputs W (S, N, D) (or (N, D), shared) into R^E, scaled by the length scales.

    log_lengthscales : (S, D). For a conditional space also give ``active`` (N, D) bool, the
    activity of the same points, and ``rho`` (S, len(conditional.dims)) in (0, 1].
    Returns (S, N, D + len(conditional.dims)).
    """
    inv_ls = torch.exp(-log_lengthscales)[:, None, :]
    E = W * inv_ls
    if conditional is None or not len(conditional.dims):
        return E
    dims = torch.as_tensor(list(conditional.dims), dtype=torch.long)
    on = active[:, dims].to(W.dtype)  # (N, Dc)
    angle = math.pi * rho[:, None, :] * W[..., dims]  # (S, N, Dc)
    omega = inv_ls[..., dims]
    plain = E.clone()
    plain[..., dims] = omega * torch.sin(angle) * on
    return torch.cat([plain, omega * torch.cos(angle) * on], dim=-1)


def squared_distances(A: Tensor, B: Tensor) -> Tensor:
    """Squared Euclidean distances between rows, (S, N, E) x (S, M, E) -> (S, N, M), >= 0.

    Uses |a|^2 + |b|^2 - 2 a.b so that no (S, N, M, E) tensor is formed for large candidate sets.
    """
    norms = (A**2).sum(-1)[..., :, None] + (B**2).sum(-1)[..., None, :]
    if A.dim() == B.dim() == 3 and len(A) == len(B) and not (A.requires_grad or B.requires_grad):
        # Scoring candidates: one fused pass instead of three (the same numbers: scaling by 2 is exact).
        return torch.baddbmm(norms, A, B.transpose(-1, -2), alpha=-2.0).clamp_min_(0.0)
    return (norms - 2.0 * A @ B.transpose(-1, -2)).clamp_min(0.0)


def covariance(
    A: Tensor, B: Tensor, amplitude: Tensor, correlation: Callable[[Tensor], Tensor] = matern52
) -> Tensor:
    """amplitude (S,) times the correlation of embedded points A (S, N, E), B (S, M, E): (S, N, M)."""
    correlations = correlation(squared_distances(A, B))
    if correlations.requires_grad or amplitude.requires_grad:
        return amplitude[:, None, None] * correlations
    return correlations.mul_(amplitude[:, None, None])
