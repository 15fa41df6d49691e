"""Surrogate models by name: the config's ``model`` key -> a :class:`ModelSpec`, which holds the
model's factory and says what kind of model it is.

A factory is called as ``factory(n_inputs=D, seed=seed, **options)`` and returns a
:class:`~spearmint_nn.models.base.Surrogate`. Model modules are imported only when their model
is asked for, so a model with heavy or optional dependencies costs nothing to the others, and
this module imports no torch: what the registry says about each model can be read by the
torch-free code that checks a configuration.
Adding a model is one entry in :data:`MODEL_SPECS`; every list of names below derives from it.
What a model can do beyond a surrogate's protocol (draw joint paths, absorb results without
training, report warps) is said by the capability protocols of :mod:`spearmint_nn.models.base`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Literal

if TYPE_CHECKING:
    from .base import Surrogate

ModelFactory = Callable[..., "Surrogate"]

#: The two kinds of surrogate. A "gp" model takes the objective's likelihood (``noiseless=True``
#: for NOISELESS), the correlation function (``kernel=``) and the arc kernel of a conditional
#: space (``conditional=``). A "dngo" model takes none of them: it has no fixed-noise mode, one
#: basis, and it reads a conditional space through the encoding (indicator plus neutral value).
#: Every model takes the columns worth warping (``warped_columns=``, a boolean mask over the
#: encoded columns), which a model that does not warp ignores.
Family = Literal["gp", "dngo"]


@dataclass(frozen=True)
class ModelSpec:
    """One model of the objective, as the search chooses and builds it.

    Attributes
    ----------
    name : the config's ``model`` value.
    factory : builds a fresh, unfitted model (see the module docstring).
    family : which options it takes (:data:`Family`).
    takes_related : related searches make it a multi-task GP
        (:class:`~spearmint_nn.models.multitask_gp.MultiTaskGP`) over this search and theirs.
    warps : it learns a warp of its inputs, and so does the multi-task GP made for it.
    """

    name: str
    factory: ModelFactory
    family: Family
    takes_related: bool
    warps: bool


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


#: Every model of the objective by name, in the order of ``spearmint_nn.problem.settings.SURROGATES``.
MODEL_SPECS: dict[str, ModelSpec] = {spec.name: spec for spec in (
    ModelSpec("dngo", _dngo, family="dngo", takes_related=False, warps=False),
    ModelSpec("dngo-warp", _dngo_with_warping, family="dngo", takes_related=False, warps=True),
    ModelSpec("gp", _gp, family="gp", takes_related=True, warps=True),
    ModelSpec("gp-nowarp", _gp_without_warping, family="gp", takes_related=True, warps=False),
)}

#: Name -> factory, read-only: a model is added to :data:`MODEL_SPECS`, which ``make_model`` reads.
MODELS: Mapping[str, ModelFactory] = MappingProxyType({name: spec.factory for name, spec in MODEL_SPECS.items()})

#: The models of the "gp" family (:data:`Family`).
GP_MODELS = frozenset(name for name, spec in MODEL_SPECS.items() if spec.family == "gp")

#: The models that take related searches, in registry order.
RELATED_MODELS = tuple(name for name, spec in MODEL_SPECS.items() if spec.takes_related)


def make_model(name: str, n_inputs: int, seed: int | None = None, **options: Any) -> Surrogate:
    """A fresh, unfitted surrogate of the named kind over a D = n_inputs dimensional unit cube."""
    if name not in MODEL_SPECS:
        raise ValueError(f"unknown model {name!r}; known: {sorted(MODEL_SPECS)}")
    return MODEL_SPECS[name].factory(n_inputs=n_inputs, seed=seed, **options)
