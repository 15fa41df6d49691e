"""config.json broken by an edit while the daemon runs (an editor's non-atomic save, a typo
fixed a minute later) costs no job: jobs run with the copy the daemon validated at its start,
and the daemon submits nothing while the file does not validate, saying so in ``status``. On a
real SLURM, jobs that start during the break: tests/cluster/test_slurm.py."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from helpers.experiments import cli, quick_config, start_daemon, wait_for, write_experiment
from helpers.invariant_checks import counting_wrapper

BROKEN = '{"language": "PYTHON", "main-file": "wrap'  # a save cut short


def _jobs(folder):
    return {int(p.stem): (p.parent.name, json.loads(p.read_text()))
            for p in (folder / ".spearmint" / "jobs").glob("*/*.json")}


@pytest.mark.slow
def test_a_config_broken_for_seconds_fails_no_job_and_holds_submissions(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(**{"max-finished-jobs": 8, "max-concurrent": 2,
                                                                "polling-time": 0.3}),
                              {"wrapper.py": counting_wrapper("time.sleep(1.5)")})
    good = (folder / "config.json").read_text()
    daemon = start_daemon(folder)
    try:
        wait_for(lambda: sum(s == "complete" for s, _ in _jobs(folder).values()) >= 2, 120, "2 jobs to complete")
        (folder / "config.json").write_text(BROKEN)
        held = wait_for(lambda: json.loads(cli("status", folder, "--json").stdout)["config_error"], 30,
                        "status to say the daemon holds its submissions")
        assert held["error"].startswith("config.json: invalid JSON: Unterminated string starting at line 1")
        text = cli("status", folder).stdout
        assert "submitting nothing since" in text and "config.json does not validate" in text, text
        broken_at = time.time()
        time.sleep(8)
        submitted_meanwhile = [job_id for job_id, (_, job) in _jobs(folder).items()
                               if job.get("submitting", 0) > broken_at + 1]
        assert submitted_meanwhile == []
        (folder / "config.json").write_text(good)
        assert daemon.wait(timeout=180) == 0
    finally:
        daemon.kill()
    jobs = _jobs(folder)
    assert sorted(state for state, _ in jobs.values()) == ["complete"] * 8, jobs
    console = (folder / "console.txt").read_text()
    assert "submitting nothing until it does" in console and "config.json validates again" in console
    assert json.loads(cli("status", folder, "--json").stdout)["config_error"] is None


def test_a_job_that_starts_while_config_json_is_broken_runs_with_the_daemons_copy(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(**{"max-finished-jobs": 1, "max-concurrent": 1}),
                              {"wrapper.py": counting_wrapper("pass")})
    assert cli("run", folder, timeout=300).returncode == 0
    assert json.loads((folder / ".spearmint" / "config.json").read_text()) == json.loads(
        (folder / "config.json").read_text())
    (folder / "config.json").write_text(BROKEN)
    (folder / ".spearmint" / "inputs" / "000007.json").write_text('{"x": [1.0], "y": [2.0]}')
    run = subprocess.run([sys.executable, "-m", "spearmint_nn.runner", str(folder), "7"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads((folder / ".spearmint" / "results" / "000007.json").read_text())
    assert result["status"] == "ok" and isinstance(result["values"]["main"], float)
