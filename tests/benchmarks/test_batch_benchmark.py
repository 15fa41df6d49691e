"""The batch-quality benchmark's bookkeeping: rounds, the sequential runs taken from a quality
report, and the gap to sequential. Random search keeps it quick; the model runs are the
benchmark itself."""
import json

import pytest

from experiments.benchmarks import batch, compare


def test_batch_runs_against_sequential_runs_of_a_quality_report(tmp_path, capsys):
    quality_json = tmp_path / "quality.json"
    compare.main(["--seeds", "2", "--evals", "hartmann6:20", "--methods", "sobol", "--timing-sizes", "",
                  "--json", str(quality_json)])
    out = tmp_path / "batch.json"
    assert batch.main(["--seeds", "0,1", "--evals", "20", "--batches", "1,10", "--model", "sobol",
                       "--sequential-from", str(quality_json), "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    sequential = {r["seed"]: r["values"] for r in json.loads(quality_json.read_text())["runs"]}
    rows = {row["batch"]: row for row in saved["summary"]}
    assert rows[1]["best_per_seed"] == [min(sequential[0]), min(sequential[1])]
    assert rows[10]["rounds"] == 2 and all(len(r["values"]) == 20 for r in saved["runs"])
    gap = rows[10]["median_best"]["20"] - rows[1]["median_best"]["20"]
    assert rows[10]["gap_to_sequential"]["20"] == pytest.approx(gap)
    assert "model sobol" in capsys.readouterr().out
    # a batch report's own sequential runs serve the same way (the batch runs are rerun)
    again = tmp_path / "again.json"
    assert batch.main(["--seeds", "0,1", "--evals", "20", "--batches", "10,1", "--model", "sobol",
                       "--sequential-from", str(out), "--json", str(again)]) == 0
    assert json.loads(again.read_text())["summary"] == saved["summary"]
    assert {r["thompson_every"] for r in json.loads(again.read_text())["runs"] if r["batch"] == 10} == {10}


def test_missing_sequential_runs_are_named(tmp_path):
    quality_json = tmp_path / "quality.json"
    compare.main(["--seeds", "1", "--evals", "hartmann6:20", "--methods", "sobol", "--timing-sizes", "",
                  "--json", str(quality_json)])
    with pytest.raises(SystemExit, match=r"no 20-evaluation hartmann6 dngo run for seed\(s\) \[0\]"):
        batch.main(["--seeds", "0", "--evals", "20", "--batches", "1,10", "--model", "dngo",
                    "--sequential-from", str(quality_json)])


def test_quality_seeds_added_to_an_earlier_report_match_a_full_run(tmp_path):
    """--seeds A-B runs only those seeds, and with --reuse the combined report equals one run of
    all seeds (runs are deterministic given the seed)."""
    args = ["--evals", "hartmann6:12", "--methods", "sobol", "--timing-sizes", ""]
    first, added, whole = (tmp_path / name for name in ("first.json", "added.json", "whole.json"))
    compare.main(["--seeds", "2", *args, "--json", str(first)])
    compare.main(["--seeds", "2-3", *args, "--json", str(added)])
    assert sorted(r["seed"] for r in json.loads(added.read_text())["runs"]) == [2, 3]
    compare.main(["--seeds", "4", *args, "--json", str(whole), "--reuse", str(first), str(added)])
    report = json.loads(whole.read_text())
    fresh = compare.main(["--seeds", "0,1,2,3", *args])
    timeless = [[{k: v for k, v in row.items() if k != "mean_suggest_seconds"} for row in r["quality"]]
                for r in (report, fresh)]
    assert timeless[0] == timeless[1]
    assert {r["seed"]: r["values"] for r in report["runs"]} == {r["seed"]: r["values"] for r in fresh["runs"]}


def test_a_method_name_carries_its_kernel_transform_and_initial_design():
    from experiments.benchmarks.quality import method_options

    assert method_options("dngo") == {"model": "dngo"}
    assert method_options("dngo@14") == {"model": "dngo", "initial_design": 14}
    assert method_options("gp+squared-exponential@6") == {"model": "gp", "kernel": "squared-exponential",
                                                          "initial_design": 6}
    assert method_options("gp-nowarp+squared-exponential/standardise@5") == {
        "model": "gp-nowarp", "kernel": "squared-exponential", "output_transform": "standardise", "initial_design": 5}
    assert method_options("dngo/log-shift") == {"model": "dngo", "output_transform": "log-shift"}


def test_an_initial_design_named_in_the_method_reaches_the_optimizer():
    """With "@8" the first 8 of 8 evaluations are the Sobol design, the same points random search
    takes; with the default design (7 points on Hartmann6) the 8th is the model's."""
    args = ["--seeds", "1", "--evals", "hartmann6:8", "--timing-sizes", ""]
    runs = {r["method"]: r["values"] for r in compare.main([*args, "--methods", "sobol,gp-nowarp@8,gp-nowarp"])["runs"]}
    assert runs["gp-nowarp@8"] == runs["sobol"]
    assert runs["gp-nowarp"][:7] == runs["sobol"][:7] and runs["gp-nowarp"][7] != runs["sobol"][7]
