"""Surrogate models by name: the config's ``model`` key -> a factory.

A factory is called as ``factory(n_inputs=D, seed=seed, **options)`` and returns a
:class:`~spearmint_nn.models.base.Surrogate`. Model modules are imported only when their model
is asked for, so a model with heavy or optional dependencies costs nothing to the others.
Adding a model is one entry in :data:`MODELS`.
"""
from __future__ import annotations

from typing import Any, Callable

from .base import Surrogate

ModelFactory = Callable[..., Surrogate]


def _dngo(n_inputs: int, seed: int | None = None, **options: Any) -> Surrogate:
    from .dngo import DNGO

    return DNGO(n_inputs=n_inputs, seed=seed, **options)


def _dngo_with_warping(n_inputs: int, seed: int | None = None, **options: Any) -> Surrogate:
    # The paper's basis by default: with the Fourier features (on the unwarped inputs) the warped
    # model did worse on Branin than without (models/DESIGN.md, "Input warping in DNGO").
    return _dngo(n_inputs=n_inputs, seed=seed, **{"fourier_features": 0, **options, "warping": True})


def _gp(n_inputs: int, seed: int | None = None, **options: Any) -> Surrogate:
    from .gp import GP

    return GP(n_inputs=n_inputs, seed=seed, **options)


def _gp_without_warping(n_inputs: int, seed: int | None = None, **options: Any) -> Surrogate:
    return _gp(n_inputs=n_inputs, seed=seed, **{**options, "warping": False})


MODELS: dict[str, ModelFactory] = {
    "dngo": _dngo,
    "dngo-warp": _dngo_with_warping,
    "gp": _gp,
    "gp-nowarp": _gp_without_warping,
}

#: Models that take the objective's likelihood (``noiseless=True`` for NOISELESS) and the arc
#: kernel of a conditional space (``conditional=``). DNGO takes neither: it has no fixed-noise
#: mode, and it reads a conditional space through the encoding (indicator plus neutral value).
#: Every model takes the columns worth warping (``warped_columns=``, a boolean mask over the
#: encoded columns; "dngo" and "gp-nowarp" warp none).
GP_MODELS = frozenset({"gp", "gp-nowarp"})


def make_model(name: str, n_inputs: int, seed: int | None = None, **options: Any) -> Surrogate:
    """A fresh, unfitted surrogate of the named kind over a D = n_inputs dimensional unit cube."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known: {sorted(MODELS)}")
    return MODELS[name](n_inputs=n_inputs, seed=seed, **options)
