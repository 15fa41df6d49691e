"""Early stopping end to end on the local driver, with real processes: with ``early-stopping``
(the median rule) jobs whose curves are bad are cancelled while they run (their processes gone),
recorded ``stopped`` with their curve and why, never run again, and counted against
``max-finished-jobs``, while good jobs complete; without the key every job runs to its end."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from helpers.experiments import all_jobs, cli, quick_config, write_experiment
from spearmint_nn.experiment.layout import ExperimentPaths

STEPS = 6
# x < 0.5 is a good job (value x + 1/step), x >= 0.5 a bad one (10 + x + 1/step) that, after its
# last report, waits for the file "go" (or 300 s): only a cancel ends it in time for the test.
WRAPPER = f"""
import os, signal, time
from spearmint_nn import job


class Terminated(Exception):
    pass


def _terminated(signum, frame):
    raise Terminated()


def main(job_id, params):
    x = float(params["x"][0])
    bad = x >= 0.5
    base = 10.0 + x if bad else x
    with open(f"pid-{{job_id}}", "w") as handle:
        handle.write(str(os.getpid()))
    signal.signal(signal.SIGTERM, _terminated)
    try:
        for step in range(1, {STEPS} + 1):
            job.report(step, base + 1.0 / step)
            time.sleep(0.5 if bad else 0.2)
        deadline = time.time() + 300
        while bad and not os.path.exists("go") and time.time() < deadline:
            time.sleep(0.1)
    except Terminated:
        open(f"terminated-{{job_id}}", "w").close()
        return base  # a result written after the cancel: the stopped state must win over it
    return base + 1.0 / {STEPS}
