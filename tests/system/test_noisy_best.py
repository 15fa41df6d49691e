"""A noisy objective's best as Spearmint reported it, written by a real daemon: the evaluated point
with the lowest posterior mean, beside the luckiest draw, over every result at the end."""
from __future__ import annotations

import json

import pytest

from helpers.experiments import all_jobs, cli, quick_config

NOISY_WRAPPER = """
import numpy as np

def main(job_id, params):
    x, y = float(params["x"]), float(params["y"])
    noise = np.random.default_rng(job_id).normal(0.0, 5.0)
    return (x - 2.0) ** 2 + (y - 7.0) ** 2 / 10.0 + noise
"""


@pytest.mark.slow
def test_best_json_and_status_carry_the_models_best_over_every_result(make_experiment):
    # 10 jobs: the least the model's best is shown after (model_best_min_jobs)
    config = quick_config(**{"model": "gp", "likelihood": "GAUSSIAN", "max-finished-jobs": 10, "initial-design": 4})
    folder = make_experiment(config, files={"wrapper.py": NOISY_WRAPPER})
    result = cli("run", folder, timeout=300)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    best = json.loads((folder / ".spearmint" / "best.json").read_text())
    model_best = best["model_best"]
    assert model_best["observations"] == 10
    assert jobs[model_best["id"]][0] == "complete"
    assert model_best["params"] == jobs[model_best["id"]][1]["params"]
    assert model_best["value"] == jobs[model_best["id"]][1]["value"]
    assert model_best["std"] > 0 and abs(model_best["mean"]) < 1e3
    assert best["value"] == min(job["value"] for _, job in jobs.values())
    status = cli("status", folder).stdout
    assert f"best by the model's posterior mean: main = {model_best['mean']:.6g}" in status
    assert f"(job {model_best['id']};" in status
    assert json.loads(cli("status", folder, "--json").stdout)["model_best"]["id"] == model_best["id"]


@pytest.mark.slow
def test_a_noiseless_objective_has_no_model_best(make_experiment):
    folder = make_experiment(quick_config(**{"likelihood": "NOISELESS", "model": "gp", "max-finished-jobs": 5}))
    assert cli("run", folder, timeout=300).returncode == 0
    assert "model_best" not in json.loads((folder / ".spearmint" / "best.json").read_text())
