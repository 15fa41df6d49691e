"""Fixtures of the search tests: the exact-GP test double as a model the Optimizer accepts."""
from __future__ import annotations

import pytest

from spearmint_nn.models import MODELS
from spearmint_nn.search import settings as settings_module
from helpers.models import ExactGP


@pytest.fixture
def exact_gp(monkeypatch) -> str:
    """Register the exact-GP test double as model "exact" (a factory and an accepted name)."""
    monkeypatch.setitem(MODELS, "exact", lambda n_inputs, seed=None, **kw: ExactGP(n_inputs, lengthscales=(0.2, 0.35)))
    monkeypatch.setattr(settings_module, "MODEL_CHOICES", (*settings_module.MODEL_CHOICES, "exact"))
    return "exact"
