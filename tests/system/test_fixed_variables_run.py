"""Fixed variables through ``spearmint-nn run`` on real folders: the value reaches every job's
wrapper in the form a searched value has (and a SHELL command's params file), is recorded in the
job files and results.csv, and a changed value keeps the jobs run at the old one out of the model."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers.experiments import all_jobs, cli, quick_config

# The wrapper writes down the form of each value it receives, to compare a fixed INT with a
# searched one, and fails a job that does not get the fixed values at all.
WRAPPER = """
import json
from pathlib import Path

def main(job_id, params):
    forms = {name: [type(value).__name__, str(getattr(value, "dtype", "")), str(value)] for name, value in params.items()}
    (Path(__file__).parent / f"seen-{job_id}.json").write_text(json.dumps(forms))
    return float(params["x"]) ** 2 + float(params["layers"]) + float(params["batch_size"]) / 1000
"""
VARIABLES = {"x": {"type": "FLOAT", "min": -2, "max": 2}, "layers": {"type": "INT", "min": 1, "max": 4},
             "batch_size": {"type": "INT", "size": 1, "value": 64}, "act": {"type": "ENUM", "value": "relu"}}


def _edit(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def _results(folder: Path) -> list[dict[str, str]]:
    with (folder / ".spearmint" / "results.csv").open() as stream:
        return list(csv.DictReader(stream))


@pytest.mark.slow  # two daemon runs, about 15 s
def test_a_fixed_value_reaches_every_job_and_a_changed_one_keeps_the_old_jobs_from_the_model(make_experiment):
    folder = make_experiment(quick_config(variables=VARIABLES, **{"max-finished-jobs": 4}), {"wrapper.py": WRAPPER})
    first = cli("run", folder, timeout=600)
    assert first.returncode == 0, first.stderr
    jobs = all_jobs(folder)
    assert len(jobs) == 4 and {state for state, _ in jobs.values()} == {"complete"}
    assert all(job["params"]["batch_size"] == [64] and job["params"]["act"] == ["relu"] for _, job in jobs.values())
    assert len({job["params"]["x"][0] for _, job in jobs.values()}) == 4  # x is searched
    for job_id in jobs:
        forms = json.loads((folder / f"seen-{job_id}.json").read_text())
        assert forms["batch_size"] == ["ScalarArray", "int64", "64"]
        assert forms["batch_size"][:2] == forms["layers"][:2]  # as a searched INT comes
        assert forms["act"] == ["list", "", "['relu']"]
        assert json.loads((folder / ".spearmint" / "inputs" / f"{job_id:06d}.json").read_text())["batch_size"] == [64]
    rows = _results(folder)
    assert [row["batch_size"] for row in rows] == ["64"] * 4 and [row["act"] for row in rows] == ["relu"] * 4
    status = cli("status", folder)
    assert status.returncode == 0 and "batch_size=64" in status.stdout

    _edit(folder, variables={**VARIABLES, "batch_size": {"type": "INT", "value": 128}}, **{"max-finished-jobs": 6})
    second = cli("run", folder, timeout=600)
    assert second.returncode == 0, second.stderr
    log = (folder / ".spearmint" / "daemon.log").read_text()
    (warning,) = [line for line in log.splitlines() if "outside the current variables" in line]
    assert ("4 earlier jobs lie outside the current variables and are not shown to the model: batch_size not at its "
            "fixed value 128 (4 jobs); they still count against max-finished-jobs") in warning
    jobs = all_jobs(folder)
    assert len(jobs) == 6 and [job["params"]["batch_size"] for _, job in jobs.values()] == [[64]] * 4 + [[128]] * 2
    assert [row["batch_size"] for row in _results(folder)] == ["64"] * 4 + ["128"] * 2


@pytest.mark.slow  # one daemon run, about 5 s
def test_a_shell_commands_params_file_holds_the_fixed_value(make_experiment):
    config = quick_config(language="SHELL", variables=VARIABLES, command=["sh", "-c", 'cp "$1" "params-$SPEARMINT_JOB_ID.json"; '
                                                                          'echo 1.0', "sh"], **{"max-finished-jobs": 2})
    config.pop("main-file")
    folder = make_experiment(config, {})
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    for job_id in (1, 2):
        params = json.loads((folder / f"params-{job_id}.json").read_text())
        assert params["batch_size"] == [64] and params["act"] == ["relu"] and set(params) == set(VARIABLES)
