"""The suite's entry point at its smallest: 2-D, two BBOB functions, one instance, 10 evaluations."""
from __future__ import annotations

import importlib.util
import json

import pytest

from experiments.benchmarks import suite


@pytest.mark.slow  # about 40 s: three methods' runs in their own processes
def test_the_quick_suite_runs_every_method_and_reports_coco_ecdfs(tmp_path, capsys):
    pytest.importorskip("ioh", reason="the BBOB problems need ioh: pip install -r experiments/benchmarks/requirements.txt")
    has_reference = importlib.util.find_spec("botorch") is not None
    methods = ["ours", "sobol"] + (["turbo"] if has_reference else [])
    out = tmp_path / "suite.json"
    # --quick replaces the dimensions, functions, instances and budget given
    assert suite.main(["--quick", "--dims", "5", "--functions", "3", "--budget", "50",
                       "--methods", ",".join(methods), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert "ioh" in report["provenance"]["versions"] and report["provenance"]["git"] is not None
    runs = report["runs"]
    problems = [f"bbob-f{f}-d2-i1" for f in (1, 6, 10, 15, 20)]
    assert sorted((r["problem"], r["method"]) for r in runs) == sorted((p, m) for p in problems for m in methods)
    assert all(r["evals"] == 10 and r["regime"] == "sequential" and "values" not in r for r in runs)
    # every method starts from the same 3 Sobol points (d + 1), so their first best values agree
    for problem in problems:
        firsts = {r["best_by_evals"][0][1] for r in runs if r["problem"] == problem}
        assert len(firsts) == 1
    groups = report["summary"]["dims"]["2"]["groups"]
    assert len(groups) == 6 and "all" in groups and "multimodal, weak global structure" in groups
    assert set(groups["all"]) == set(methods) and all(row["runs"] == 5 for row in groups["all"].values())
    # ten sequential jobs of median 60 s: the time tables reach 5 jobs at least
    assert report["summary"]["dims"]["2"]["times_s"][:3] == [60.0, 120.0, 300.0]
    assert all(len(row["ecdf_time"]) >= 3 for row in groups["all"].values())
    assert set(report["summary"]["ranks"]["per_problem"]) == set(problems)
    printed = capsys.readouterr().out
    assert "2-D, budget 10 evaluations" in printed and "mean rank over 5 problems" in printed
    if not has_reference:
        pytest.skip("ran ours and sobol only: the reference (turbo) needs BoTorch, pip install -r experiments/benchmarks/requirements.txt")


@pytest.mark.slow  # about 30 s
def test_the_quick_suite_in_batches_of_ten_runs_the_start_and_two_rounds(tmp_path):
    pytest.importorskip("ioh", reason="the BBOB problems need ioh: pip install -r experiments/benchmarks/requirements.txt")
    out = tmp_path / "suite.json"
    assert suite.main(["--quick", "--regime", "batch10", "--methods", "ours,sobol", "--json", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 10 and all(r["evals"] == 30 and r["regime"] == "batch10" for r in runs)
    # a shared start of 10, then two proposals of 10, each charged to the simulated clock
    assert all(r["proposals"]["calls"] == 2 and r["proposals"]["points"] == 20 for r in runs)
    assert all(r["elapsed_s"] > 2 * 60.0 for r in runs)


def test_an_unknown_method_or_function_stops_the_suite_before_any_run(capsys):
    with pytest.raises(SystemExit):
        suite.main(["--dims", "2", "--functions", "1", "--methods", "ours,turbo-2"])
    assert "unknown method 'turbo-2'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        suite.main(["--dims", "2", "--functions", "0-3", "--methods", "sobol"])
    assert "functions 1-24" in capsys.readouterr().err


@pytest.mark.slow  # about 20 s
def test_real_hyperparameter_tasks_run_in_the_suite_and_are_profiled_against_the_best_found(tmp_path, capsys):
    pytest.importorskip("sklearn", reason="the tasks' models: pip install -r experiments/benchmarks/requirements.txt")
    out = tmp_path / "hpo.json"
    tasks = ["hpo-linear-wine-nll", "hpo-knn-diabetes-mse"]
    assert suite.main(["--tasks", ",".join(tasks), "--methods", "ours,sobol", "--seeds", "2", "--budget", "4",
                       "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    runs = report["runs"]
    assert sorted({(r["problem"], r["method"], r["seed"]) for r in runs}) == sorted(
        (t, m, s) for t in tasks for m in ("ours", "sobol") for s in (0, 1))
    assert all(r["evals"] == 8 and r["dim"] == 2 and r["minimum"] is None for r in runs)
    summary = report["summary"]
    for task in tasks:  # the best of all runs, and who found it
        best = min(r["best_by_evals"][-1][1] for r in runs if r["problem"] == task)
        assert summary["problems"][task]["f_best"] == best
    assert set(summary["methods"]) == {"ours", "sobol"} and summary["budgets_per_dim"] == [1, 2]
    assert set(summary["ranks"]["per_problem"]) == set(tasks)
    printed = capsys.readouterr()
    assert "2 problems, budget 4 x d evaluations" in printed.out and "hpo-knn-diabetes-mse ours seed 1: best" in printed.err


def test_an_unknown_task_stops_the_suite_before_any_run(capsys):
    with pytest.raises(SystemExit):
        suite.main(["--tasks", "hpo-svm-diabetes-acc", "--methods", "sobol"])
    assert "--tasks: 'hpo-svm-diabetes-acc'" in capsys.readouterr().err


def test_synchronous_rounds_on_the_simulated_clock():
    assert suite.round_sizes(3, 2, 8) == [3, 2, 2, 1]
    # rounds of 2, 2, 2: each starts after the slowest job before it and the proposal's seconds
    times = suite.batch_finish_times([2, 2, 2], [1.0, 2.0], [10.0, 20.0, 5.0, 7.0, 3.0, 4.0])
    assert times == [10.0, 20.0, 26.0, 28.0, 33.0, 34.0]
