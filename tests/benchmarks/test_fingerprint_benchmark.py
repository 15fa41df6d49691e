"""benchmarks.fingerprint covers the search with early stopping off: its cases' configs have no
``early-stopping`` key (so the fingerprint compared before and after a change is that of the
search as it was before the key existed), and the key itself changes no proposal while no job
is stopped (the daemon's optimizer sees stopped jobs only as pending points)."""
from __future__ import annotations

import json

import pytest

from experiments.benchmarks import fingerprint
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


@pytest.mark.slow
def test_the_daemon_case_ends_jobs_in_every_way():
    """The daemon case keeps covering each way a job ends, so that its fingerprint would show a
    change to any of them: a failure held back until the first success, a crash of its point,
    an early stop with a predicted value, a second attempt after a checkpoint, a late result."""
    jobs = {job["id"]: job for job in fingerprint.run_daemon_case()}
    assert len(jobs) == fingerprint.DAEMON_JOBS
    assert (jobs[1]["state"], jobs[1]["failure"], jobs[2]["state"]) == ("failed", "exception", "complete")
    assert any(job["failure"] == "exception" for i, job in jobs.items() if i > 2)
    assert (jobs[3]["state"], jobs[3]["attempts"]) == ("complete", ["checkpointed", "ok"])
    assert (jobs[5]["state"], jobs[5]["late"]) == ("complete", "no_result")
    stopped = [job for job in jobs.values() if job["state"] == "stopped"]
    assert stopped and all(job["stopped_step"] == 4 and job["predicted_values"] for job in stopped)
