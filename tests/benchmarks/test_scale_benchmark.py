"""The scale benchmark's reference points: measured through the parallel benchmark's methods, with
the same steps as ours, and shown as ratios to DNGO."""
import importlib.util

import pytest

from experiments.benchmarks.scale import measure_point, table

HAVE_OPTUNA = importlib.util.find_spec("optuna") is not None


def point(model, n, j, cpu, rss=400.0):
    return {"model": model, "n": n, "pending": j, "suggest_s": cpu, "suggest_cpu_s": cpu, "fit_s": 0.5 * cpu,
            "acquisition_s": 0.5 * cpu, "peak_rss_mib": rss, "cold_suggest_s": 2 * cpu}


def test_every_other_method_gets_its_own_ratio_columns():
    results = [point("dngo", 2000, 100, 1.5), point("optuna-gp", 2000, 100, 30.0, 800.0),
               {"model": "botorch-qlognei", "n": 2000, "pending": 100, "timeout": True, "limit_s": 300}]
    text = table(results)
    assert "optuna-gp / DNGO time" in text and "botorch-qlognei / DNGO time" in text
    row = text.splitlines()[2]
    assert "20.0 (CPU)" in row and "2.00" in row and "did not finish in 300 s" in row


def test_the_ratios_are_to_the_first_model_run():
    text = table([point("gp", 100, 0, 40.0), point("botorch-qlognei", 100, 0, 20.0), point("gp", 200, 0, 80.0)])
    assert "botorch-qlognei / gp time" in text
    rows = text.splitlines()[2:]
    assert len(rows) == 2 and rows[0].startswith("| 100 | 0 | 40.00") and "0.5 (CPU)" in rows[0]
    assert rows[1].startswith("| 200 | 0 | 80.00") and rows[1].endswith("| |")


def test_a_point_observes_the_problem_asked_for():
    measured = measure_point("gp", 8, 2, batch=2, problem_name="branin")
    assert measured["problem"] == "branin" and measured["batch"] == 2 and measured["suggest_s"] > 0
    # the cold proposal is not left pending: the measured call sees exactly J = 2 running jobs
    assert measured["pending"] == 2 and measured["own_pending"] == 0
    # it follows a round of B = 2 results (the cold point's among them), so the GP refits
    assert measured["new_results"] == 2 and measured["fit_s"] > 0


def test_a_batch_as_large_as_the_history_follows_half_of_it():
    measured = measure_point("gp", 6, 0, batch=10, problem_name="branin")
    assert measured["new_results"] == 3 and measured["pending"] == 0 and measured["own_pending"] == 0


@pytest.mark.skipif(not HAVE_OPTUNA, reason="needs the harness's references: pip install -r experiments/benchmarks/requirements.txt")
def test_a_reference_point_runs_the_same_steps_with_its_jobs_running():
    measured = measure_point("optuna-gp", 20, 4)
    assert measured["model"] == "optuna-gp" and measured["n"] == 20 and measured["pending"] == 4
    assert measured["suggest_s"] > 0 and measured["peak_rss_mib"] > 0
