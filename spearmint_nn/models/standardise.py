"""Standardisation, z = (v - mean) / std: the one class for every standardisation here.

Two kinds of targets are standardised: the objective's, by the search before its model sees
them (the ``standardise`` output transform of :mod:`spearmint_nn.search.transforms`, and the
first and last step of its Yeo-Johnson transform), in numpy; and the targets that a model
standardises itself (constraint values, log durations), in torch. The class takes and gives
either, as it is handed. Each user keeps the estimator and the floor it has always used, so
both are parameters of :meth:`Standardisation.fit`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor

# Values whose standard deviation is at most this are all equal: they standardise to zeros, not NaN.
MIN_SPREAD = 1e-12


@dataclass(frozen=True)
class Standardisation:
    """z = (v - mean) / std, fitted to a model's targets."""

    mean: float = 0.0
    std: float = 1.0

    @classmethod
    def fit(cls, values: Any, *, unbiased: bool = False, min_std: float = MIN_SPREAD) -> "Standardisation":
        """From finite values (N,), N >= 1, a tensor or anything numpy reads: their mean, and
        their standard deviation (divided by N - 1 when ``unbiased``, else by N; 0 for a single
        value) where it exceeds ``min_std``, else 1, so that equal values standardise to zeros,
        not NaN."""
        if isinstance(values, Tensor):
            spread = float(values.std(unbiased=unbiased)) if len(values) > 1 else 0.0
            return cls(float(values.mean()), spread if spread > min_std else 1.0)
        array = np.asarray(values, dtype=float)
        spread = float(array.std(ddof=1 if unbiased else 0)) if len(array) > 1 else 0.0
        return cls(float(array.mean()), spread if spread > min_std else 1.0)

    def __call__(self, values: Any) -> Any:
        """Standardised values, same shape as ``values``: a tensor for a tensor, else a numpy array."""
        if isinstance(values, Tensor):
            return (values - self.mean) / self.std
        return (np.asarray(values, dtype=float) - self.mean) / self.std

    def untransform(self, z: Any) -> Any:
        """Values in the original units of standardised z, same shape as z (a tensor for a tensor)."""
        if isinstance(z, Tensor):
            return self.mean + self.std * z
        return np.asarray(z, dtype=float) * self.std + self.mean

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def from_state(cls, state: dict[str, float]) -> "Standardisation":
        """The standardisation ``state_dict`` described; ValueError unless two numbers."""
        mean, std = state["mean"], state["std"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (mean, std)):
            raise ValueError(f"a saved standardisation is two numbers, got {state!r}")
        return cls(float(mean), float(std))
