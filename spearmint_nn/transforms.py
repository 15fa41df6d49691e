"""Output transforms: what the surrogate sees of the objective values.

Models are fitted to transformed targets z = t(y), and the acquisition compares predictions with
t(incumbent). Any strictly increasing t keeps the minimiser, so the choice only changes how well a
model can fit the region that matters.

Standardising alone leaves typical benchmark and tuning objectives badly skewed: on Branin the
worst corner is 300 while the three minima sit at 0.4 and the basins around them at 1-5, so one
bad point dominates a squared-error fit and the differences that decide where the minimum is are
a hundredth of the data's spread. :class:`LogShift` takes ``log(y - min(y) + delta)`` first,
which compresses the bad tail and stretches the neighbourhood of the best observation; ``delta``
(a fraction of the observed range) bounds how far the best point can stand out, so no single
observation becomes an outlier either (after HEBO's power transforms, Cowen-Rivers et al. 2022,
in the spirit of the log-transformed costs of SMAC).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: delta of :class:`LogShift` as a fraction of max(y) - min(y).
LOG_SHIFT_FRACTION = 0.01
_MIN_SPREAD = 1e-12


def _mean_and_spread(z: np.ndarray) -> tuple[float, float]:
    spread = float(z.std())
    return float(z.mean()), spread if spread > _MIN_SPREAD else 1.0


@dataclass(frozen=True)
class Standardise:
    """z = (y - mean) / std of the fitted values."""

    mean: float = 0.0
    std: float = 1.0

    @classmethod
    def fit(cls, y: np.ndarray) -> "Standardise":
        """From the finite observed values y (N,), N >= 1."""
        return cls(*_mean_and_spread(np.asarray(y, dtype=float)))

    def __call__(self, y: np.ndarray | float) -> np.ndarray:
        """Transformed values, same shape as y."""
        return (np.asarray(y, dtype=float) - self.mean) / self.std


@dataclass(frozen=True)
class LogShift:
    """z = standardised log(y - lowest + delta), delta = ``LOG_SHIFT_FRACTION`` * (max - min).

    Defined for y > lowest - delta; every value it is applied to is an observed value or the
    incumbent, all >= lowest.
    """

    lowest: float = 0.0
    delta: float = 1.0
    mean: float = 0.0
    std: float = 1.0

    @classmethod
    def fit(cls, y: np.ndarray, fraction: float = LOG_SHIFT_FRACTION) -> "LogShift":
        """From the finite observed values y (N,), N >= 1."""
        y = np.asarray(y, dtype=float)
        lowest = float(y.min())
        delta = max(fraction * float(y.max() - lowest), _MIN_SPREAD)
        return cls(lowest, delta, *_mean_and_spread(np.log(y - lowest + delta)))

    def __call__(self, y: np.ndarray | float) -> np.ndarray:
        """Transformed values, same shape as y."""
        return (np.log(np.asarray(y, dtype=float) - self.lowest + self.delta) - self.mean) / self.std


#: Config name -> transform class, each with ``fit(y)`` and ``__call__(y)``.
OUTPUT_TRANSFORMS = {"standardise": Standardise, "log-shift": LogShift}
