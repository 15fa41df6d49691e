"""Early stopping on a real scheduler (tests/cluster/test_slurm.py and test_sge.py): jobs report
learning curves with ``spearmint_nn.job.report``, good or bad by their point; with the median
rule the daemon cancels the bad ones on the scheduler (``scancel``/``qdel``) while they run.

What is checked is what the scheduler and the job's own processes say, not the daemon's word:
the cancelled job leaves ``squeue``/``qstat``, its accounting (``sacct``/``qacct``) records it
cancelled or killed, its wrapper process is gone; the daemon records it ``stopped`` with its
curve (job file, ``status --json``, ``results.csv``) and never runs it again, and the good jobs
complete.
"""
from __future__ import annotations

import csv
import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.batch_scenarios import Cluster, pid_alive, run_to_end, runs, stop_daemon, wait_for
from helpers.experiments import all_jobs, cli, start_daemon, write_experiment

STEPS = 6
# x < 0.5: a good job (value x + 1/step); x >= 0.5: a bad one (10 + x + 1/step), which after its
# last report sleeps 10 minutes, so that only a cancel ends it within the test's time.
WRAPPER = f"""
import os, time
from spearmint_nn import job

HERE = os.path.dirname(os.path.abspath(__file__))


def main(job_id, params):
    with open(os.path.join(HERE, "runs.log"), "a") as log:
        log.write(f"{{job_id}}\\n")
    with open(os.path.join(HERE, f"pid-{{job_id}}"), "w") as handle:
        handle.write(str(os.getpid()))
    x = float(params["x"][0])
    bad = x >= 0.5
    base = 10.0 + x if bad else x
    for step in range(1, {STEPS} + 1):
        job.report(step, base + 1.0 / step)
        time.sleep(1.0 if bad else 0.3)
    if bad:
        time.sleep(600)
    return base + 1.0 / {STEPS}
"""
# Queued in this order before the daemon starts (ids 1..5), 2 at a time: two good jobs complete
# first, so the bad jobs 3 and 5 are judged from step 2 against two or three complete curves,
# and the good job 4 is better than them at every step. The budget is these 5 jobs.
POINTS = [0.1, 0.2, 0.9, 0.05, 0.8]
BAD = [3, 5]


def queued_ids(driver: str) -> set[str]:
    """The scheduler ids in the queue (pending, running or completing), array tasks as the driver
    names them (SLURM 12345_3, Grid Engine 12345.3)."""
    if driver == "slurm":
        listing = subprocess.run(["squeue", "-h", "-r", "-o", "%i"], capture_output=True, text=True, timeout=60,
                                 check=True).stdout
        return set(listing.split())
    xml = subprocess.run(["qstat", "-xml", "-g", "d"], capture_output=True, text=True, timeout=60, check=True).stdout
    ids = set()
    for job in ET.fromstring(xml).iter("job_list"):
        number, task = job.findtext("JB_job_number"), job.findtext("tasks")
        ids.add(f"{number}.{task}" if task else number)
    return ids


def cancelled_in_accounting(driver: str, sid: str) -> bool:
    """Whether the scheduler's accounting has the job ended by a cancel: SLURM's state
    ``CANCELLED by <uid>``; Grid Engine's record of a job qdel killed (``failed 100``, exit
    status 137, SIGKILL)."""
    if driver == "slurm":
        states = subprocess.run(["sacct", "-n", "-X", "-P", "-j", sid, "-o", "State"], capture_output=True,
                                text=True, timeout=60).stdout.split("\n")
        return states[0].startswith("CANCELLED")
    number, _, task = sid.partition(".")
    done = subprocess.run(["qacct", "-j", number, *(["-t", task] if task else [])], capture_output=True,
                          text=True, timeout=60)
    fields = dict(line.split(None, 1) for line in done.stdout.splitlines() if len(line.split(None, 1)) == 2)
    return fields.get("failed", "").startswith("100") and fields.get("exit_status", "").startswith("137")


