"""Merged reports keep where each run comes from: its file, commit, date and versions."""
from __future__ import annotations

import json

import pytest

from experiments.benchmarks.merge import main
from experiments.benchmarks.runs import sourced_runs


def _report(path, commit: str, seeds: list[int], evals: int = 4, **extra) -> str:
    runs = [{"problem": "branin", "method": "sobol", "seed": s, "mode": "batch", "workers": 2,
             "values": [float(s + commit.count("b"))] * evals, "propose_seconds": [0.1]} for s in seeds]
    path.write_text(json.dumps({"provenance": {"git": {"commit": commit, "dirty": False}, "date": commit},
                                "arguments": {"seeds": seeds}, "runs": runs, **extra}))
    return str(path)


def test_each_merged_run_names_the_invocation_it_came_from(tmp_path):
    first = _report(tmp_path / "a.json", "aaaa", [0, 1])
    second = _report(tmp_path / "b.json", "bbbb", [1, 2])  # seed 1 again: the later file wins
    out = tmp_path / "merged.json"
    assert main(["--json", str(out), first, second]) == 0
    merged = json.loads(out.read_text())
    origin = {run["seed"]: merged["sources"][run["source"]] for run in merged["runs"]}
    assert {seed: (s["file"], s["provenance"]["git"]["commit"]) for seed, s in origin.items()} == {
        0: ("a.json", "aaaa"), 1: ("b.json", "bbbb"), 2: ("b.json", "bbbb")}
    assert origin[2]["arguments"] == {"seeds": [1, 2]}
    assert merged["provenance"]["git"] is None or len(merged["provenance"]["git"]["commit"]) == 40
    assert [row["seeds"] for row in merged["summary"]] == [3]


def test_merging_a_merged_report_keeps_the_original_sources_and_drops_unused_ones(tmp_path):
    out = tmp_path / "merged.json"
    main(["--json", str(out), _report(tmp_path / "a.json", "aaaa", [0]), _report(tmp_path / "b.json", "bbbb", [1])])
    third = _report(tmp_path / "c.json", "cccc", [0])  # replaces a.json's only run
    runs, sources = sourced_runs([str(out), third])
    assert [s["file"] for s in sources] == ["b.json", "c.json"]
    assert {seed: sources[run["source"]]["provenance"]["date"] for (_, _, seed), run in runs.items()} == {
        0: "cccc", 1: "bbbb"}


def test_runs_of_other_sizes_are_not_merged(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--json", str(tmp_path / "m.json"), _report(tmp_path / "a.json", "aaaa", [0]),
              _report(tmp_path / "b.json", "bbbb", [1], evals=6)])
    assert "sobol seed 1 ran batch with 2 in flight and 6 evaluations, not batch, 2 and 4" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def _suite_report(path, instance: int, regime: str = "sequential", evals: int = 10, task: str | None = None,
                  seed: int = 0) -> str:
    # a real task (``task``) records its dimension and no optimum, as benchmarks.suite --tasks does
    problem = {"problem": task, "dim": 2, "minimum": None} if task else {"problem": f"bbob-f1-d2-i{instance}",
                                                                         "minimum": 0.0}
    runs = [{**problem, "method": method, "seed": seed, "mode": "batch", "workers": 1, "regime": regime, "values": [100.0 / (k + 1) ** (2 if method == "ours" else 1)
                                                          for k in range(evals)],
             "propose_seconds": [0.1] * (evals - 3), "proposed": [1] * (evals - 3)} for method in ("ours", "sobol")]
    path.write_text(json.dumps({"provenance": {"git": {"commit": f"c{instance}", "dirty": False}},
                                "arguments": {"instances": [instance]}, "runs": runs}))
    return str(path)


def test_suite_reports_of_other_instances_merge_into_one_coco_summary(tmp_path, capsys):
    out = tmp_path / "merged.json"
    assert main(["--json", str(out), _suite_report(tmp_path / "i1.json", 1), _suite_report(tmp_path / "i2.json", 2)]) == 0
    merged = json.loads(out.read_text())
    assert sorted(merged["summary"]["ranks"]["per_problem"]) == ["bbob-f1-d2-i1", "bbob-f1-d2-i2"]
    everything = merged["summary"]["dims"]["2"]["groups"]["all"]
    assert everything["ours"]["runs"] == 2 and everything["ours"]["area"] > everything["sobol"]["area"]
    assert merged["summary"]["ranks"]["mean"] == {"ours": 1.0, "sobol": 2.0}
    assert {merged["sources"][r["source"]]["provenance"]["git"]["commit"] for r in merged["runs"]} == {"c1", "c2"}
    with pytest.raises(SystemExit):
        main(["--json", str(tmp_path / "m.json"), _suite_report(tmp_path / "i1.json", 1),
              _suite_report(tmp_path / "b.json", 2, regime="batch10")])
    assert "bbob-f1-d2-i2 ours seed 0 ran batch10 with 5 x d evaluations, not sequential" in capsys.readouterr().err


def test_reports_of_real_tasks_merge_into_one_data_profile_over_all_their_runs(tmp_path):
    out = tmp_path / "merged.json"
    first, second = (_suite_report(tmp_path / f"s{seed}.json", seed, task="hpo-svm-wine-acc", seed=seed)
                     for seed in (0, 1))
    assert main(["--json", str(out), first, second]) == 0
    summary = json.loads(out.read_text())["summary"]
    # profiled again: f_best is the best of both files' runs, each method has both seeds' runs
    assert summary["problems"] == {"hpo-svm-wine-acc": {"dim": 2, "f_best": 1.0, "found_by": "ours"}}
    assert {m: row["runs"] for m, row in summary["methods"].items()} == {"ours": 2, "sobol": 2}
    assert summary["methods"]["ours"]["area"] > summary["methods"]["sobol"]["area"]
    assert summary["ranks"]["mean"] == {"ours": 1.0, "sobol": 2.0}


def test_problems_keeps_only_those_problems_runs_and_their_sources(tmp_path, capsys):
    first = _report(tmp_path / "a.json", "aaaa", [0])
    other = json.loads((tmp_path / "a.json").read_text())
    for run in other["runs"]:
        run["problem"] = "hartmann6"
    (tmp_path / "b.json").write_text(json.dumps({**other, "provenance": {"git": {"commit": "bbbb"}, "date": "b"}}))
    out = tmp_path / "merged.json"
    assert main(["--json", str(out), "--problems", "hartmann6", first, str(tmp_path / "b.json")]) == 0
    merged = json.loads(out.read_text())
    assert {run["problem"] for run in merged["runs"]} == {"hartmann6"}
    assert [s["file"] for s in merged["sources"]] == ["b.json"]
    with pytest.raises(SystemExit):
        main(["--json", str(out), "--problems", "levy20", first])
    assert "no run of levy20" in capsys.readouterr().err
