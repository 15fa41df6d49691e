"""What each model says about itself: the registry's specs, from which every list of model names
derives, and the optional capabilities, which each model class declares and ``isinstance`` reads."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from spearmint_nn.models import GP_MODELS, MODEL_SPECS, MODELS, RELATED_MODELS, make_model
from spearmint_nn.models.base import Conditionable, MultiTask, PathSampler, Surrogate, Warped
from spearmint_nn.models.classifier import ConstraintClassifier
from spearmint_nn.models.constraint_value import ConstraintValueModel
from spearmint_nn.models.dngo import DNGO
from spearmint_nn.models.duration import DurationModel
from spearmint_nn.models.gp import GP
from spearmint_nn.models.gp_posterior import ConditionedGP
from spearmint_nn.models.multitask_gp import MultiTaskGP
from spearmint_nn.problem.settings import SURROGATES

CAPABILITIES = (Conditionable, MultiTask, PathSampler, Warped)
FAMILY_CLASSES = {"gp": GP, "dngo": DNGO}


def capabilities(model: object) -> set[type]:
    return {capability for capability in CAPABILITIES if isinstance(model, capability)}


@pytest.mark.parametrize("model, expected", [
    (GP(n_inputs=2), {PathSampler, Warped}),
    (DNGO(n_inputs=2), {Conditionable, PathSampler, Warped}),
    # Its joint draws stay private: a batch over related searches is chosen by fantasies.
    (MultiTaskGP(), {MultiTask}),
], ids=["GP", "DNGO", "MultiTaskGP"])
def test_each_surrogate_has_exactly_the_capabilities_its_class_declares(model, expected) -> None:
    assert isinstance(model, Surrogate)
    assert capabilities(model) == expected
    declared = {capability for capability in CAPABILITIES if capability in type(model).__mro__}
    assert declared == expected


@pytest.mark.parametrize("model", [ConstraintClassifier(2), ConstraintValueModel(GP(n_inputs=2), 2), DurationModel()],
                         ids=["classifier", "value", "duration"])
def test_the_other_models_have_no_surrogate_capability(model) -> None:
    assert capabilities(model) == set()


def test_a_capability_is_read_from_the_method_so_a_test_double_has_it_too() -> None:
    class Draws:
        def sample_paths(self, X: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
            return torch.zeros(n, len(X))

    assert capabilities(Draws()) == {PathSampler}


def test_both_gps_share_one_conditioned_posterior() -> None:
    for cls in (GP, MultiTaskGP):
        assert issubclass(cls, ConditionedGP)
        for method in ("posterior", "fantasize", "sample_f", "fantasy_values"):
            assert method not in vars(cls), f"{cls.__name__} redefines {method}"


def test_the_registry_holds_every_surrogate_name_in_order_and_the_lists_derive_from_it() -> None:
    assert tuple(MODEL_SPECS) == SURROGATES
    assert all(spec.name == name for name, spec in MODEL_SPECS.items())
    assert MODELS == {name: spec.factory for name, spec in MODEL_SPECS.items()}
    assert GP_MODELS == {"gp", "gp-nowarp"}
    assert RELATED_MODELS == ("gp", "gp-nowarp")
    with pytest.raises(TypeError):  # a model is added as a spec, so that every list sees it
        MODELS["other"] = MODELS["gp"]  # type: ignore[index]


@pytest.mark.parametrize("name", SURROGATES)
def test_each_spec_describes_the_model_its_factory_makes(name) -> None:
    spec = MODEL_SPECS[name]
    model = make_model(name, 3, seed=0)
    assert type(model) is FAMILY_CLASSES[spec.family]
    warps = model.warping if isinstance(model, GP) else bool(model.net.warped_columns)
    assert warps == spec.warps


def test_an_unknown_model_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown model 'GP'.*'gp-nowarp'"):
        make_model("GP", 2)


def test_the_registry_is_read_without_importing_torch() -> None:
    # A configuration is checked in job processes and read-only commands, which must not pay for torch.
    code = ("import sys; from spearmint_nn.models import MODEL_SPECS, RELATED_MODELS; "
            "assert RELATED_MODELS and 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
