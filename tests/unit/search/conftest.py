"""Fixtures of the search tests: the exact-GP test double as a model the Optimizer accepts."""
from __future__ import annotations

import dataclasses

import pytest

from spearmint_nn.models import MODELS
from spearmint_nn.problem.parsers import choice
from spearmint_nn.problem.settings import MODEL_CHOICES
from spearmint_nn.problem.settings import SearchSettings
from helpers.models import ExactGP


@pytest.fixture
def exact_gp(monkeypatch) -> str:
    """Register the exact-GP test double as model "exact" (a factory and an accepted name)."""
    monkeypatch.setitem(MODELS, "exact", lambda n_inputs, seed=None, **kw: ExactGP(n_inputs, lengthscales=(0.2, 0.35)))
    model = next(spec for spec in dataclasses.fields(SearchSettings) if spec.name == "model")
    monkeypatch.setattr(model, "metadata", {**model.metadata, "parse": choice(*MODEL_CHOICES, "exact")})
    return "exact"
