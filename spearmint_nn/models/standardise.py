"""Standardisation of the targets that a model standardises itself (constraint values, log
durations), in torch.

The objective's targets are transformed by the search before its model sees them
(:mod:`spearmint_nn.search.transforms`, in numpy); these are the models that own their output
transform. Each keeps the estimator and the floor it has always used, so both are parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass(frozen=True)
class Standardisation:
    """z = (v - mean) / std, fitted to a model's targets."""

    mean: float = 0.0
    std: float = 1.0

    @classmethod
    def fit(cls, values: Tensor, *, unbiased: bool, min_std: float) -> "Standardisation":
        """From values (N,), N >= 1: their mean, and their standard deviation (divided by N - 1
        when ``unbiased``, else by N; 0 for a single value) where it exceeds ``min_std``, else 1,
        so that equal values standardise to zeros, not NaN."""
        spread = float(values.std(unbiased=unbiased)) if len(values) > 1 else 0.0
        return cls(float(values.mean()), spread if spread > min_std else 1.0)

    def __call__(self, values: Tensor) -> Tensor:
        """Standardised values, same shape as ``values``."""
        return (values - self.mean) / self.std

    def untransform(self, z: Tensor) -> Tensor:
        """Values in the original units of standardised z, same shape as z."""
        return self.mean + self.std * z

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def from_state(cls, state: dict[str, float]) -> "Standardisation":
        """The standardisation ``state_dict`` described; ValueError unless two numbers."""
        mean, std = state["mean"], state["std"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (mean, std)):
            raise ValueError(f"a saved standardisation is two numbers, got {state!r}")
        return cls(float(mean), float(std))
