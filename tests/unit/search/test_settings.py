"""The search's settings and its seams: SearchSettings checks every field and names it, the
Optimizer takes a Space and settings (or keywords for them), propose's Suggestion carries what
the daemon logs, and the ModelStore keeps the models' states and the auto switch."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from spearmint_nn.errors import ConfigError
from spearmint_nn.search.arguments import Tasks
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.persistence import AUTO_STATE_FILE, ModelStore
from spearmint_nn.search.settings import SearchSettings
from spearmint_nn.search.space import Space

torch.set_num_threads(1)

SQUARE = {"x": {"type": "FLOAT", "min": 0, "max": 1}, "y": {"type": "FLOAT", "min": 0, "max": 1}}
QUICK_GP = {"n_samples": 2, "burn_in": 2, "sweeps_per_fit": 1}


def bowl(p) -> float:
    return float((p["x"][0] - 0.3) ** 2 + (p["y"][0] - 0.6) ** 2)


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


# ---- the Optimizer's construction -----------------------------------------------------------------

def test_the_optimizer_takes_a_space_and_settings_or_keywords_for_them():
    space = Space.from_config(SQUARE)
    settings = SearchSettings(model="sobol", seed=3)
    opt = Optimizer(space, settings)
    assert opt.space is space and opt.settings is settings
    by_keywords = Optimizer(SQUARE, model="sobol", seed=3)
    assert np.array_equal(space.encode(by_keywords.suggest(4)), space.encode(opt.suggest(4)))
    with pytest.raises(TypeError):
        Optimizer(space, settings, seed=4)  # settings or keywords, not both
    with pytest.raises(TypeError):
        Optimizer(space, modle="gp")  # not a setting
    with pytest.raises(TypeError):
        Optimizer(space, state=ModelStore("a"), state_dir="b")


def test_set_budget_replaces_the_setting_and_checks_it():
    opt = Optimizer(SQUARE, model="sobol")
    opt.set_budget(30)
    assert opt.settings.budget == 30 and opt.models.settings is opt.settings  # passed on to the models
    with pytest.raises(ConfigError, match="^budget:"):
        opt.set_budget(0)
    assert opt.settings.budget == 30


# ---- propose's Suggestion --------------------------------------------------------------------------

def test_propose_tells_when_it_refitted_and_suggest_returns_its_points():
    opt = Optimizer(SQUARE, model="gp", seed=0, initial_design=3, model_options=QUICK_GP)
    design = opt.propose(3)
    assert len(design.points) == 3 and design.refit_seconds is None and design.warpings is None
    assert design.n_observed == 0 and design.segment_start == 0 and design.predicted_durations == [None] * 3
    for p in design.points:
        opt.observe(p, bowl(p))
    first = opt.propose(1)
    assert first.refit_seconds is not None and first.refit_seconds == opt.last_fit_seconds
    assert first.warpings == opt.warpings and first.warpings["columns"] == [0, 1]
    assert first.seconds == opt.last_suggest_seconds >= first.refit_seconds
    again = opt.propose(1)  # nothing new observed: no refit, no new warpings
    assert again.refit_seconds is None and again.warpings is None and again.n_observed == 3
    twin = Optimizer(SQUARE, model="gp", seed=0, initial_design=3, model_options=QUICK_GP)
    assert np.array_equal(opt.space.encode(twin.suggest(3)), opt.space.encode(design.points))


# ---- the ModelStore --------------------------------------------------------------------------------

def test_the_model_store_keeps_the_auto_switch(tmp_path):
    store = ModelStore(tmp_path / "model")
    assert store.auto_choice() == "gp"  # nothing recorded (the folder does not exist yet)
    store.record_auto_switch(n_observed=200, n_in_flight=3)
    assert json.loads((tmp_path / "model" / AUTO_STATE_FILE).read_text()) == {
        "model": "dngo", "observations": 200, "in_flight": 3}
    assert ModelStore(tmp_path / "model").auto_choice() == "dngo"
    (tmp_path / "model" / AUTO_STATE_FILE).write_text("[1, 2]")  # unreadable: the GP, as at the start
    assert store.auto_choice() == "gp"


def test_the_model_store_saves_and_restores_a_model_by_name(tmp_path):
    from spearmint_nn.models.gp import GP

    X = torch.rand(6, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    gp = GP(n_inputs=2, seed=0, n_samples=2, burn_in=2, sweeps_per_fit=1)
    gp.fit(X, X.sum(dim=1) - 1.0)
    store = ModelStore(tmp_path / "model")
    store.save("objective", gp)
    restored = store.restore("objective", GP(n_inputs=2, seed=1, n_samples=2), 2)
    assert torch.equal(restored.chains, gp.chains)
    fresh = GP(n_inputs=2, n_samples=2)
    assert store.restore("constraint-c", fresh, 2) is fresh and fresh.chains is None  # nothing saved


def test_the_warpings_report_lies_in_the_objective_models_folder(tmp_path):
    from spearmint_nn.experiment.layout import ExperimentPaths
    from spearmint_nn.search.persistence import OBJECTIVE_MODEL

    paths = ExperimentPaths(tmp_path)
    assert paths.warpings.parent == paths.model / OBJECTIVE_MODEL
