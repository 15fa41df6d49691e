"""A run's summary answers every table exactly as its full trace does."""
from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.benchmarks.checkpoints import best_after, best_at_time, main, summarise_run
from experiments.benchmarks.parallel import summarise


def _async_run(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    values = rng.normal(size=300).tolist()
    values[7] = float("nan")  # a failed evaluation
    return {"problem": "p", "method": "m", "seed": seed, "mode": "async", "workers": 20, "job_seconds": 5.0,
            "values": values, "finish_times": np.sort(rng.uniform(0, 100, 300)).tolist(),
            "propose_seconds": rng.uniform(0, 2, 40).tolist(), "proposed": [7] * 40, "idle_share": 0.03,
            "elapsed_s": 101.0}


def test_the_best_after_any_count_and_at_any_time_is_the_full_traces():
    run = _async_run(0)
    summary = summarise_run(run)
    assert "values" not in summary and summary["evals"] == 300 and summary["idle_share"] == 0.03
    assert len(json.dumps(summary)) < len(json.dumps(run)) / 5
    values, times = np.array(run["values"]), np.array(run["finish_times"])
    for n in range(1, 301):
        assert best_after(summary, n) == np.nanmin(values[:n])
    for t in np.linspace(-1, 101, 500):
        done = values[times <= t]
        assert best_at_time(summary, t) == (np.nanmin(done) if len(done) else np.inf)
    assert summary["proposals"]["calls"] == 40 and summary["proposals"]["points"] == 280
    assert summary["proposals"]["max_points"] == 7
    # measured seconds kept to 4 significant digits
    assert summary["proposals"]["first_calls"] == [[pytest.approx(s, rel=5e-4), 7] for s in run["propose_seconds"][:10]]
    assert all(len(f"{s:g}".replace(".", "").lstrip("0")) <= 4 for s, _ in summary["proposals"]["first_calls"])
    assert summary["proposals"]["total_s"] == pytest.approx(sum(run["propose_seconds"]), rel=5e-4)
    assert summarise_run(summary) is summary


def test_a_batch_runs_calls_propose_for_every_worker_until_the_budget_is_filled():
    run = {"problem": "p", "method": "m", "seed": 0, "mode": "batch", "workers": 50, "values": [1.0] * 120,
           "propose_seconds": [2.0, 3.0]}
    proposals = summarise_run(run)["proposals"]
    assert (proposals["points"], proposals["max_points"]) == (70, 50)
    assert proposals["first_calls"] == [[2.0, 50], [3.0, 20]]


def test_a_table_from_summaries_equals_the_table_from_the_runs():
    runs = [_async_run(seed) for seed in range(5)]
    assert summarise(runs, [20, 150, 300], [10.0, 50.0]) == summarise(
        [summarise_run(r) for r in runs], [20, 150, 300], [10.0, 50.0])


def test_the_converter_rewrites_a_report_and_leaves_other_files(tmp_path):
    report, other = tmp_path / "parallel.json", tmp_path / "other.json"
    report.write_text(json.dumps({"arguments": {"evals": 300}, "runs": [_async_run(1)]}))
    other.write_text(json.dumps({"results": [1, 2]}))
    assert main([str(report), str(other)]) == 0
    converted = json.loads(report.read_text())
    assert converted["arguments"] == {"evals": 300} and converted["runs"] == [summarise_run(_async_run(1))]
    assert json.loads(other.read_text()) == {"results": [1, 2]}
