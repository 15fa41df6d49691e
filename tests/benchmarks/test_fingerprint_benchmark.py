"""benchmarks.fingerprint covers the search with early stopping off: its cases' configs have no
``early-stopping`` key (so the fingerprint compared before and after a change is that of the
search as it was before the key existed), and the key itself changes no proposal while no job
is stopped (the daemon's optimizer sees stopped jobs only as pending points)."""
from __future__ import annotations

import json

import pytest

from spearmint_nn.benchmarks import fingerprint
from spearmint_nn.experiment.config import load_config

STOPPING = {"early-stopping": {"rule": "median", "min-steps": 2}}


@pytest.mark.parametrize("name", sorted(fingerprint.CASES))
def test_every_case_runs_with_early_stopping_off(tmp_path, name):
    keys, problem, evals, _ = fingerprint.CASES[name]
    (tmp_path / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
    (tmp_path / "config.json").write_text(json.dumps({"experiment-name": name, "main-file": "wrapper.py",
                                                      "variables": problem.variables, "max-finished-jobs": evals,
                                                      **keys}))
    assert load_config(tmp_path).early_stopping is None


@pytest.mark.parametrize("name", ["sobol-batch", pytest.param("gp-sequential", marks=pytest.mark.slow)])
def test_the_early_stopping_key_changes_no_proposal(name):
    assert fingerprint.run_case(name, STOPPING) == fingerprint.run_case(name)
