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


def test_every_config_key_is_a_keyword_of_the_optimizer_or_says_where_it_belongs():
    """The Optimizer speaks config.json: each key in Python spelling is a search setting, one of
    the Optimizer's own arguments, or a key of the daemon whose ConfigError says where it goes."""
    from spearmint_nn.experiment.config import KEYS
    from spearmint_nn.problem.settings import DAEMON_KEYWORDS, KEYWORDS, python_spelling

    spelt = {python_spelling(key) for key in KEYS}
    assert spelt - KEYWORDS == set(DAEMON_KEYWORDS)
    assert not set(DAEMON_KEYWORDS) & KEYWORDS


def test_config_keys_spelt_in_python_set_the_same_settings():
    by_key = SearchSettings.from_keywords(max_finished_jobs=30, likelihood="noiseless", initial_design=4.0,
                                          tasks={"loss": "OBJECTIVE", "mem": "CONSTRAINT"})
    assert by_key.budget == 30 and by_key.initial_design == 4
    assert by_key.tasks == Tasks(objective="loss", constraints=("mem",),
                                 likelihoods={"loss": "NOISELESS", "mem": "NOISELESS"})
    # likelihoods over the one likelihood of every task, as a task's own over config.json's
    mixed = SearchSettings.from_keywords(likelihoods={"mem": "GAUSSIAN"}, likelihood="NOISELESS",
                                         tasks={"loss": "OBJECTIVE", "mem": "CONSTRAINT"})
    assert mixed.tasks.likelihoods == {"loss": "NOISELESS", "mem": "GAUSSIAN"}


@pytest.mark.parametrize("keywords, message", [
    ({"modle": "gp"}, "modle: not a keyword of the Optimizer (did you mean 'model'?)"),
    ({"max_concurrent": 4}, "max_concurrent: a setting of the daemon (spearmint-nn run), not of the search: in "
                            "ask/tell, you choose how many points are in flight (suggest(n) and what you have not "
                            "observed yet)"),
    ({"budget": 3, "max_finished_jobs": 4}, "max_finished_jobs: the same setting as budget, given too; keep one"),
    ({"likelihood": "loud"}, "likelihood: must be one of"),
])
def test_a_keyword_that_is_no_setting_is_a_config_error_naming_it(keywords, message):
    with pytest.raises(ConfigError) as caught:
        SearchSettings.from_keywords(**keywords)
    assert str(caught.value).startswith(message), str(caught.value)
