"""The early-stopping benchmark: its problems' curves, its compute accounting, and its JSON report
from a tiny run of every method."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from experiments.benchmarks import early_stopping
from experiments.benchmarks.functions import FUNCTIONS
from experiments.benchmarks.learning_curves import DIGITS_MLP, HARTMANN_CURVES, HARTMANN_NAMES
from experiments.benchmarks.stopping_methods import METHODS, OURS
from helpers.harness import harness_environment


def test_a_hartmann_curve_ends_at_hartmann6_and_is_the_same_for_the_same_point_and_seed():
    optimum = dict(zip(HARTMANN_NAMES, FUNCTIONS["hartmann6"].argmin))
    curve = list(HARTMANN_CURVES.train(optimum, seed=3))
    assert len(curve) == 50
    assert curve[-1] == pytest.approx(FUNCTIONS["hartmann6"].minimum, abs=1e-4)
    assert curve[0] > curve[-1] + 1.0  # it starts far above its end
    assert curve == list(HARTMANN_CURVES.train(optimum, seed=3))
    assert curve[:-1] != list(HARTMANN_CURVES.train(optimum, seed=4))[:-1]  # the noise is the seed's


def test_an_mlp_curve_is_the_same_however_its_epochs_interleave_with_another_job():
    pytest.importorskip("sklearn", reason="the digits data: pip install -r experiments/benchmarks/requirements.txt")
    small = {"learning_rate": 1e-2, "width": 16, "depth": 1, "dropout": 0.3, "weight_decay": 1e-4, "batch_size": 128}
    other = {**small, "width": 32, "dropout": 0.1}
    alone = [v for _, v in zip(range(3), DIGITS_MLP.train(small, seed=0))]
    a, b = DIGITS_MLP.train(small, seed=0), DIGITS_MLP.train(other, seed=0)
    mixed = []
    for _ in range(3):
        next(b)  # the other job's epoch draws from the global RNG in between
        mixed.append(next(a))
    assert mixed == alone
    assert alone[-1] < 0.5  # it learns: digits' chance error is 0.9


@pytest.mark.parametrize("workers", [1, 3])
def test_without_stopping_a_run_spends_exactly_its_jobs_and_with_it_never_more(workers):
    pytest.importorskip("optuna")
    jobs, epochs = 4, 6  # fewer jobs than the initial design: our proposals are Sobol points, fast
    plain = early_stopping.run_one("hartmann6-curves", "ours", 0, workers, jobs, epochs, 60.0)
    assert (plain["started"], plain["completed"], plain["compute"]) == (jobs, jobs, jobs * epochs)
    assert plain["end_time"] >= epochs * 60.0 * math.ceil(jobs / workers)  # epochs take their simulated time
    jobs = 10  # Optuna's successive halving prunes once a few trials reached its rungs
    for method in ("tpe-sh", "asha-random"):
        run = early_stopping.run_one("hartmann6-curves", method, 0, workers, jobs, epochs, 60.0, max_starts=50)
        assert run["started"] > jobs and run["compute"] <= jobs * epochs, method  # stopping bought more jobs
        assert jobs * epochs - run["compute"] < epochs * workers  # and left less than a job per worker unspent


@pytest.mark.slow
def test_a_tiny_run_of_every_method_accounts_compute_and_writes_its_report(tmp_path):
    pytest.importorskip("optuna")
    out = tmp_path / "es.json"
    jobs, epochs = 6, 5
    done = subprocess.run(
        [sys.executable, "-m", "experiments.benchmarks.early_stopping", "--jobs", str(jobs), "--epochs", str(epochs),
         "--seeds", "0", "--workers-in-flight", "1,3", "--json", str(out)],
        capture_output=True, text=True, timeout=300, env=harness_environment())
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert set(report) >= {"provenance", "machine", "arguments", "seeds_run", "summary", "runs"}
    assert "torch" in report["provenance"]["versions"]
    assert report["seeds_run"] == {"hartmann6-curves": [0]}
    runs = report["runs"]
    assert sorted((r["method"], r["workers"]) for r in runs) == sorted((m, w) for m in METHODS for w in (1, 3))
    for run in runs:
        assert run["compute"] <= jobs * epochs, run["method"]
        assert run["started"] <= 5 * jobs and run["capped"] == (run["started"] == 5 * jobs)  # --max-starts 5
        values = [step[2] for step in run["improvements"]]
        assert values == sorted(values, reverse=True) and len(set(values)) == len(values)  # improvements only
        assert all(step[0] <= run["compute"] for step in run["improvements"])
        if run["method"] != "asha-random":  # ASHA's paused jobs are neither complete nor stopped
            assert run["completed"] + run["stopped"] == run["started"]
        if run["method"] == "ours":  # no stopping: exactly the jobs, each every epoch
            assert (run["started"], run["completed"], run["stopped"]) == (jobs, jobs, 0)
            assert run["compute"] == jobs * epochs and run["improvements"][-1][0] <= jobs * epochs
    rows = report["summary"]["rows"]
    assert {(r["method"], r["workers"]) for r in rows} == {(m, w) for m in METHODS for w in (1, 3)}
    ours = [r for r in rows if r["method"] == "ours"]
    assert all(r["compute_to_target"] <= 1.0 and r["reached"] == 1 for r in ours)
    wins = report["summary"]["wins"]
    assert {(w["method"], w["against"]) for w in wins if w["workers"] == 1} == \
        {(m, o) for m in OURS for o in METHODS if o != m}
    assert all(sum(w[share]) == 1 for w in wins for share in early_stopping.SHARE_NAMES)
    assert "compute to target" in done.stdout and "wins-ties-losses" in done.stdout


def test_best_by_and_first_reach_read_the_steps_of_the_best():
    run = {"improvements": [[50, 100.0, -1.0], [120, 200.0, -2.0], [300, 700.0, -2.5]], "budget": 300}
    assert early_stopping.best_by(run, 49, 0) == math.inf
    assert early_stopping.best_by(run, 120, 0) == -2.0
    assert early_stopping.best_by(run, 699.0, 1) == -2.0
    assert early_stopping.first_reach(run, -2.2, 0) == 300
    assert early_stopping.first_reach(run, -3.0, 1) == math.inf
    assert np.isfinite(early_stopping.first_reach(run, -1.0, 1))
