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

import torch
from torch import Tensor

from .base import ConstraintModel, State, Surrogate, check_kind
from .standardise import Standardisation

# Constraint values whose standard deviation (N in the denominator) is at most this are all
# equal: the surrogate then sees zeros, not NaN.
MIN_STD = 1e-12


class ConstraintValueModel(ConstraintModel):
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
        standardisation = Standardisation.fit(values, unbiased=False, min_std=MIN_STD)
        self.threshold = -standardisation.mean / standardisation.std
        self.surrogate.fit(torch.as_tensor(X, dtype=torch.float64), standardisation(values))

    def probability(self, X: Tensor) -> Tensor:
        """P(c >= 0 | X) per posterior row (hyperparameter sample, and fantasy in a fantasised
        model), shape (R, M); differentiable in X.

        The observation's predictive (noise included) rather than the latent function's: on a
        deterministic constraint the fitted noise is where the model puts its misfit, and without
        it P(feasible) is overconfident next to the boundary.
        """
        mean, var = self.surrogate.posterior(torch.as_tensor(X, dtype=torch.float64), observation_noise=True)
        return torch.special.ndtr((mean - self.threshold) / var.clamp_min(1e-18).sqrt())

    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "ConstraintValueModel":
        """A value model whose surrogate is conditioned on joint draws of the constraint value at
        pending points X_pending (J, D); its ``probability`` is (S * n_fantasies, M)."""
        X_pending = torch.as_tensor(X_pending, dtype=torch.float64)
        fantasy = ConstraintValueModel(self.surrogate.fantasize(X_pending, n_fantasies, generator), self.n_inputs)
        fantasy.threshold = self.threshold
        return fantasy

    def state_dict(self) -> State:
        """The surrogate's state and where the constraint's zero lies in its units."""
        return {"kind": type(self).__name__, "n_inputs": self.n_inputs, "threshold": self.threshold,
                "surrogate": self.surrogate.state_dict()}

    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place; the next ``fit`` warm-starts the
        surrogate. ValueError (and nothing changed) when it is another model's state."""
        check_kind(state, type(self).__name__)
        if state["n_inputs"] != self.n_inputs:
            raise ValueError(f"saved constraint model is for {state['n_inputs']} inputs, not {self.n_inputs}")
        threshold = float(state["threshold"])
        self.surrogate.load_state_dict(state["surrogate"])
        self.threshold = threshold
