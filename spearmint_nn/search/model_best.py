"""The model's best: the evaluated point whose objective the fitted model believes lowest.

With a noisy (GAUSSIAN) objective the lowest observed value is the luckiest draw: among thirty
evaluations with noise of standard deviation s, the lowest sits about 2 s below its point's
true value, and often at a mediocre point. Spearmint reported instead the evaluated point with
the lowest posterior mean of the objective model, which averages each point's value with its
neighbours'. :func:`model_best` computes that report.

The model is fitted to transformed values z = t(y) (:mod:`spearmint_nn.search.transforms`), and the
transform may be nonlinear (Yeo-Johnson, the log shift), so the posterior of y is not normal
and its mean is not t^-1 of z's mean. The report therefore draws z from the posterior of the
latent objective (no observation noise) at the chosen point, a fixed number of draws spread
over the hyperparameter samples, with a fixed seed so the same fit gives the same report, maps
each draw back through t^-1, and gives the mean and standard deviation of those values: the
posterior mean and spread of f in the user's units. t^-1 is found by bisection, which needs
only that t increases; draws beyond what t maps from within ``BRACKET_SPANS`` observed ranges
of the observed values are taken at that bound (a log shift maps nothing below its offset, and
a heavy tail drawn far beyond the data would otherwise decide the mean).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ..models.base import Surrogate

N_DRAWS = 4096  # posterior draws of z at the chosen point, over all hyperparameter samples
BRACKET_SPANS = 10.0  # t^-1 is searched within this many observed ranges around the observed values
_BISECTIONS = 64  # halvings of the bracket: below the float64 spacing of any value in it


@dataclass(frozen=True)
class ModelBest:
    """The evaluated point with the lowest posterior mean of the objective.

    Attributes
    ----------
    index : the observation's position in the order observed (0-based).
    params : its params in wrapper form.
    mean : posterior mean of the objective there, in the user's units and sign.
    std : posterior standard deviation of the objective there, in the user's units.
    observed : the value observed there, in the user's units and sign.
    """

    index: int
    params: dict[str, Any]
    mean: float
    std: float
    observed: float


def lowest_mean(model: Surrogate, X: torch.Tensor) -> int:
    """Row of X (K, D) where the posterior mean of f, averaged over the model's rows, is lowest."""
    with torch.no_grad():
        mean, _ = model.posterior(X, observation_noise=False)
    return int(torch.argmin(mean.mean(dim=0)))


def invert(transform: Callable[[np.ndarray], np.ndarray], z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Values u with transform(u) = z for each entry of z, by bisection.

    ``transform`` is increasing (NaN below its domain, as the log shift's is); ``y`` (N,) are the
    values it was fitted to, which set the bracket [min - B r, max + B r] with r their range
    (1 if they are all equal) and B = ``BRACKET_SPANS``. Entries of z beyond what the bracket
    maps to come back as its ends.
    """
    y = np.asarray(y, dtype=float)
    spread = float(y.max() - y.min()) or 1.0
    lo = np.full(np.shape(z), float(y.min()) - BRACKET_SPANS * spread)
    hi = np.full(np.shape(z), float(y.max()) + BRACKET_SPANS * spread)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for _ in range(_BISECTIONS):
            middle = 0.5 * (lo + hi)
            value = np.asarray(transform(middle), dtype=float)
            below = np.where(np.isnan(value), True, value < z)
            lo, hi = np.where(below, middle, lo), np.where(below, hi, middle)
    return 0.5 * (lo + hi)


def posterior_in_units(
    model: Surrogate, transform: Callable[[np.ndarray], np.ndarray], x: torch.Tensor, y: np.ndarray, seed: int = 0
) -> tuple[float, float]:
    """Posterior mean and standard deviation of the latent objective at the point x (1, D), in
    the units of the values y (N,) that ``transform`` was fitted to (module docstring)."""
    with torch.no_grad():
        mean, var = model.posterior(x, observation_noise=False)  # (S, 1) each
    rows = mean.shape[0]
    generator = torch.Generator().manual_seed(seed)
    normal = torch.randn(rows, math.ceil(N_DRAWS / rows), generator=generator, dtype=torch.float64)
    z = (mean + var.clamp_min(0.0).sqrt() * normal).numpy().ravel()
    values = invert(transform, z, y)
    return float(values.mean()), float(values.std())


def model_best(
    model: Surrogate,
    transform: Callable[[np.ndarray], np.ndarray],
    X: torch.Tensor,
    candidates: np.ndarray,
    values: np.ndarray,
    fitted_values: np.ndarray,
    decode: Callable[[np.ndarray], dict[str, Any]],
    sign: float = 1.0,
) -> ModelBest:
    """The :class:`ModelBest` among the observations numbered ``candidates`` (K,) (the feasible
    ones), K >= 1.

    X (N, D) holds every observation's encoded point and ``values`` (N,) its objective as the
    model sees it (the user's value times ``sign``, -1 when maximising); ``fitted_values`` are
    the values the model and ``transform`` were fitted to; ``decode`` turns an encoded row into
    params.
    """
    best = int(candidates[lowest_mean(model, X[torch.as_tensor(candidates)])])
    mean, std = posterior_in_units(model, transform, X[best : best + 1], fitted_values)
    return ModelBest(index=best, params=decode(X[best].numpy()), mean=sign * mean, std=std,
                     observed=sign * float(values[best]))