def bad_jobs_stopped_on_the_scheduler(tmp_path: Path, cluster: Cluster) -> None:
    folder = write_experiment(tmp_path / "exp", {
        "language": "PYTHON", "main-file": "wrapper.py", "experiment-name": f"stop-{cluster.driver}",
        "variables": {"x": {"type": "FLOAT", "min": 0.0, "max": 1.0}}, "model": "sobol", "seed": 3,
        "max-concurrent": 2, "max-finished-jobs": len(POINTS), "polling-time": 1,
        "early-stopping": {"rule": "median", "min-steps": 2, "min-jobs": 2},
        "driver": {"name": cluster.driver, "name-prefix": "sm-", "result-grace": 3}}, {"wrapper.py": WRAPPER})
    for x in POINTS:
        point = tmp_path / "point.json"
        point.write_text(json.dumps({"x": [x]}))
        assert cli("add", folder, point).returncode == 0
    # --cancel-on-exit: a test that fails leaves none of its jobs on the scheduler
    daemon = start_daemon(folder, "--cancel-on-exit")
    try:
        assert daemon.wait(timeout=300) == 0, (folder / "console.txt").read_text()[-3000:]
    finally:
        stop_daemon(daemon)

    jobs = all_jobs(folder)
    states = {i: state for i, (state, _) in jobs.items()}
    assert states == {1: "complete", 2: "complete", 3: "stopped", 4: "complete", 5: "stopped"}, states
    bad = {i: jobs[i][1] for i in BAD}
    assert sorted(runs(folder)) == [1, 2, 3, 4, 5]  # each job ran once: none submitted again after its stop
    sids = [job["scheduler_id"] for _, job in jobs.values()]
    assert len(set(sids)) == len(sids)
    for job_id, job in bad.items():
        sid = job["scheduler_id"]
        wait_for(lambda: sid not in queued_ids(cluster.driver), 60, f"job {sid} to leave the queue")
        wait_for(lambda: cancelled_in_accounting(cluster.driver, sid), 60, f"{sid} cancelled in the accounting")
        pid = int((folder / f"pid-{job_id}").read_text())
        wait_for(lambda: not pid_alive(pid), 60, f"job {job_id}'s wrapper (pid {pid}) to be gone")
        # judged from step 2 on (min-steps), against the complete jobs' curves
        assert job["stopped_reason"].startswith("median rule: its best value"), job
        assert 2 <= job["stopped_step"] == job["last_step"] == job["reports"] <= STEPS, job
        assert job["last_value"] == pytest.approx(10 + job["params"]["x"][0] + 1 / job["last_step"])
        assert "value" not in job
        # the curve recorded is the file's (which may hold one report more, written before the cancel landed)
        steps = [line.split()[0] for line in (folder / ".spearmint" / "reports" / f"{job_id:06d}.txt").read_text()
                 .splitlines()]
        assert steps[:job["reports"]] == [str(step) for step in range(1, job["reports"] + 1)], steps
    for job_id, (_, job) in jobs.items():
        if job_id not in bad:
            assert job["value"] == pytest.approx(job["params"]["x"][0] + 1 / STEPS)
            assert job["last_step"] == STEPS

    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["counts"]["stopped"] == len(bad) and status["finished"] == len(POINTS)
    assert [entry["id"] for entry in status["stopped"]] == sorted(bad)
    assert all(entry["stopped_reason"].startswith("median rule") and entry["reports"] >= 2
               for entry in status["stopped"])
    with open(folder / ".spearmint" / "results.csv", newline="") as handle:
        rows = {int(row["id"]): row for row in csv.DictReader(handle)}
    assert {i: row["state"] for i, row in rows.items()} == states
    for job_id, job in bad.items():
        assert rows[job_id]["value"] == "" and float(rows[job_id]["last_step"]) == job["last_step"]

    # run again: the budget is spent; nothing is submitted, the stopped jobs stay stopped
    run_to_end(folder, 120)
    assert {i: state for i, (state, _) in all_jobs(folder).items()} == states
    assert sorted(runs(folder)) == [1, 2, 3, 4, 5]
