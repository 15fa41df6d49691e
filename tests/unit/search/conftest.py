"""Fixtures of the search tests: the exact-GP test double as a model the Optimizer accepts."""
from __future__ import annotations

import dataclasses

import pytest

from spearmint_nn.models import MODEL_SPECS, ModelSpec
from spearmint_nn.problem.parsers import choice
from spearmint_nn.problem.settings import MODEL_CHOICES, SearchSettings
from helpers.models import ExactGP


@pytest.fixture
def exact_gp(monkeypatch) -> str:
    """Register the exact-GP test double as model "exact" (a factory and an accepted name)."""
    factory = lambda n_inputs, seed=None, **kw: ExactGP(n_inputs, lengthscales=(0.2, 0.35))
    # Told the options of the "dngo" family: the columns to warp, which it ignores.
    monkeypatch.setitem(MODEL_SPECS, "exact", ModelSpec("exact", factory, family="dngo", takes_related=False, warps=False))
    model = next(spec for spec in dataclasses.fields(SearchSettings) if spec.name == "model")
    monkeypatch.setattr(model, "metadata", {**model.metadata, "parse": choice(*MODEL_CHOICES, "exact")})
    return "exact"