"""
# In id order: two good jobs complete first (max-concurrent 2), then bad, good, bad.
POINTS = [0.1, 0.2, 0.9, 0.05, 0.8]
BAD = [3, 5]
GOOD = [1, 2, 4]


def _folder(tmp_path: Path, points: list[float] = POINTS, **config) -> Path:
    folder = write_experiment(tmp_path / "exp", quick_config(**{
        "variables": {"x": {"type": "FLOAT", "min": 0.0, "max": 1.0}}, "max-finished-jobs": len(points),
        "max-concurrent": 2, "polling-time": 0.3, **config}), {"wrapper.py": WRAPPER})
    for x in points:  # queued before the daemon starts: ids 1, 2, ... in this order, no proposal
        point = tmp_path / "point.json"
        point.write_text(json.dumps({"x": [x]}))
        assert cli("add", folder, point).returncode == 0
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_median_rule_stops_bad_jobs_and_lets_good_ones_complete(tmp_path):
    folder = _folder(tmp_path, **{"early-stopping": {"rule": "median", "min-steps": 2, "min-jobs": 2}})
    paths = ExperimentPaths(folder)
    run = cli("run", folder, timeout=240)
    assert run.returncode == 0, run.stderr
    jobs = all_jobs(folder)
    assert {job_id: state for job_id, (state, _) in jobs.items()} == {
        1: "complete", 2: "complete", 3: "stopped", 4: "complete", 5: "stopped"}
    for job_id in BAD:
        record = jobs[job_id][1]
        # judged from step 2 on (min-steps) against the two complete jobs' curves
        assert record["stopped_reason"].startswith("median rule: its best value"), record
        assert 2 <= record["last_step"] == record["stopped_step"] <= STEPS and record["reports"] == record["last_step"]
        assert record["last_value"] == pytest.approx(10 + POINTS[job_id - 1] + 1 / record["last_step"])
        assert (folder / f"terminated-{job_id}").exists()  # the cancel reached the wrapper
        assert not _alive(int((folder / f"pid-{job_id}").read_text()))
        assert sorted(p.name for p in paths.claims.glob(f"{job_id:06d}*")) == [f"{job_id:06d}.json"]  # ran once
        assert "value" not in record  # a result its runner wrote after the cancel is not recorded
    # the wrapper returned at the SIGTERM, so its runner wrote an "ok" result after the cancel (within
    # the local driver's 2 s before SIGKILL): the job stays stopped all the same
    late = [json.loads(paths.result_file(job_id).read_text()) for job_id in BAD if paths.result_file(job_id).exists()]
    assert late and all(result["status"] == "ok" for result in late)
    for job_id in GOOD:
        assert jobs[job_id][1]["value"] == pytest.approx(POINTS[job_id - 1] + 1 / STEPS)
    log = paths.log.read_text()
    pruned = [line for line in log.splitlines() if "pruned" in line]
    assert len(pruned) == 2 and all("stopped early at step" in line for line in pruned), pruned
    assert "stopped   budget reached: 5 finished" in log  # 3 complete + 2 stopped = max-finished-jobs

    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["counts"]["stopped"] == 2 and status["finished"] == 5
    assert [entry["id"] for entry in status["stopped"]] == BAD
    assert all(entry["stopped_reason"].startswith("median rule") and entry["reports"] >= 2
               for entry in status["stopped"])
    assert status["feasibility"] == {"feasible": 3, "infeasible": 0, "failed": 0, "ignored": 0}
    text = cli("status", folder).stdout
    assert "3 complete, 0 failed, 2 stopped" in text and "stopped early: 2 job(s)" in text, text
    with open(paths.results_csv, newline="") as handle:
        rows = {int(row["id"]): row for row in csv.DictReader(handle)}
    assert {i: row["state"] for i, row in rows.items()} == {1: "complete", 2: "complete", 3: "stopped",
                                                           4: "complete", 5: "stopped"}
    assert rows[3]["reason"].startswith("median rule") and rows[3]["value"] == "" and rows[3]["feasible"] == ""

    # run again: the budget is spent, nothing is run again and the stopped jobs stay stopped
    again = cli("run", folder, timeout=120)
    assert again.returncode == 0, again.stderr
    assert {job_id: state for job_id, (state, _) in all_jobs(folder).items()} == {
        1: "complete", 2: "complete", 3: "stopped", 4: "complete", 5: "stopped"}


def test_a_job_stopped_after_three_complete_ones_is_shown_to_the_model_at_its_predicted_value(tmp_path):
    # one at a time: three good jobs complete, then the bad one is stopped at a step t >= 2. Each
    # good job moved 1/6 - 1/t after step t (from x + 1/t to x + 1/6): the bad one is predicted at
    # 10.9 + 1/t + 1/6 - 1/t, whatever t, from 3 jobs whose moves agree (sd 0)
    folder = _folder(tmp_path, [0.1, 0.2, 0.3, 0.9], **{
        "max-concurrent": 1, "early-stopping": {"rule": "median", "min-steps": 2, "min-jobs": 3}})
    run = cli("run", folder, timeout=240)
    assert run.returncode == 0, run.stderr
    jobs = all_jobs(folder)
    assert {job_id: state for job_id, (state, _) in jobs.items()} == {
        1: "complete", 2: "complete", 3: "complete", 4: "stopped"}
    record = jobs[4][1]
    assert record["predicted_values"] == {"main": pytest.approx(10.9 + 1 / 6)}, record
    assert record["predicted_sd"] == pytest.approx(0.0, abs=1e-9) and record["predicted_from_jobs"] == 3
    log = ExperimentPaths(folder).log.read_text()
    assert f"shown to the model at its predicted final value {10.9 + 1 / 6:.6g}" in log, log
    # a daemon started again shows it to the model again, with the complete ones
    again = cli("run", folder, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "4 finished job(s) shown to the model" in ExperimentPaths(folder).log.read_text()


def test_without_the_key_nothing_is_stopped(tmp_path):
    folder = _folder(tmp_path)
    (folder / "go").touch()  # the bad jobs end by themselves
    run = cli("run", folder, timeout=240)
    assert run.returncode == 0, run.stderr
    jobs = all_jobs(folder)
    assert [state for state, _ in jobs.values()] == ["complete"] * len(POINTS)
    assert jobs[3][1]["value"] == pytest.approx(10.9 + 1 / STEPS)
    assert "pruned" not in ExperimentPaths(folder).log.read_text()
    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["counts"]["stopped"] == 0 and status["stopped"] == []
    assert "stopped" not in cli("status", folder).stdout.split("\n")[1]  # the jobs line
