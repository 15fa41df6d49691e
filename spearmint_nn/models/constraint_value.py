"""P(c(x) >= 0) from a regression model of an explicit constraint's observed value c(x).

When the wrapper reports a constraint's value (Spearmint's CONSTRAINT tasks: a number, >= 0
meaning satisfied), the value says far more than its sign: how far a point is from the
boundary, and in which direction the boundary lies. Gelbart et al. (2014) and Gardner et al.
(2014) therefore model each observed constraint function with the same kind of surrogate as
the objective and take the probability of feasibility from its predictive distribution,

    P(c(x) >= 0) = mean over rows r of  Phi(mu_r(x) / sigma_r(x)),

the rows being the surrogate's hyperparameter samples (and fantasies of pending jobs): the
hyperparameters are integrated out exactly as for EI. A classifier of the signs alone
(:mod:`spearmint_nn.models.classifier`) stays for what has no value: whether a job succeeded.

Values are standardised to mean 0, variance 1 before the fit, and the threshold 0 with them.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from .base import Surrogate


def _probability_above(model: Surrogate, threshold: float, X: Tensor) -> Tensor:
    """P(c >= threshold) for a new observation c at X, per posterior row, shape (R, M).

    The observation's predictive (noise included) rather than the latent function's: on a
    deterministic constraint the fitted noise is where the model puts its misfit, and without it
    P(feasible) is overconfident next to the boundary. Differentiable in X.
    """
    mean, var = model.posterior(X, observation_noise=True)
    return torch.special.ndtr((mean - threshold) / var.clamp_min(1e-18).sqrt())


class ConstraintValueModel:
    """P(feasible | x) for one explicit constraint, from a surrogate of its value.

    Parameters
    ----------
    surrogate : an unfitted :class:`~spearmint_nn.models.base.Surrogate` over the unit cube
        (the objective's kind, e.g. DNGO); its posterior rows are hyperparameter samples.
    n_inputs : D, the encoded input dimension.
    """

    trivial = False  # a fitted value model always has something to say about the boundary

    def __init__(self, surrogate: Surrogate, n_inputs: int):
        self.surrogate, self.n_inputs = surrogate, n_inputs
        self.threshold = 0.0  # where c = 0 lies in the surrogate's standardised units

    def fit(self, X: Tensor, values: Tensor) -> None:
        """Fit to inputs X (N, D) in [0, 1] and constraint values (N,), N >= 2, all finite."""
        values = torch.as_tensor(values, dtype=torch.float64)
        if values.ndim != 1 or values.shape[0] < 2 or not bool(torch.isfinite(values).all()):
            raise ValueError(f"expected at least two finite constraint values, got {values.tolist()}")
        mean, std = float(values.mean()), float(values.std(unbiased=False))
        std = std if std > 1e-12 else 1.0
        self.threshold = -mean / std
        self.surrogate.fit(torch.as_tensor(X, dtype=torch.float64), (values - mean) / std)

    def probability(self, X: Tensor) -> Tensor:
        """P(c >= 0 | X) per hyperparameter sample, shape (S, M); differentiable in X."""
        return _probability_above(self.surrogate, self.threshold, torch.as_tensor(X, dtype=torch.float64))

    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "FantasizedConstraintValue":
        """Condition on joint draws of the constraint value at pending points X_pending (J, D)."""
        X_pending = torch.as_tensor(X_pending, dtype=torch.float64)
        return FantasizedConstraintValue(self.surrogate.fantasize(X_pending, n_fantasies, generator), self.threshold)

    def save(self, directory: str | Path) -> None:
        """Write the surrogate's state for a warm start (its own file format)."""
        if hasattr(self.surrogate, "save"):
            self.surrogate.save(directory)

    def load(self, directory: str | Path) -> None:
        """Restore the surrogate's state written by ``save``, in place; the next ``fit`` warm-starts."""
        if hasattr(self.surrogate, "load"):
            self.surrogate.load(directory)


class FantasizedConstraintValue:
    """A value model conditioned on fantasies; ``probability`` is (S * F, M)."""

    def __init__(self, surrogate: Surrogate, threshold: float):
        self.surrogate, self.threshold = surrogate, threshold

    def probability(self, X: Tensor) -> Tensor:
        return _probability_above(self.surrogate, self.threshold, torch.as_tensor(X, dtype=torch.float64))
