"""SearchSettings checks every field and names it in its error, and keeps it frozen and normalised."""
from __future__ import annotations

import dataclasses

import pytest

from spearmint_nn.errors import ConfigError
from spearmint_nn.problem.settings import SearchSettings
from spearmint_nn.problem.tasks import Tasks


# ---- SearchSettings --------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [
    ("model", "gp-warp"), ("seed", -1), ("acquisition", "ucb"), ("acquisition_options", [1]),
    ("initial_design", 1.5), ("fantasies", 0), ("thompson_every", -1), ("crowding_share", 1.5),
    ("tasks", {"c": "CONSTRAINT"}),
    ("direction", "up"), ("n_candidates", 0), ("model_options", "fast"), ("kernel", "matern32"),
    ("constraint_model", "regression"), ("output_transform", "box-cox"), ("budget", 0),
    ("restart_after", None), ("torch_threads", 0),
])
def test_a_wrong_setting_is_a_config_error_naming_its_field(field, value):
    with pytest.raises(ConfigError) as error:
        SearchSettings(**{field: value})
    assert error.value.path == field, str(error.value)


def test_a_wrong_choice_lists_the_names_and_suggests_the_closest():
    with pytest.raises(ConfigError, match=r"^kernel: must be one of matern52, squared-exponential "
                                          r"\(got 'matern32'\) \(did you mean 'matern52'\?\)$"):
        SearchSettings(kernel="matern32")


def test_settings_are_frozen_and_normalised():
    settings = SearchSettings(direction="MAXIMIZE", tasks={"f": "OBJECTIVE", "c": {"type": "CONSTRAINT"}},
                              model_options={"n_samples": 4})
    assert settings.direction == "maximize" and settings.sign == -1.0
    assert settings.tasks == Tasks(objective="f", constraints=("c",), likelihoods={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.model = "gp"  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.model_options["n_samples"] = 5  # type: ignore[index]
    assert SearchSettings().tasks == Tasks(objective="main", constraints=(), likelihoods={})
