"""End to end on a real Grid Engine (started by ``tests/cluster/sge-up.sh``): see batch_scenarios.

Skipped when no Grid Engine answers; with ``SPEARMINT_REQUIRE_CLUSTERS=1`` (CI) that is a failure.
``SGE_STATE_DIR`` (default /var/tmp/spearmint-sge) locates the qmaster to stop and start.
"""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from helpers import batch_scenarios as scenarios
from helpers import warning_scenario
from spearmint_nn.drivers.base import JobSpec, SchedulerState
from spearmint_nn.drivers.sge import SgeDriver

pytestmark = [pytest.mark.slow, pytest.mark.sge]


def sge_problem() -> str | None:
    """Why no Grid Engine can be used here, or None."""
    if shutil.which("qsub") is None:
        return "no qsub on PATH"
    done = subprocess.run(["qstat", "-xml"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return f"qstat fails ({(done.stdout + done.stderr).strip()[:200]})"
    return None


def requeue(sid: str) -> None:
    """``qmod -rj`` once Grid Engine has had the job running for a few seconds: a job rescheduled
    just after it was dispatched was seen here to be marked (qacct: "failed 25 : rescheduling",
    no start time) but not stopped, and to run on."""
    scenarios.wait_for(lambda: sid in subprocess.run(["qstat", "-s", "r"], capture_output=True, text=True,
                                                     timeout=60).stdout.split(), 60, f"job {sid} to run")
    time.sleep(5)
    subprocess.run(["qmod", "-rj", sid], check=True, timeout=60, capture_output=True)


@pytest.fixture(scope="module")
def cluster() -> scenarios.Cluster:
    return scenarios.usable(scenarios.Cluster(
        driver="sge",
        title="Grid Engine",
        cancel=lambda sid: subprocess.run(["qdel", sid], check=True, timeout=60, capture_output=True),
        requeue=requeue,
        time_limit=5,       # h_rt is enforced within about a second
        limit_wait_s=30,
        controller_pid="spool/qmaster/qmaster.pid",
        restarted={"RESTARTED": "1"},
    ), sge_problem())


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS)
def test_scenario(tmp_path, cluster, scenario):
    scenario(tmp_path, cluster)


def test_error_state_job_counts_as_failed_and_leaves_the_queue(tmp_path, cluster):
    """A working folder the execution host cannot enter parks a job in Eqw; the driver fails and deletes it."""
    driver = SgeDriver({}, tmp_path)
    spec = JobSpec(job_id=1, command=["/bin/true"], workdir=tmp_path / "missing", stdout=tmp_path / "o/1.out",
                   stderr=tmp_path / "o/1.err", script_path=tmp_path / "s/1.sh", name="eqw-1")
    sid = driver.submit(spec)
    status = scenarios.wait_for(lambda: (s := driver.poll([sid])[sid]).state.finished and s, 60, "the error state")
    assert status.state is SchedulerState.FAILED and "deleted from the queue" in status.reason
    assert "working directory" in status.reason or "No such file" in status.reason, status.reason
    scenarios.wait_for(lambda: sid not in subprocess.run(["qstat"], capture_output=True, text=True).stdout.split(),
                       30, "the job to leave the queue")


def test_jobs_suspended_by_a_higher_priority_queue_still_all_finish_once(tmp_path, cluster):
    """Grid Engine preempts by suspension (sge-up.sh: preemptible.q is a subordinate of high.q):
    the running jobs of the experiment are stopped while a high.q job runs, and go on after it.
    Nothing is lost, failed, or run twice; each job ran in one attempt."""
    exp = scenarios.make_experiment(tmp_path / "exp", cluster, sleep=20, budget=3, concurrent=3,
                                    queue="preemptible.q", **{"extra-args": ["-l", "preemption=TRUE"]})
    daemon = scenarios.start_daemon(exp)
    high = None
    script = tmp_path / "high.sh"
    script.write_text("#!/bin/sh\nsleep 15\n")
    try:
        scenarios.wait_for(lambda: len(set(scenarios.runs(exp))) == 3, 180, "the 3 jobs to start")
        sids = {job["scheduler_id"] for job in scenarios.submitted(exp).values()}
        high = subprocess.run(["qsub", "-terse", "-q", "high.q", "-l", "preemption=TRUE", "-o", "/dev/null", "-j", "y",
                               str(script)], capture_output=True, text=True, timeout=60, check=True).stdout.strip()

        def suspended() -> set[str]:
            lines = subprocess.run(["qstat"], capture_output=True, text=True, timeout=60).stdout.splitlines()[2:]
            return {fields[0] for fields in map(str.split, lines) if len(fields) > 4 and "S" in fields[4]}

        scenarios.wait_for(lambda: sids & suspended(), 60, "Grid Engine to suspend the experiment's jobs")
        assert daemon.wait(timeout=300) == 0
    finally:
        scenarios.stop_daemon(daemon)
        if high:
            subprocess.run(["qdel", high], timeout=60, capture_output=True)
    scenarios.assert_each_job_ran_once(exp, 3)
    assert all(len(job["attempts"]) == 1 for _, job in scenarios.all_jobs(exp).values())


def test_a_queued_job_is_found_by_its_name_and_folder(tmp_path, cluster):
    """What the daemon asks after a submission failed ambiguously: qstat -j lists the queued or
    running job of that name in that folder, and nothing for another folder or once it ended."""
    driver = SgeDriver({"name-prefix": "sm-find-"}, tmp_path)

    def spec(folder):
        folder.mkdir(exist_ok=True)
        return JobSpec(job_id=1, command=["sleep", "8"], workdir=folder, stdout=folder / "o", stderr=folder / "e",
                       script_path=folder / "s.sh", name="one")
    sid = driver.submit(spec(tmp_path / "a"))
    assert driver.find_submitted(spec(tmp_path / "a")) == sid
    assert driver.find_submitted(spec(tmp_path / "b")) is None
    scenarios.wait_for(lambda: driver.poll([sid])[sid].state.finished, 120, "the job to end")
    assert driver.find_submitted(spec(tmp_path / "a")) is None


def test_the_warning_before_the_time_limit_reaches_the_job_once(tmp_path, cluster):
    # s_rt at 15 s, h_rt at 25 s: Grid Engine signals the job's whole process group at s_rt
    warning_scenario.warned_shell_job(tmp_path, cluster, time_limit=25, warning=10)
