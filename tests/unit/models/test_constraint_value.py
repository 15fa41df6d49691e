"""P(c(x) >= 0) from a regression model of an explicit constraint's value."""
from __future__ import annotations

import pytest
import torch

from spearmint_nn.models import make_model
from spearmint_nn.models.constraint_value import ConstraintValueModel

torch.set_num_threads(1)


def constraint(X: torch.Tensor) -> torch.Tensor:
    """Satisfied (>= 0) above the diagonal x2 = x1, in units unlike the standardised ones."""
    return 40.0 * (X[:, 1] - X[:, 0]) + 3.0


@pytest.fixture(scope="module")
def fitted() -> ConstraintValueModel:
    X = torch.rand(8, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    model = ConstraintValueModel(make_model("dngo", 2, seed=0), 2)
    model.fit(X, constraint(X))
    return model


def test_eight_values_place_the_boundary(fitted: ConstraintValueModel) -> None:
    # far on either side of the boundary the predictive is sure; on it, it hedges
    X = torch.tensor([[0.1, 0.9], [0.0, 0.6], [0.9, 0.1], [0.6, 0.0], [0.5, 0.5 - 3.0 / 40.0]], dtype=torch.float64)
    with torch.no_grad():
        p = fitted.probability(X).mean(0)
    assert float(p[:2].min()) > 0.9
    assert float(p[2:4].max()) < 0.1
    assert 0.05 < float(p[4]) < 0.95


def test_rows_are_hyperparameter_samples_and_fantasies(fitted: ConstraintValueModel) -> None:
    X = torch.rand(5, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    p = fitted.probability(X)
    n_samples = p.shape[0]
    assert p.shape == (n_samples, 5) and n_samples > 1
    assert bool(((p >= 0) & (p <= 1)).all())
    fantasy = fitted.fantasize(X[:2], 4, torch.Generator().manual_seed(0))
    assert fantasy.probability(X).shape == (4 * n_samples, 5)


def test_probability_gradient_matches_finite_differences(fitted: ConstraintValueModel) -> None:
    X = torch.rand(3, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(fitted.probability, (X,), eps=1e-6, atol=1e-6)


def test_fewer_than_two_values_are_rejected() -> None:
    model = ConstraintValueModel(make_model("dngo", 2, seed=0), 2)
    with pytest.raises(ValueError):
        model.fit(torch.rand(1, 2, dtype=torch.float64), torch.tensor([1.0]))
