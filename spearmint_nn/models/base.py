"""The model protocols: what the search needs from a model of the objective, of a constraint and
of job duration, what a model of the objective may do beyond that, and the one way every model's
state is handed out and taken back.

Every model works in the unit cube (``X`` of shape (N, D), float64 tensors). A model of the
objective (:class:`Surrogate`) is fitted to standardised targets and is *batched over
hyperparameter samples*: a posterior is returned for all S samples at once as tensors of shape
(S, M), so integrated acquisition functions average over the leading dimension instead of looping
in Python.

``fantasize`` returns a model of the same class conditioned on draws at pending points, as
BoTorch's ``FantasizeMixin`` does: it answers every question the original answers, with one row
per (sample, fantasy), and it is a model in its own right (fitting it fits a copy; the original is
never changed).

State: ``state_dict()`` returns a dict of tensors and plain values (numbers, strings, booleans,
None, lists and dicts of them) that ``torch.load(..., weights_only=True)`` reads back, and
``load_state_dict(state)`` restores it in place, raising ValueError (or KeyError) without changing
the model when the state is not one this model can continue. As in torch, the tensors of a
state may be the model's own: write or copy a state before the model changes. Models do no file
I/O: :mod:`spearmint_nn.search.model_store` writes and reads the states.

Capabilities: what only some models of the objective can do is a protocol of its own
(:class:`Conditionable`, :class:`PathSampler`, :class:`Warped`, :class:`MultiTask`), which the
search asks with ``isinstance(model, PathSampler)``. A model class names the capabilities it
has among its bases, so its first line says what it can do; ``isinstance`` checks the method
itself, so a test double that defines it has the capability too. Each protocol is one method,
and ``isinstance`` reads exactly that capability.
"""
from __future__ import annotations

import abc
from typing import Any, Protocol, Self, runtime_checkable

import torch
from torch import Tensor

#: What ``state_dict`` returns and ``load_state_dict`` takes.
State = dict[str, Any]


def check_kind(state: State, kind: str) -> None:
    """ValueError unless ``state`` is a dict written by a model of class ``kind`` (its "kind" entry)."""
    if not isinstance(state, dict):
        raise ValueError(f"a saved model state is a dict, not a {type(state).__name__}")
    if state.get("kind") != kind:
        raise ValueError(f"the saved state is of a {state.get('kind')!r} model, not of a {kind!r} model")


@runtime_checkable
class Surrogate(Protocol):
    """A probabilistic model of f: [0, 1]^D -> R with hyperparameters integrated by sampling."""

    @abc.abstractmethod
    def fit(self, X: Tensor, y: Tensor) -> None:
        """Fit to inputs X of shape (N, D) in [0, 1] and standardised targets y of shape (N,)."""

    @abc.abstractmethod
    def posterior(self, X: Tensor, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Mean and variance of f at X (M, D), each of shape (S, M); differentiable in X.

        With ``observation_noise`` the variance is that of a new observation y = f + noise, the
        calibrated predictive of what a job would report; without, that of f itself, the
        uncertainty an evaluation removes. Left out, it is the one the model's acquisitions use
        (the model's own default).
        """

    @abc.abstractmethod
    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> Self:
        """A model of the same class conditioned on joint posterior draws of y at X_pending (J, D).

        Its ``posterior`` returns shape (S * n_fantasies, M): one row per (sample, fantasy).
        """

    @abc.abstractmethod
    def sample_f(self, X: Tensor, generator: torch.Generator) -> Tensor:
        """One joint posterior draw of f (no observation noise) at X (M, D), shape (M,).

        The draw comes from one row of ``posterior`` (a hyperparameter sample and, for a
        fantasised model, one fantasy) chosen at random: a Thompson sample.
        """

    @abc.abstractmethod
    def state_dict(self) -> State:
        """What a restarted process needs to continue this model (see the module docstring)."""

    @abc.abstractmethod
    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place; the next ``fit`` warm-starts."""


# ---------------------------------------------------------------------------------- capabilities


@runtime_checkable
class Conditionable(Protocol):
    """A surrogate that takes new observations into its posterior for a fraction of a fit's cost,
    keeping what was learned (DNGO: the output layer refitted on the basis as it is)."""

    @abc.abstractmethod
    def condition(self, X: Tensor, y: Tensor) -> None:
        """As ``fit`` on X (N, D) and standardised y (N,), without the expensive part of a fit."""


@runtime_checkable
class PathSampler(Protocol):
    """A surrogate that draws f jointly at many points at once, for batches chosen on joint draws."""

    @abc.abstractmethod
    def sample_paths(self, X: Tensor, n: int, generator: torch.Generator) -> Tensor:
        """n joint posterior draws of f (no observation noise) at X (M, D), shape (n, M)."""


@runtime_checkable
class Warped(Protocol):
    """A surrogate that learns warpings of its inputs and reports them."""

    @abc.abstractmethod
    def warpings(self, grid_size: int = 51) -> dict[str, Any] | None:
        """JSON-able learned warpings of the warped columns in the format of
        :func:`spearmint_nn.models.warping.warping_summary`; None without warped columns."""


@runtime_checkable
class MultiTask(Protocol):
    """A surrogate of the current task fitted together with related tasks' data."""

    @abc.abstractmethod
    def task_correlations(self) -> Tensor:
        """Each task's correlation with the current one, per hyperparameter sample: (S, T),
        column 0 (the current task) is 1."""


@runtime_checkable
class ConstraintModel(Protocol):
    """P(feasible | x) for one constraint, learned from what the jobs reported about it.

    ``trivial`` is True while the model has nothing to say (P(feasible) is exactly 1 everywhere),
    so an acquisition can leave it out.
    """

    trivial: bool

    @abc.abstractmethod
    def fit(self, X: Tensor, observed: Tensor) -> None:
        """Fit to inputs X (N, D) in [0, 1] and what was observed at them (N,): feasibility labels
        (bool) for a classifier, constraint values (>= 0 satisfied) for a regression."""

    @abc.abstractmethod
    def probability(self, X: Tensor) -> Tensor:
        """P(feasible) at X (M, D), shape (M,) or (R, M) with one row per hyperparameter sample
        or fantasy; differentiable in X."""

    @abc.abstractmethod
    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> Self:
        """A model of the same class conditioned on F = n_fantasies joint draws of what the pending
        points X_pending (J, D) will report; its ``probability`` has one row per fantasy (and
        hyperparameter sample)."""

    @abc.abstractmethod
    def state_dict(self) -> State:
        """What a restarted process needs to continue this model (see the module docstring)."""

    @abc.abstractmethod
    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place; the next ``fit`` warm-starts."""


@runtime_checkable
class DurationPredictor(Protocol):
    """A model of job cost: the log run time of a job at x."""

    @abc.abstractmethod
    def fit(self, X: Tensor, log_durations: Tensor) -> None:
        """Fit to X (N, D) in [0, 1] and log durations in log seconds (N,), N >= 1."""

    @abc.abstractmethod
    def predict(self, X: Tensor) -> Tensor:
        """Mean log duration in log seconds at X (M, D), shape (M,); differentiable in X."""

    @abc.abstractmethod
    def state_dict(self) -> State:
        """What a restarted process needs to continue this model (see the module docstring)."""

    @abc.abstractmethod
    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place."""
