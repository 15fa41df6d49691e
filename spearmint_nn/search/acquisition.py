"""Acquisition functions: what makes one candidate point worth more than another.

An :class:`Acquisition` maps candidate points ``X`` of shape (M, D) in the unit cube to scores
of shape (M,), to be *maximised*, differentiable in ``X`` (the optimiser refines candidates by
gradient ascent). Targets are minimised, in the model's standardised units.

Integration over hyperparameters (DNGO eq. 12-13) and over fantasies of pending jobs (DNGO
eq. 11, Snoek et al. 2012 sec. 3.3) is the same operation here: a model's ``posterior``
returns one row per hyperparameter sample (S rows) or per (sample, fantasy) pair (S * F rows),
and every acquisition averages its utility over those rows.

Expected improvement and probability of improvement are computed *in log space*: for a point
far from the incumbent or with a tiny predictive variance, EI underflows to 0 in float64 and
its gradient vanishes, which stalls the optimiser on flat plateaus. ``log_h`` (Ament et al.,
2023, "Unexpected improvements to expected improvement") keeps log EI finite and monotone, and
the average over rows is taken with ``logsumexp``. Because log-scale scores add, a factor such
as the probability of feasibility (constrained EI, Gelbart et al. 2014) or one over a predicted
duration (EI per second) composes by addition, see :class:`FeasibilityWeighted`.
"""
from __future__ import annotations

import abc
import math
from typing import Callable, Sequence

import torch
from torch import Tensor

from ..models.base import ConstraintModel, DurationPredictor, Surrogate
from ..problem.settings import ACQUISITIONS as ACQUISITION_NAMES
from ..problem.settings import check_registry

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_SQRT_PI_2 = 0.5 * math.log(math.pi / 2)
_SQRT_2 = math.sqrt(2.0)
_TAIL_START = -200.0  # where log_h switches to its asymptotic series
_MIN_VARIANCE = 1e-18  # standardised units: far below any noise level a model can fit
_MIN_PROBABILITY = 1e-300  # keeps log P finite where a classifier says "surely infeasible"


#: What the constrained acquisitions weigh by: a model of one constraint, read through its
#: ``probability`` (shape (M,) or (R, M) per hyperparameter sample or fantasy).
FeasibilityModel = ConstraintModel


