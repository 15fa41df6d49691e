"""A search space edited between two runs of ``spearmint-nn run`` on one real folder: which earlier
jobs the model is shown, the one line that says why the others are not, and ``status``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.experiments import MIXED_VARIABLES, all_jobs, cli, quick_config, write_finished_experiment

WRAPPER = """
def main(job_id, params):
    bonus = {"relu": 0.0, "tanh": 1.0, "gelu": 2.0}[params["act"][0]]
    return float(params["x"]) ** 2 + float(params.get("y", 0.0)) + bonus + float(params.get("momentum", 0.0))
"""
FIRST = {"x": {"type": "FLOAT", "min": -5, "max": 10}, "y": {"type": "FLOAT", "min": 0, "max": 15},
         "act": {"type": "ENUM", "options": ["relu", "tanh", "gelu"]}}
# x narrowed, gelu no longer offered, y removed, opt added with a default, momentum a new child
# of opt that is inactive in every earlier job (opt taken as adam), so it needs no default.
EDITED = {"x": {"type": "FLOAT", "min": -5, "max": 2.5}, "act": {"type": "ENUM", "options": ["relu", "tanh"]},
          "opt": {"type": "ENUM", "options": ["adam", "sgd"], "default": "adam"},
          "momentum": {"type": "FLOAT", "min": 0, "max": 0.99, "when": {"opt": "sgd"}}}


def _edit(folder: Path, variables: dict, budget: int) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update({"variables": variables, "max-finished-jobs": budget})
    (folder / "config.json").write_text(json.dumps(config))


def _log_lines(folder: Path, since: int) -> list[str]:
    return (folder / ".spearmint" / "daemon.log").read_text().splitlines()[since:]


@pytest.mark.slow  # three daemon runs, about 25 s
def test_edited_variables_keep_fitting_jobs_in_the_model_and_say_why_the_others_are_not(make_experiment):
    folder = make_experiment(quick_config(variables=FIRST, **{"max-finished-jobs": 8}), {"wrapper.py": WRAPPER})
    first = cli("run", folder, timeout=600)
    assert first.returncode == 0, first.stderr
    earlier = [job["params"] for _, job in all_jobs(folder).values()]
    high = sum(p["x"][0] > 2.5 for p in earlier)
    gelu = sum(p["act"] == ["gelu"] for p in earlier)
    outside = sum(p["x"][0] > 2.5 or p["act"] == ["gelu"] for p in earlier)
    kept = len(earlier) - outside
    assert len(earlier) == 8 and high and gelu and kept  # the Sobol points cover every case

    _edit(folder, EDITED, budget=10)
    start = len(_log_lines(folder, 0))
    second = cli("run", folder, timeout=600)
    assert second.returncode == 0, second.stderr
    lines = _log_lines(folder, start)
    warnings = [line for line in lines if "outside the current variables" in line]
    assert len(warnings) == 1, lines  # one line, not one per job
    (warning,) = warnings
    assert f"{outside} earlier job{'s' if outside > 1 else ''} lie outside the current variables" in warning
    assert f"x above max 2.5 ({high} job" in warning and f"act option 'gelu' no longer offered ({gelu} job" in warning
    assert "still count against max-finished-jobs" in warning
    replayed = next(line for line in lines if "shown to the model" in line and "replayed" in line)
    assert f"{kept} finished job(s) shown to the model" in replayed
    assert "y is no longer a variable" in replayed and "opt is taken at its default adam" in replayed
    model = next(line for line in lines if "suggested" in line)
    assert f"from {kept} observations" in model  # what the optimizer was actually given
    jobs = all_jobs(folder)
    assert len(jobs) == 10 and {state for state, _ in jobs.values()} == {"complete"}  # 8 earlier count

    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["finished"] == 10 and status["outside_variables"]["jobs"] == outside
    assert status["outside_variables"]["reasons"] == {
        reason: n for reason, n in (("x above max 2.5", high), ("act option 'gelu' no longer offered", gelu))}
    assert warning.split("warning", 1)[1].strip() in cli("status", folder).stdout

    # A new variable without a default: no earlier job has a value for it.
    _edit(folder, {**EDITED, "wd": {"type": "FLOAT", "min": 0, "max": 1}}, budget=10)
    start = len(_log_lines(folder, 0))
    third = cli("run", folder, timeout=600)
    assert third.returncode == 0, third.stderr
    lines = _log_lines(folder, start)
    (warning,) = [line for line in lines if "outside the current variables" in line]
    assert "10 earlier jobs lie outside" in warning and "wd missing (no default) (10 jobs)" in warning
    assert "give a new variable a \"default\"" in warning
    assert not any("replayed" in line for line in lines)


def test_status_names_the_jobs_outside_edited_variables(tmp_path):
    folder = write_finished_experiment(tmp_path, 12, failures=True)  # job 7 raised: an evaluation all the same
    earlier = [job["params"] for _, job in all_jobs(folder).values()]
    _edit(folder, {**MIXED_VARIABLES, "layers": {"type": "INT", "min": 3, "max": 8}}, budget=40)
    below = sum(p["layers"][0] < 3 for p in earlier)
    assert 0 < below < len(earlier)
    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["outside_variables"] == {"jobs": below, "reasons": {"layers below min 3": below}}
    text = cli("status", folder).stdout
    assert (f"{below} earlier job{'s' if below > 1 else ''} lie outside the current variables and are not shown "
            f"to the model: layers below min 3 ({below} job") in text


def test_a_job_left_running_across_the_edit_is_recorded_and_kept_from_the_model(tmp_path):
    folder = write_finished_experiment(tmp_path, 4, running=1)  # job 5 ran while the daemon was stopped
    running = folder / ".spearmint" / "jobs" / "running" / "000005.json"
    job = json.loads(running.read_text())
    job["params"]["layers"] = [1]
    running.write_text(json.dumps(job))
    (folder / ".spearmint" / "results" / "000005.json").write_text(
        json.dumps({"id": 5, "status": "ok", "values": {"loss": 1.0}}))
    config = json.loads((folder / "config.json").read_text())
    config.update({"model": "sobol", "polling-time": 0.5, "variables": {
        **MIXED_VARIABLES, "layers": {"type": "INT", "min": 3, "max": 8}}, "max-finished-jobs": 6})
    (folder / "config.json").write_text(json.dumps(config))
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr  # was: the optimizer failed on params outside the space
    assert all_jobs(folder)[5][0] == "complete"
    log = (folder / ".spearmint" / "daemon.log").read_text()
    assert "job 5 lies outside the current variables (layers below min 3); not shown to the model" in log
