"""Early stopping across a daemon SIGKILLed and started again, on the local driver with real
processes: every report and every decision made before the kill is kept, a stopped job stays
stopped (its runner's late result is never recorded over it, it is never run again), a job still
running is judged by the new daemon, and each evaluation is counted once.

The jobs are held at known steps by files the test creates, so what the daemon has seen at the
kill does not depend on the machine's load."""
from __future__ import annotations

import csv
import json
import signal
from pathlib import Path

import pytest

from helpers.experiments import all_jobs, cli, quick_config, start_daemon, wait_for, write_experiment
from spearmint_nn.experiment.curves import read_curve
from spearmint_nn.experiment.layout import ExperimentPaths

STEPS = 6
# x < 0.5 is a good job (value x + 1/step), x >= 0.5 a bad one (10 + x + 1/step), which after its
# last report waits (for a file no one creates, at most 300 s): only a cancel ends it in time.
# Job 4 waits after step 3 for the file go-4, job 5 after step 1 for go-5.
WRAPPER = f"""
import os, signal, time
from spearmint_nn import job

HOLD = {{4: 3, 5: 1}}


class Terminated(Exception):
    pass


def _terminated(signum, frame):
    raise Terminated()


def main(job_id, params):
    with open("runs.log", "a") as log:
        log.write(f"{{job_id}}\\n")
    x = float(params["x"][0])
    bad = x >= 0.5
    base = 10.0 + x if bad else x
    signal.signal(signal.SIGTERM, _terminated)
    try:
        for step in range(1, {STEPS} + 1):
            job.report(step, base + 1.0 / step)
            time.sleep(0.3)
            deadline = time.time() + 240
            while HOLD.get(job_id) == step and not os.path.exists(f"go-{{job_id}}") and time.time() < deadline:
                time.sleep(0.1)
        deadline = time.time() + 300
        while bad and time.time() < deadline:
            time.sleep(0.1)
    except Terminated:
        return base  # a result its runner writes after the cancel: the stopped state must win over it
    return base + 1.0 / {STEPS}
"""
# In id order, 2 at a time: jobs 1 and 2 (good) complete; job 3 (bad) is stopped at step 2 by the
# first daemon; jobs 4 (good, held at step 3) and 5 (bad, held at step 1, below min-steps) are
# running when it is killed. Job 6 (the best point) runs under the second daemon.
POINTS = [0.1, 0.2, 0.9, 0.05, 0.8, 0.01]


def _recorded_step(folder: Path, job_id: int) -> float | None:
    return all_jobs(folder, live=True).get(job_id, ("", {}))[1].get("last_step")


@pytest.mark.slow
def test_a_daemon_killed_and_started_again_keeps_every_report_and_every_decision(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(**{
        "variables": {"x": {"type": "FLOAT", "min": 0.0, "max": 1.0}}, "max-finished-jobs": len(POINTS),
        "max-concurrent": 2, "polling-time": 0.3,
        "early-stopping": {"rule": "median", "min-steps": 2, "min-jobs": 2}}), {"wrapper.py": WRAPPER})
    paths = ExperimentPaths(folder)
    for x in POINTS:  # queued before the daemon starts: ids 1..6 in this order, no proposal
        point = tmp_path / "point.json"
        point.write_text(json.dumps({"x": [x]}))
        assert cli("add", folder, point).returncode == 0

    daemon = start_daemon(folder)
    try:
        wait_for(lambda: all_jobs(folder, live=True).get(3, ("",))[0] == "stopped" and _recorded_step(folder, 4) == 3
                 and _recorded_step(folder, 5) == 1, 120, "job 3 stopped, jobs 4 and 5 held at steps 3 and 1")
        daemon.send_signal(signal.SIGKILL)
        assert daemon.wait(timeout=30) == -signal.SIGKILL
        before = json.loads(cli("status", folder, "--json").stdout)
        # the runner of job 3 wrote its late result after the cancel (the wrapper returns at SIGTERM)
        wait_for(lambda: paths.result_file(3).exists(), 30, "job 3's late result")
        # while no daemon runs, job 4 reports to its end and finishes; job 5 reports to its end and waits
        (folder / "go-4").touch()
        (folder / "go-5").touch()
        wait_for(lambda: paths.result_file(4).exists() and len(read_curve(paths.report_file(5))) == STEPS, 60,
                 "job 4's result and job 5's last reports")
        daemon = start_daemon(folder)
        assert daemon.wait(timeout=180) == 0, (folder / "console.txt").read_text()[-3000:]
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()

    # before the kill: job 3 stopped with its curve, 4 and 5 running with theirs
    assert [entry["id"] for entry in before["stopped"]] == [3]
    stopped_before = before["stopped"][0]
    assert stopped_before["last_step"] >= 2 and stopped_before["reports"] == stopped_before["last_step"]
    assert {entry["id"]: entry["last_step"] for entry in before["running"]} == {4: 3, 5: 1}

    jobs = all_jobs(folder)
    assert {i: state for i, (state, _) in jobs.items()} == {
        1: "complete", 2: "complete", 3: "stopped", 4: "complete", 5: "stopped", 6: "complete"}
    assert sorted(int(i) for i in (folder / "runs.log").read_text().split()) == [1, 2, 3, 4, 5, 6]  # each ran once
    after = json.loads(cli("status", folder, "--json").stdout)
    assert after["counts"]["stopped"] == 2 and after["counts"]["complete"] == 4 and after["finished"] == 6
    # job 3: the first daemon's decision and curve, untouched by the second (its late ok result ignored)
    assert after["stopped"][0] == stopped_before
    assert jobs[3][1]["stopped_step"] == stopped_before["last_step"] and "value" not in jobs[3][1]
    assert json.loads(paths.result_file(3).read_text())["status"] == "ok"
    # job 5: judged by the second daemon (the first saw it only at step 1, below min-steps) on its
    # whole curve, the report seen before the kill included
    assert jobs[5][1]["stopped_step"] == jobs[5][1]["last_step"] == jobs[5][1]["reports"] == STEPS
    assert jobs[5][1]["stopped_reason"].startswith("median rule: its best value")
    # job 4: its reports before the kill and those written while no daemon ran
    assert (jobs[4][1]["reports"], jobs[4][1]["last_step"]) == (STEPS, STEPS)
    assert jobs[4][1]["value"] == pytest.approx(0.05 + 1 / STEPS)
    with open(paths.results_csv, newline="") as handle:
        rows = {int(row["id"]): row for row in csv.DictReader(handle)}
    assert {i: (row["state"], float(row["last_step"])) for i, row in rows.items()} == {
        1: ("complete", STEPS), 2: ("complete", STEPS), 3: ("stopped", stopped_before["last_step"]),
        4: ("complete", STEPS), 5: ("stopped", STEPS), 6: ("complete", STEPS)}
    log = paths.log.read_text()
    pruned = [line for line in log.splitlines() if "pruned" in line]
    assert [line.split("job ")[1].split()[0] for line in pruned] == ["3", "5"], pruned  # each decided once
    assert "budget reached: 6 finished" in log
