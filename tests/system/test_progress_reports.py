"""Learning curves end to end on the local driver, with real processes: a PYTHON wrapper reporting
through ``spearmint_nn.job.report`` and a SHELL wrapper appending to ``$SPEARMINT_REPORT_FILE``
(garbage included) are seen by ``status`` while they run, land in results.csv and the job
records, and a daemon SIGKILLed in the middle of a job and started again loses no report."""
from __future__ import annotations

import csv
import json
import signal
from pathlib import Path

import pytest

from helpers.experiments import all_jobs, cli, quick_config, start_daemon, wait_for, write_experiment
from spearmint_nn.experiment.curves import read_curve
from spearmint_nn.experiment.layout import ExperimentPaths

STEPS = 5
# The wrapper waits after this step until the test creates the file "go" in the experiment folder,
# so that the test sees the job running at a known step however loaded the machine is.
HOLD_AT = 3

PYTHON_WRAPPER = f"""
import os, time
from spearmint_nn import job

def main(job_id, params):
    x = float(params["x"][0])
    for step in range(1, {STEPS} + 1):
        time.sleep(0.2)
        job.report(step, x + 1.0 / step)
        if step == {HOLD_AT}:
            deadline = time.time() + 240
            while not os.path.exists("go") and time.time() < deadline:
                time.sleep(0.1)
    return x + 1.0 / {STEPS}
"""

SHELL_WRAPPER = """
#!/bin/bash
echo "1 0.5" >> "$SPEARMINT_REPORT_FILE"
echo "epoch 2 loss 0.4" >> "$SPEARMINT_REPORT_FILE"
echo "2 nan" >> "$SPEARMINT_REPORT_FILE"
printf '3 0.3\\n' >> "$SPEARMINT_REPORT_FILE"
sleep 0.5
echo "4 0.25" >> "$SPEARMINT_REPORT_FILE"
echo 0.25
"""


def _folder(tmp_path: Path, **config) -> Path:
    return write_experiment(tmp_path / "exp", quick_config(**{"max-finished-jobs": 1, "max-concurrent": 1,
                                                              "polling-time": 0.3, **config}),
                            {"wrapper.py": PYTHON_WRAPPER, "run.sh": SHELL_WRAPPER.lstrip()})


def _running_entry(folder: Path) -> dict | None:
    """The running job of ``status --json`` once it shows a report, else None."""
    status = json.loads(cli("status", folder, "--json").stdout)
    running = status["running"]
    return running[0] if running and running[0]["reports"] else None


def _csv_rows(folder: Path) -> list[dict[str, str]]:
    with open(ExperimentPaths(folder).results_csv, newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_python_job_reports_its_curve_to_status_while_running_and_to_results_csv(tmp_path):
    folder = _folder(tmp_path)
    daemon = start_daemon(folder)
    try:
        entry = wait_for(lambda: _running_entry(folder), 120, "status --json to show a report of the running job")
        # held at HOLD_AT: the status shows exactly that step, in JSON and in words
        entry = wait_for(lambda: (e := _running_entry(folder)) and e["last_step"] == HOLD_AT and e, 60,
                         f"the running job at step {HOLD_AT}")
        x = all_jobs(folder)[1][1]["params"]["x"][0]
        assert entry["reports"] == HOLD_AT and entry["last_value"] == pytest.approx(x + 1 / HOLD_AT)
        text = cli("status", folder).stdout
        assert f"step {HOLD_AT}: {x + 1 / HOLD_AT:.6g} ({HOLD_AT} reports)" in text, text
        (folder / "go").touch()
        assert daemon.wait(timeout=120) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
    state, record = all_jobs(folder)[1]
    assert state == "complete" and record["reports"] == STEPS and record["last_step"] == STEPS
    assert record["last_value"] == pytest.approx(x + 1 / STEPS) and "report_warning" not in record
    [row] = _csv_rows(folder)
    assert int(row["last_step"]) == STEPS and float(row["last_value"]) == pytest.approx(x + 1 / STEPS)
    report = cli("report", folder).stdout  # the CSV on stdout has the same columns
    assert list(csv.DictReader(report.splitlines()))[0]["last_step"] == str(STEPS)


def test_a_shell_job_appends_lines_and_its_garbage_is_one_warning_in_its_record(tmp_path):
    folder = _folder(tmp_path, **{"language": "SHELL", "main-file": None, "command": ["bash", "run.sh"]})
    done = cli("run", folder, timeout=180)
    assert done.returncode == 0, done.stderr
    state, record = all_jobs(folder)[1]
    assert state == "complete" and record["value"] == 0.25
    assert (record["reports"], record["last_step"], record["last_value"]) == (3, 4, 0.25)
    assert "'epoch 2 loss 0.4'" in record["report_warning"]
    assert (done.stdout + done.stderr).count("has lines that are not") == 1
    [row] = _csv_rows(folder)
    assert (row["last_step"], row["last_value"]) == ("4", "0.25")
    steps = [r.step for r in read_curve(ExperimentPaths(folder).report_file(1))]
    assert steps == [1, 3, 4]


@pytest.mark.slow
def test_a_daemon_killed_while_a_job_reports_and_started_again_keeps_every_report(tmp_path):
    folder = _folder(tmp_path)
    paths = ExperimentPaths(folder)
    daemon = start_daemon(folder)
    try:
        wait_for(lambda: all_jobs(folder, live=True).get(1, ("", {}))[1].get("last_step") == HOLD_AT, 120,
                 f"the daemon to record step {HOLD_AT}")
        daemon.send_signal(signal.SIGKILL)
        assert daemon.wait(timeout=30) == -signal.SIGKILL
        (folder / "go").touch()  # the job writes its last reports while no daemon runs
        wait_for(lambda: len(read_curve(paths.report_file(1))) == STEPS, 60, "the job's last reports")
        daemon = start_daemon(folder)
        assert daemon.wait(timeout=120) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
    state, record = all_jobs(folder)[1]
    assert state == "complete" and (record["reports"], record["last_step"]) == (STEPS, STEPS)
    assert [r.step for r in read_curve(paths.report_file(1))] == list(range(1, STEPS + 1))
    assert int(_csv_rows(folder)[0]["last_step"]) == STEPS
