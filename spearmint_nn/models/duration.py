"""A model of log job duration, for expected improvement per second (Snoek et al. 2012, sec. 3.2).

Durations vary over orders of magnitude with the inputs (a wider network, more epochs), so the
model is a GP on log seconds: positive predictions, multiplicative errors. It is the same GP
class as the objective's, with a small sampler budget and no warping, since only its mean is used
(EI per second divides integrated EI by exp(mean log duration)).
"""
from __future__ import annotations

import torch
from torch import Tensor

from .gp import GP


class DurationModel:
    """GP regression of log durations on inputs in the unit cube.

    Parameters
    ----------
    n_samples, burn_in, sweeps_per_fit : the GP's sampler budget (small: the mean is what matters).
    seed : seed of the sampler.
    """

    def __init__(self, n_samples: int = 5, burn_in: int = 10, sweeps_per_fit: int = 1, seed: int | None = None):
        self.gp = GP(warping=False, n_samples=n_samples, burn_in=burn_in, sweeps_per_fit=sweeps_per_fit, seed=seed)
        self._center, self._scale = 0.0, 1.0

    def fit(self, X: Tensor, log_durations: Tensor) -> None:
        """Fit to X (N, D) in [0, 1] and log durations in log seconds (N,), N >= 1."""
        log_durations = torch.as_tensor(log_durations, dtype=torch.float64).reshape(-1)
        self._center = float(log_durations.mean())
        spread = float(log_durations.std()) if len(log_durations) > 1 else 0.0
        # All-equal durations: keep unit scale so the GP sees zeros, not NaN.
        self._scale = spread if spread > 1e-9 else 1.0
        self.gp.fit(X, (log_durations - self._center) / self._scale)

    def predict(self, X: Tensor) -> Tensor:
        """Posterior mean log duration at X (M, D), averaged over hyperparameter samples: (M,).

        Differentiable in X.
        """
        mean, _ = self.gp.posterior(X)
        return self._center + self._scale * mean.mean(0)
