"""The conditional-space benchmark: its problems, arms, summaries and command line."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from experiments.benchmarks import conditional as bench
from spearmint_nn.problem.space import Space

MLP_ONE_LAYER = {"layers": [1], "width_1": [16], "dropout_1": [0.0], "activation": ["tanh"], "lr": [0.01]}


def test_flat_variables_drop_every_condition_and_keep_the_rest():
    flat = bench.flat_variables(bench.SYNTHETIC_VARIABLES)
    assert set(flat) == set(bench.SYNTHETIC_VARIABLES)
    assert not any("when" in spec for spec in flat.values())
    assert flat["w_2"] == {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log"}
    decoded = Space.from_config(flat).decode(np.full((1, Space.from_config(flat).dim), 0.5))[0]
    assert set(decoded) == set(bench.SYNTHETIC_VARIABLES)


def test_synthetic_optimum_and_inactive_values_are_ignored():
    best = {"branch": ["branin"], "bx": [math.pi], "by": [2.275], "rate": [0.01]}
    assert bench.synthetic_objective(best) == pytest.approx(bench.SYNTHETIC_BEST, abs=1e-6)
    # The flat arm passes every variable; values of the other branches must not change f.
    noisy = {**best, "u": [0.9, 0.9], "depth": [1], "w_1": [1.0], "w_2": [1.0], "w_3": [1.0]}
    assert bench.synthetic_objective(noisy) == bench.synthetic_objective(best)
    steps = {"branch": ["steps"], "depth": [2], "w_1": [0.01], "w_2": [0.01], "w_3": [1.0], "rate": [0.01]}
    assert bench.synthetic_objective(steps) == pytest.approx(0.9)  # w_3 does not exist at depth 2


def test_mlp_reads_only_the_layers_that_exist():
    variables, module = bench.load_mlp_experiment()
    assert {"width_2", "dropout_3"} <= set(variables)
    clean = module.main(0, MLP_ONE_LAYER)
    # Values of layers 2 and 3 that would raise if they were read.
    poisoned = {**MLP_ONE_LAYER, "width_2": ["x"], "dropout_2": ["x"], "width_3": ["x"], "dropout_3": ["x"]}
    assert module.main(0, poisoned) == clean
    assert 0 < clean < 0.2  # a one-layer net learns the function well below its variance (~0.3)


def test_missing_mlp_experiment_is_a_clear_error(tmp_path, monkeypatch, capsys):
    with pytest.raises(FileNotFoundError, match="experiments/conditional_mlp"):
        bench.load_mlp_experiment(tmp_path)
    monkeypatch.setattr(bench, "MLP_EXPERIMENT", tmp_path / "nowhere")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--problems", "mlp", "--seeds", "1"])
    assert exit_info.value.code == 2
    assert "--problems synthetic" in capsys.readouterr().err


def test_bad_options_are_refused(capsys):
    for argv in (["--problems", "rosenbrock"], ["--evals", "mlp:0"], ["--evals", "branin:10"]):
        with pytest.raises(SystemExit):
            bench.main(argv)
    assert "unknown problem" in capsys.readouterr().err


def test_summary_skips_failures_and_reports_quartiles():
    runs = [{"values": [math.nan, 3.0, 1.0], "suggest_seconds": [0, 0, 0], "eval_seconds": [1, 1, 1]},
            {"values": [5.0, 4.0, 2.0], "suggest_seconds": [1, 1, 1], "eval_seconds": [1, 1, 1]},
            {"values": [math.nan, math.nan, 6.0], "suggest_seconds": [0, 0, 2], "eval_seconds": [3, 3, 3]}]
    row = bench.summarise(runs, 3)
    assert list(row["checkpoints"]) == ["1", "2", "3"]
    assert row["checkpoints"]["1"]["median"] == math.inf  # two of three runs have no success yet
    assert row["checkpoints"]["3"] == {"median": 2.0, "q25": 1.5, "q75": 4.0}
    assert row["failed_evaluations"] == 3
    assert row["seconds_per_suggest"] == pytest.approx((0 + 1 + 2 / 3) / 3)
    assert row["seconds_per_evaluation"] == pytest.approx(5 / 3)
    assert bench.checkpoints(60) == [20, 40, 60] and bench.checkpoints(2) == [1, 2]


def test_end_to_end_in_processes_writes_every_run(tmp_path, capsys):
    """Both problems, three arms, two seeds, real worker processes; random search in the model
    arms keeps it quick (the model arms themselves are the slow test below)."""
    out = tmp_path / "conditional.json"
    report = bench.main(["--problems", "synthetic,mlp", "--seeds", "2", "--evals", "synthetic:8", "mlp:3",
                         "--model", "sobol", "--workers", "2", "--json", str(out)])
    saved = json.loads(out.read_text())
    assert len(saved["runs"]) == 2 * 3 * 2
    assert saved["summary"] == json.loads(json.dumps(report["summary"]))
    for run in saved["runs"]:
        assert len(run["values"]) == len(run["params"]) == {"synthetic": 8, "mlp": 3}[run["problem"]]
        names = [set(p) for p in run["params"]]
        declared = bench.SYNTHETIC_VARIABLES if run["problem"] == "synthetic" else bench.load_mlp_experiment()[0]
        if run["arm"] == "flat":
            assert all(n == set(declared) for n in names)
        else:  # exactly the active variables
            space = Space.from_config(declared)
            assert all(n == set(space.active_names(p)) for n, p in zip(names, run["params"]))
    synthetic = [r for r in saved["runs"] if r["problem"] == "synthetic" and r["arm"] != "flat"]
    # with --model sobol the conditional arm is random search on the same space and seed: same runs
    by_seed = {}
    for r in synthetic:
        by_seed.setdefault(r["seed"], []).append(r["values"])
    assert all(a == b for a, b in by_seed.values())
    printed = capsys.readouterr().out
    assert "| flat | 2 |" in printed and "s / training" in printed

    # --reuse takes every run from the earlier report, cut to the shorter budget: the values
    # are the first ones of the earlier runs, and nothing ran again (suggest seconds identical).
    again = bench.main(["--problems", "synthetic", "--seeds", "2", "--evals", "synthetic:5", "--model", "sobol",
                        "--reuse", str(out)])
    earlier = {(r["arm"], r["seed"]): r for r in saved["runs"] if r["problem"] == "synthetic"}
    assert len(again["runs"]) == 3 * 2
    for run in again["runs"]:
        before = earlier[(run["arm"], run["seed"])]
        assert run["values"] == before["values"][:5] and run["params"] == before["params"][:5]
        assert run["suggest_seconds"] == before["suggest_seconds"][:5]


@pytest.mark.slow
def test_model_arms_run_past_the_initial_design():
    for problem, evals in (("synthetic", 13), ("mlp", 12)):
        for arm in ("conditional", "flat"):
            run = bench.run_once(problem, arm, 0, evals, "auto")
            assert all(np.isfinite(run["values"]))
            assert run["suggest_seconds"][-1] > 10 * max(run["suggest_seconds"][:5])  # a model fit happened
