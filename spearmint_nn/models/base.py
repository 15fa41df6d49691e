"""The Surrogate seam: what the acquisition code needs from a model of the objective.

Every model works in the unit cube (``X`` of shape (N, D), float64 tensors) on standardised
targets, and is *batched over hyperparameter samples*: a posterior is returned for all S
samples at once as tensors of shape (S, M), so integrated acquisition functions average over
the leading dimension instead of looping in Python.
"""
from __future__ import annotations

import abc
import io
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..files import atomic_write_bytes


class Surrogate(abc.ABC):
    """A probabilistic model of f: [0, 1]^D -> R with hyperparameters integrated by sampling."""

    @abc.abstractmethod
    def fit(self, X: Tensor, y: Tensor) -> None:
        """Fit to inputs X of shape (N, D) in [0, 1] and standardised targets y of shape (N,)."""

    @abc.abstractmethod
    def posterior(self, X: Tensor, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Mean and variance of f at X (M, D), each of shape (S, M); differentiable in X.

        With ``observation_noise`` the variance is that of a new observation y = f + noise, the
        calibrated predictive of what a job would report; without, that of f itself, the
        uncertainty an evaluation removes (what acquisitions need).
        """

    @abc.abstractmethod
    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "Surrogate":
        """A model conditioned on joint posterior draws of y at X_pending (J, D).

        Its ``posterior`` returns shape (S * n_fantasies, M): one row per (sample, fantasy).
        """

    @abc.abstractmethod
    def sample_f(self, X: Tensor, generator: torch.Generator) -> Tensor:
        """One joint posterior draw of f (no observation noise) at X (M, D), shape (M,).

        The draw comes from one row of ``posterior`` (a hyperparameter sample and, for a
        fantasised model, one fantasy) chosen at random: a Thompson sample.
        """


def save_tensors(path: Path, state: Any) -> None:
    """``torch.save`` of ``state`` (tensors and containers of them; read back with
    ``torch.load(path, weights_only=True)``), replacing ``path`` atomically."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    atomic_write_bytes(path, buffer.getvalue())
