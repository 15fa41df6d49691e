"""Output transforms: what the surrogate sees of the objective values.

Models are fitted to transformed targets z = t(y), and the acquisition compares predictions with
t(incumbent). Any strictly increasing t keeps the minimiser, so the choice only changes how well a
model can fit the region that matters.

Standardising alone leaves typical benchmark and tuning objectives badly skewed: on Branin the
worst corner is 300 while the three minima sit at 0.4 and the basins around them at 1-5, so one
bad point dominates a squared-error fit and the differences that decide where the minimum is are
a hundredth of the data's spread. :class:`LogShift` takes ``log(y - min(y) + delta)`` first,
which compresses the bad tail and stretches the neighbourhood of the best observation; ``delta``
bounds how far the best point can stand out, so no single observation becomes an outlier either
(after HEBO's power transforms, Cowen-Rivers et al. 2022, in the spirit of the log-transformed
costs of SMAC).

``delta`` is the smaller of 1% of the observed range and the gap from the best value to the k-th
best (k = 10% of N, at least 3). Why the second: a fixed share of the range sets the resolution
at the bottom. On Branin 1% is about 3, so once a run has sampled a basin, its values (0.0004 to
0.1 above the minimum) all land within 0.02 standardised units of each other, the size of
DNGO's training misfit: the regression calls the basin's floor noise and its proposals stay
about 0.005 (in the unit cube) off the minimum. Tied to the best few values, delta shrinks as
the run closes in and the floor stays resolved (benchmarks/RESULTS.md of e90882b, "Which targets are met").

The log is not always right. On Hartmann-like objectives most of the box is flat and bad and a
few points are much better: the values already have a long tail on the *good* side, and the log
stretches it further, so the best observation becomes an outlier the fit chases (skewness of 100
Sobol values of Hartmann6: -2.3 standardised, -3.9 after the log). :class:`SymmetryChosen` (DNGO's
default) therefore fits both and keeps the one whose transformed values are closer to symmetric,
a two-point version of choosing a Box-Cox exponent by how normal the result looks (Branin: 1.1
standardised, -0.4 after the log, so the log is kept).

Which one suits a model was measured (benchmarks/RESULTS.md): DNGO's squared-error basis fit gains from
the log on Branin; the GP's stationary Matern kernel does not, since the log turns each minimum
into a sharp cusp that the GP can only fit as noise. The GP gains from :class:`YeoJohnson`, a
power transform of the z-scores that compresses the tail without a cusp: on Branin the z-scored
tail made the GP call the basins' differences noise and keep exploring. :func:`default_transform`
says which is used when the config says "auto".

Every fitted transform has its exact inverse, ``untransform``, in closed form, so a prediction in
the model's units maps back to the objective's without a numerical search.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..models.standardise import Standardisation
from ..problem.settings import OUTPUT_TRANSFORMS as TRANSFORM_NAMES
from ..problem.settings import check_registry

#: delta of :class:`LogShift` is at most this fraction of max(y) - min(y) ...
LOG_SHIFT_FRACTION = 0.01
#: ... and at most the gap from the best value to the k-th best, k = this share of N ...
BEST_SHARE = 0.1
#: ... but k is never below this ...
MIN_BEST = 3
#: ... and delta never below this fraction of max(y) - min(y) (ties at the best value).
MIN_DELTA_FRACTION = 1e-6
#: ... nor below this at all (every value equal: no gap to take a fraction of).
_MIN_DELTA = 1e-12
#: :class:`YeoJohnson` fits its exponent from this many distinct values on ...
MIN_POWER_FIT = 3
#: ... within these bounds, so that one outlier cannot drive it to extremes (z-scores of N values
#: stay below sqrt(N) in size: at the bounds a thousand values transform to less than 1e7).
POWER_BOUNDS = (-3.0, 4.0)


@dataclass(frozen=True)
class LogShift:
    """z = standardised log(y - lowest + delta), delta = min(``LOG_SHIFT_FRACTION`` * (max - min),
    k-th best - best) (module docstring).

    Defined for y > lowest - delta; every value it is applied to is an observed value or the
    incumbent, all >= lowest.
    """

    lowest: float = 0.0
    delta: float = 1.0
    mean: float = 0.0
    std: float = 1.0

    @classmethod
    def fit(cls, y: np.ndarray, resolve_best: bool = True) -> "LogShift":
        """From the finite observed values y (N,), N >= 1; ``resolve_best=False``: delta is the
        share of the range alone."""
        y = np.sort(np.asarray(y, dtype=float))
        lowest, spread = float(y[0]), float(y[-1] - y[0])
        delta = LOG_SHIFT_FRACTION * spread
        if resolve_best:
            k = max(MIN_BEST, math.ceil(BEST_SHARE * len(y)))
            delta = min(delta, max(float(y[min(k, len(y)) - 1]) - lowest, MIN_DELTA_FRACTION * spread))
        delta = max(delta, _MIN_DELTA)
        scores = Standardisation.fit(np.log(y - lowest + delta))
        return cls(lowest, delta, scores.mean, scores.std)

    def __call__(self, y: np.ndarray | float) -> np.ndarray:
        """Transformed values, same shape as y."""
        return (np.log(np.asarray(y, dtype=float) - self.lowest + self.delta) - self.mean) / self.std

    def untransform(self, z: np.ndarray | float) -> np.ndarray:
        """The values y whose transform is z, same shape as z; every z has one, above lowest - delta."""
        return np.exp(np.asarray(z, dtype=float) * self.std + self.mean) + self.lowest - self.delta


@dataclass(frozen=True)
class YeoJohnson:
    """z = standardised Yeo-Johnson power transform of the standardised values, its exponent
    ``power`` fitted by maximum likelihood (the normal log-likelihood of the transformed values,
    as in scikit-learn's PowerTransformer; HEBO's choice for a GP, Cowen-Rivers et al. 2022).

    Unlike :class:`LogShift` it is smooth everywhere: the standardised values are not shifted to
    the best one, so no minimum becomes a cusp. It is applied to z-scores (``scores``), so the
    exponent does not depend on the objective's units or offset; ``result`` standardises the
    powered values.
    """

    scores: Standardisation = Standardisation()
    power: float = 1.0
    result: Standardisation = Standardisation()

    @classmethod
    def fit(cls, y: np.ndarray) -> "YeoJohnson":
        """From the finite observed values y (N,), N >= 1; the identity power (1) for fewer than
        ``MIN_POWER_FIT`` distinct values, where a fitted exponent would be noise."""
        scores = Standardisation.fit(y)
        z = scores(y)
        power = 1.0
        if len(np.unique(z)) >= MIN_POWER_FIT:
            power = float(np.clip(stats.yeojohnson_normmax(z), *POWER_BOUNDS))
        return cls(scores, power, Standardisation.fit(stats.yeojohnson(z, power)))

    def __call__(self, y: np.ndarray | float) -> np.ndarray:
        """Transformed values, same shape as y."""
        z = self.scores(y)
        return self.result(stats.yeojohnson(np.atleast_1d(z), self.power).reshape(z.shape))

    def untransform(self, z: np.ndarray | float) -> np.ndarray:
        """The values y whose transform is z, same shape as z.

        The power transform maps the z-scores >= 0 onto [0, 1 / -power) and those < 0 onto
        (-1 / (power - 2), 0) (each interval unbounded where the denominator is not positive),
        so a z outside them, which no value transforms to, gives NaN.
        """
        return self.scores.untransform(_yeo_johnson_inverse(self.result.untransform(z), self.power))


def _yeo_johnson_inverse(t: np.ndarray, power: float) -> np.ndarray:
    """x with ``stats.yeojohnson(x, power) == t``, elementwise; NaN where no x gives t.

    x >= 0 maps to t = ((x + 1)^power - 1) / power (log1p(x) at power 0) and x < 0 to
    t = -((1 - x)^(2 - power) - 1) / (2 - power) (-log1p(-x) at power 2), so the sign of t says
    which branch to invert; expm1 and log1p keep the inverse exact near t = 0.
    """
    t = np.asarray(t, dtype=float)
    x = np.empty_like(t)
    up, down = t >= 0, t < 0
    with np.errstate(invalid="ignore", divide="ignore"):
        # scipy takes the logarithmic branch where |power| (or |2 - power|) is below spacing(1)
        if abs(power) < np.spacing(1.0):
            x[up] = np.expm1(t[up])
        else:
            x[up] = np.expm1(np.log1p(power * t[up]) / power)
        other = 2.0 - power
        if abs(other) < np.spacing(1.0):
            x[down] = -np.expm1(-t[down])
        else:
            x[down] = -np.expm1(np.log1p(-other * t[down]) / other)
    return x


def _skewness(z: np.ndarray) -> float:
    """Sample skewness of standardised values z (mean 0, std 1): mean of z^3."""
    return float(np.mean(z**3))


#: A fitted output transform: increasing, with its exact inverse ``untransform``.
OutputTransform = Standardisation | LogShift | YeoJohnson


class SymmetryChosen:
    """Whichever of :class:`Standardisation` and :class:`LogShift` leaves y least skewed."""

    @staticmethod
    def fit(y: np.ndarray) -> Standardisation | LogShift:
        """The fitted transform whose values have the smaller absolute skewness (ties: standardise).

        The log is judged with delta a share of the range: that compares the shapes of the two
        distributions; the small delta that resolves the best values would make the best point
        stand out and tip the choice by itself.
        """
        y = np.asarray(y, dtype=float)
        standardised, logged = Standardisation.fit(y), LogShift.fit(y, resolve_best=False)
        if abs(_skewness(logged(y))) < abs(_skewness(standardised(y))):
            return LogShift.fit(y)
        return standardised


#: Config name -> transform class, each with ``fit(y)`` returning a callable transform; "auto"
#: (:data:`~spearmint_nn.problem.settings.AUTO`) picks one by :func:`default_transform`.
OUTPUT_TRANSFORMS = {"least-skewed": SymmetryChosen, "standardise": Standardisation, "log-shift": LogShift,
                     "yeo-johnson": YeoJohnson}
check_registry("spearmint_nn.search.transforms.OUTPUT_TRANSFORMS", OUTPUT_TRANSFORMS, TRANSFORM_NAMES)


def default_transform(model_is_gp: bool) -> str:
    """The transform "auto" stands for: "yeo-johnson" for a GP, "least-skewed" otherwise (DNGO)."""
    return "yeo-johnson" if model_is_gp else "least-skewed"
