"""The model protocols and the one state convention: every model hands out a state_dict that a
fresh model of its kind loads in place, through a weights-only file, predicting exactly as before."""
from __future__ import annotations

import math

import pytest
import torch

from spearmint_nn.models import make_model
from spearmint_nn.models.base import ConstraintModel, DurationPredictor, Surrogate
from spearmint_nn.models.classifier import ConstraintClassifier
from spearmint_nn.models.constraint_value import ConstraintValueModel
from spearmint_nn.models.duration import DurationModel
from spearmint_nn.models.standardise import Standardisation
from spearmint_nn.search import model_store

torch.set_num_threads(1)
DT = torch.float64
QUICK = {"dngo": {"n_samples": 3, "burn_in": 2, "lbfgs_steps": 30, "lbfgs_warm_steps": 10},
         "gp": {"n_samples": 3, "burn_in": 2, "sweeps_per_fit": 1}}


def data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    X = torch.rand(n, 2, generator=torch.Generator().manual_seed(seed), dtype=DT)
    return X, torch.sin(4 * X[:, 0]) + X[:, 1] ** 2 - 0.6


def test_every_model_implements_its_protocol() -> None:
    for name in ("dngo", "dngo-warp", "gp", "gp-nowarp"):
        assert isinstance(make_model(name, 2, seed=0), Surrogate)
    assert isinstance(ConstraintClassifier(2), ConstraintModel)
    assert isinstance(ConstraintValueModel(make_model("gp", 2), 2), ConstraintModel)
    assert isinstance(DurationModel(), DurationPredictor)


@pytest.mark.parametrize("kind", ["dngo", "gp"])
def test_a_value_model_round_trips_through_a_weights_only_file_and_fantasizes_its_own_kind(kind, tmp_path) -> None:
    X, c = data(10)
    model = ConstraintValueModel(make_model(kind, 2, seed=0, **QUICK[kind]), 2)
    model.fit(X, 30.0 * c)
    model_store.save_state(tmp_path, model)
    restored = model_store.restore_state(tmp_path, ConstraintValueModel(make_model(kind, 2, seed=1, **QUICK[kind]), 2), 2)
    X_test = torch.rand(7, 2, generator=torch.Generator().manual_seed(1), dtype=DT)
    assert restored.threshold == model.threshold
    assert torch.equal(restored.probability(X_test), model.probability(X_test))
    fantasy = model.fantasize(X_test[:2], 4, torch.Generator().manual_seed(0))
    assert isinstance(fantasy, ConstraintValueModel) and isinstance(fantasy.surrogate, type(model.surrogate))
    assert fantasy.probability(X_test).shape == (4 * 3, 7)


def test_a_duration_model_round_trips() -> None:
    X, _ = data(8)
    model = DurationModel(seed=0)
    model.fit(X, 2.0 + X[:, 0])
    restored = DurationModel(seed=1)
    restored.load_state_dict(model.state_dict())
    X_test = torch.rand(5, 2, generator=torch.Generator().manual_seed(2), dtype=DT)
    assert torch.equal(restored.predict(X_test), model.predict(X_test))


def test_a_state_of_another_kind_or_search_space_restores_a_fresh_model(tmp_path, caplog) -> None:
    X, y = data(8)
    gp = make_model("gp", 2, seed=0, **QUICK["gp"])
    gp.fit(X, y)
    model_store.save_state(tmp_path, gp)
    with caplog.at_level("WARNING", logger="spearmint_nn"):
        dngo = model_store.restore_state(tmp_path, make_model("dngo", 2, seed=0), 2)
        assert dngo.state is None and "not of a 'DNGO' model" in caplog.text
        assert model_store.restore_state(tmp_path, make_model("gp", 3, seed=0), 3).chains is None
    assert "another search space" in caplog.text


@pytest.mark.parametrize("values", [[1.0, 2.0, 4.5, -3.25], [2.0, 2.0, 2.0], [7.5], [1e-13, 0.0]])
def test_the_standardisation_is_each_models_original_arithmetic(values: list[float]) -> None:
    v = torch.tensor(values, dtype=DT)
    # ConstraintValueModel: N in the denominator, floor 1e-12.
    if len(v) > 1:
        mean, std = float(v.mean()), float(v.std(unbiased=False))
        std = std if std > 1e-12 else 1.0
        value = Standardisation.fit(v, unbiased=False, min_std=1e-12)
        assert (value.mean, value.std) == (mean, std)
        assert torch.equal(value(v), (v - mean) / std)
    # DurationModel: N - 1 in the denominator (0 for one value), floor 1e-9.
    centre = float(v.mean())
    spread = float(v.std()) if len(v) > 1 else 0.0
    scale = spread if spread > 1e-9 else 1.0
    duration = Standardisation.fit(v, unbiased=True, min_std=1e-9)
    assert (duration.mean, duration.std) == (centre, scale)
    z = torch.tensor([0.5, -1.0], dtype=DT)
    assert torch.equal(duration.untransform(z), centre + scale * z)
    assert not any(math.isnan(x) for x in duration(v).tolist())
