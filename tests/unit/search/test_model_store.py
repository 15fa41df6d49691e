"""The ModelStore keeps the models' states, the auto switch and the warpings report."""
from __future__ import annotations

import json

import torch

from spearmint_nn.search.model_store import AUTO_STATE_FILE, ModelStore

torch.set_num_threads(1)


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
    from spearmint_nn.search.model_store import OBJECTIVE_MODEL

    paths = ExperimentPaths(tmp_path)
    assert paths.warpings.parent == paths.model / OBJECTIVE_MODEL