def _log1mexp(x: Tensor) -> Tensor:
    """log(1 - exp(x)) for x < 0, accurate on both sides of -log 2 (Maechler, 2012)."""
    return torch.where(x > -math.log(2.0), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def log_h(z: Tensor) -> Tensor:
    """log(phi(z) + z * Phi(z)), the log of EI for unit sigma, finite for every finite z.

    Three regimes (after Ament et al. 2023, eq. 9): the direct formula where it is accurate
    (z > -1); an erfcx-based form for moderately negative z, whose cancellation error grows
    like eps * z^2; and, below ``_TAIL_START``, the asymptotic series
    h(z) = phi(z) / z^2 * (1 - 3 / z^2 + 15 / z^4 + O(z^-6)), whose error falls like 105 / z^6.
    At z = -200 both errors are below 1e-11. Each branch sees its input clamped into its own
    regime so that no branch produces NaN values or gradients.
    """
    z_hi = z.clamp(min=-1.0)
    direct = torch.log(torch.exp(-0.5 * z_hi**2 - _LOG_SQRT_2PI) + z_hi * torch.special.ndtr(z_hi))
    z_mid = z.clamp(min=_TAIL_START, max=-1.0)
    middle = (
        -0.5 * z_mid**2
        - _LOG_SQRT_2PI
        + _log1mexp(torch.log(torch.special.erfcx(-z_mid / _SQRT_2) * z_mid.abs()) + _LOG_SQRT_PI_2)
    )
    z_lo = z.clamp(max=_TAIL_START)
    inv_sq = 1.0 / z_lo**2
    tail = -0.5 * z_lo**2 - _LOG_SQRT_2PI + torch.log(inv_sq) + torch.log1p(inv_sq * (15.0 * inv_sq - 3.0))
    return torch.where(z > -1.0, direct, torch.where(z > _TAIL_START, middle, tail))


def _log_mean_rows(log_values: Tensor) -> Tensor:
    """log of the mean over the leading (sample/fantasy) dimension: (R, M) -> (M,)."""
    return torch.logsumexp(log_values, dim=0) - math.log(log_values.shape[0])


def _standard_deviation(var: Tensor) -> Tensor:
    return var.clamp_min(_MIN_VARIANCE).sqrt()


class Acquisition(abc.ABC):
    """A score over candidate points to maximise: X (M, D) -> (M,), differentiable in X.

    ``log_scale`` is True when the score is the log of a positive utility, so that
    multiplicative factors (probability of feasibility, 1 / duration) compose by addition.
    ``scores_posterior`` is True when the score is a function of the objective model's posterior
    mean and variance at X, which ``given_posterior`` then takes instead of asking the model.
    """

    log_scale: bool = False
    scores_posterior: bool = False

    @abc.abstractmethod
    def __call__(self, X: Tensor) -> Tensor:
        """Scores of shape (M,) for candidates X of shape (M, D)."""

    def given_posterior(self, X: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        """The scores at X (M, D) where the objective model's posterior there is (mean, var),
        each (R, M), as its ``posterior`` would give them (a batch's screening set computes them
        without conditioning the model anew: ``maximize.BatchScreening``)."""
        raise NotImplementedError(f"{type(self).__name__} scores no objective posterior")


class _PosteriorScore(Acquisition):
    """An acquisition that is a function of the objective posterior at X and nothing else of the
    model: the call asks the model, ``given_posterior`` does the rest."""

    scores_posterior = True
    model: Surrogate

    def __call__(self, X: Tensor) -> Tensor:
        return self.given_posterior(X, *self.model.posterior(X))

    @abc.abstractmethod
    def given_posterior(self, X: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        """The scores at X (M, D) where the objective model's posterior there is (mean, var)."""


class LogExpectedImprovement(_PosteriorScore):
    """log of integrated expected improvement below the incumbent (DNGO eq. 3, averaged per eq. 12).

    Parameters
    ----------
    model : surrogate whose posterior has R rows (hyperparameter samples, or samples x fantasies).
    best : incumbent in standardised units, a scalar or shape (R, 1) (one per fantasy row).
    """

    log_scale = True

    def __init__(self, model: Surrogate, best: Tensor | float):
        self.model, self.best = model, torch.as_tensor(best, dtype=torch.float64)

    def given_posterior(self, X: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        sigma = _standard_deviation(var)
        gamma = (self.best - mean) / sigma
        return _log_mean_rows(log_h(gamma) + torch.log(sigma))


class LogProbabilityOfImprovement(_PosteriorScore):
    """log of integrated probability that f(x) falls below the incumbent (Kushner, 1964)."""

    log_scale = True

    def __init__(self, model: Surrogate, best: Tensor | float):
        self.model, self.best = model, torch.as_tensor(best, dtype=torch.float64)

    def given_posterior(self, X: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        return _log_mean_rows(torch.special.log_ndtr((self.best - mean) / _standard_deviation(var)))


class LowerConfidenceBound(_PosteriorScore):
    """Integrated negative lower confidence bound, mean over rows of -(mu - kappa * sigma).

    Maximising it minimises the optimistic bound mu - kappa * sigma (GP-UCB of Srinivas et al.
    2010, for minimisation). It needs no incumbent.
    """

    def __init__(self, model: Surrogate, best: Tensor | float | None = None, kappa: float = 2.0):
        self.model, self.kappa = model, float(kappa)

    def given_posterior(self, X: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        return (self.kappa * _standard_deviation(var) - mean).mean(dim=0)


class LogExpectedImprovementPerSecond(_PosteriorScore):
    """log of integrated EI divided by the predicted duration (Snoek et al. 2012, sec. 3.2).

    ``duration`` predicts the log run time of a job at X; subtracting it from log EI prefers
    points that buy improvement cheaply. Without a duration model (no durations known yet) it
    is plain log EI.
    """

    log_scale = True

    def __init__(self, model: Surrogate, best: Tensor | float, duration: DurationPredictor | None = None):
        self.model = model
        self.expected_improvement = LogExpectedImprovement(model, best)
        self.duration = duration

    def given_posterior(self, X: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        log_ei = self.expected_improvement.given_posterior(X, mean, var)
        return log_ei if self.duration is None else log_ei - self.duration.predict(X)


def log_probability_of_feasibility(models: Sequence[FeasibilityModel], X: Tensor) -> Tensor:
    """Sum over constraints of log P(feasible) at X (M, D), shape (M,).

    Constraints are taken as independent (their probabilities multiply); a classifier that
    returns one row per hyperparameter sample is averaged over its rows first.
    """
    total = X.new_zeros(X.shape[0])
    for model in models:
        p = model.probability(X)
        if p.dim() == 2:
            p = p.mean(dim=0)
        total = total + torch.log(p.clamp_min(_MIN_PROBABILITY))
    return total


class FeasibilityWeighted(Acquisition):
    """A base acquisition plus log P(all constraints satisfied): EI x P(feasible) for log-EI.

    For a log-scale base (EI, PI) this is exactly the constrained acquisition of Gelbart et al.
    (2014) and DNGO sec. 3.2. For a score that is not a log (LCB) the same sum acts as a
    soft barrier that grows without bound where the classifiers are sure of infeasibility.
    """

    def __init__(self, base: Acquisition, feasibility: Sequence[FeasibilityModel]):
        self.base, self.feasibility = base, list(feasibility)
        self.log_scale, self.scores_posterior = base.log_scale, base.scores_posterior

    def __call__(self, X: Tensor) -> Tensor:
        return self.base(X) + log_probability_of_feasibility(self.feasibility, X)

    def given_posterior(self, X: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        return self.base.given_posterior(X, mean, var) + log_probability_of_feasibility(self.feasibility, X)


class LogProbabilityOfFeasibility(Acquisition):
    """log P(all constraints satisfied): what to maximise while no feasible point is known."""

    log_scale = True

    def __init__(self, feasibility: Sequence[FeasibilityModel]):
        self.feasibility = list(feasibility)

    def __call__(self, X: Tensor) -> Tensor:
        return log_probability_of_feasibility(self.feasibility, X)


AcquisitionFactory = Callable[..., Acquisition]

#: Acquisition name (as in the config's ``acquisition`` key) -> class taking (model, best, **options).
ACQUISITIONS: dict[str, AcquisitionFactory] = {
    "ei": LogExpectedImprovement,
    "pi": LogProbabilityOfImprovement,
    "lcb": LowerConfidenceBound,
    "ei-per-second": LogExpectedImprovementPerSecond,
}
check_registry("spearmint_nn.search.acquisition.ACQUISITIONS", ACQUISITIONS, ACQUISITION_NAMES)


def condition_on_pending(
    model: Surrogate,
    best: float,
    X_pending: Tensor,
    n_fantasies: int,
    generator: torch.Generator,
) -> tuple[Surrogate, Tensor]:
    """Condition the model on fantasies of pending jobs; return it and the incumbent per row.

    Parameters
    ----------
    model : fitted surrogate, posterior with S rows.
    best : the observed incumbent (best feasible standardised value).
    X_pending : inputs of pending jobs, shape (J, D); J may be 0.
    n_fantasies : F, joint draws of the pending outcomes.

    Returns
    -------
    (model, best_rows). With J = 0 the model itself and a scalar incumbent. Otherwise the
    fantasised model (posterior with S * F rows) and an incumbent of shape (S * F, 1): under
    each fantasy the incumbent is the smaller of the observed incumbent and the fantasised
    model's mean at the pending points, i.e. the best value that fantasy says the pending jobs
    will reach. A candidate next to a pending job therefore has little EI under every fantasy
    (the fantasy has pinned f there and moved the incumbent), which is what spreads a batch.
    """
    best_tensor = torch.tensor(best, dtype=torch.float64)
    if X_pending.shape[0] == 0:
        return model, best_tensor
    fantasy = model.fantasize(X_pending, n_fantasies, generator)
    with torch.no_grad():
        pending_mean, _ = fantasy.posterior(X_pending)
    return fantasy, torch.minimum(pending_mean.min(dim=1).values, best_tensor)[:, None]


def make_acquisition(
    name: str,
    model: Surrogate | None,
    best: Tensor | float | None,
    feasibility: Sequence[FeasibilityModel] = (),
    **options: float,
) -> Acquisition:
    """Build the acquisition for one suggestion.

    ``best`` is None while no observation satisfies every constraint: then the acquisition is
    P(feasible) alone (Gelbart et al. 2014), so the search first finds the feasible region.
    ``options`` go to the acquisition class (e.g. ``kappa`` for "lcb").
    """
    if name not in ACQUISITIONS:
        raise ValueError(f"unknown acquisition {name!r}; known: {sorted(ACQUISITIONS)}")
    if best is None or model is None:
        if not feasibility:
            raise ValueError("an acquisition needs an incumbent or at least one feasibility model")
        return LogProbabilityOfFeasibility(feasibility)
    base = ACQUISITIONS[name](model, best, **options)
    return FeasibilityWeighted(base, feasibility) if feasibility else base
