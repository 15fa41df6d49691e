"""A model of log job duration, for expected improvement per second (Snoek et al. 2012, sec. 3.2).

Durations vary over orders of magnitude with the inputs (a wider network, more epochs), so the
model is a GP on log seconds: positive predictions, multiplicative errors. It is the same GP
class as the objective's, with a small sampler budget and no warping, since only its mean is used
(EI per second divides integrated EI by exp(mean log duration)).
"""
from __future__ import annotations

import torch
from torch import Tensor

from .base import DurationPredictor, State, check_kind
from .gp import GP
from .standardise import Standardisation

# Log durations whose standard deviation (N - 1 in the denominator) is at most this are all
# equal: the GP then sees zeros, not NaN.
MIN_STD = 1e-9


class DurationModel(DurationPredictor):
    """GP regression of log durations on inputs in the unit cube.

    Parameters
    ----------
    n_samples, burn_in, sweeps_per_fit : the GP's sampler budget (small: the mean is what matters).
    seed : seed of the sampler.
    """

    def __init__(self, n_samples: int = 5, burn_in: int = 10, sweeps_per_fit: int = 1, seed: int | None = None):
        self.gp = GP(warping=False, n_samples=n_samples, burn_in=burn_in, sweeps_per_fit=sweeps_per_fit, seed=seed)
        self.standardisation = Standardisation()

    def fit(self, X: Tensor, log_durations: Tensor) -> None:
        """Fit to X (N, D) in [0, 1] and log durations in log seconds (N,), N >= 1."""
        log_durations = torch.as_tensor(log_durations, dtype=torch.float64).reshape(-1)
        self.standardisation = Standardisation.fit(log_durations, unbiased=True, min_std=MIN_STD)
        self.gp.fit(X, self.standardisation(log_durations))

    def predict(self, X: Tensor) -> Tensor:
        """Posterior mean log duration at X (M, D), averaged over hyperparameter samples: (M,).

        Differentiable in X.
        """
        mean, _ = self.gp.posterior(X)
        return self.standardisation.untransform(mean.mean(0))

    def state_dict(self) -> State:
        """The GP's state and the standardisation of the log durations it was fitted to."""
        return {"kind": type(self).__name__, "standardisation": self.standardisation.state_dict(),
                "gp": self.gp.state_dict()}

    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place; ValueError (nothing changed) if unusable."""
        check_kind(state, type(self).__name__)
        standardisation = Standardisation.from_state(state["standardisation"])
        self.gp.load_state_dict(state["gp"])
        self.standardisation = standardisation
