"""End to end on a real Grid Engine (started by ``tests/cluster/sge-up.sh``): see batch_scenarios.

Skipped when no Grid Engine answers; with ``SPEARMINT_REQUIRE_CLUSTERS=1`` (CI) that is a failure.
``SGE_STATE_DIR`` (default /var/tmp/spearmint-sge) locates the qmaster to stop and start.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from helpers import batch_scenarios as scenarios
from helpers import daemon_job
from helpers import refused_writes
from helpers import stopping_scenario
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


def in_a_queue(state: str) -> set[str]:
    """Ids of the jobs in a queue (running or suspended) whose qstat state has the letter
    ``state``; an array's task as ``12345.3`` (qstat shows its index in a last column of its own)."""
    lines = subprocess.run(["qstat", "-s", "rs"], capture_output=True, text=True, timeout=60).stdout.splitlines()[2:]
    rows = [line.split() for line in lines if line.strip()]
    return {row[0] if len(row) < 10 else f"{row[0]}.{row[9]}" for row in rows if len(row) >= 9 and state in row[4]}


def requeue(sid: str) -> None:
    """``qmod -rj`` once Grid Engine has had the job running for a few seconds: a job rescheduled
    just after it was dispatched was seen here to be marked (qacct: "failed 25 : rescheduling",
    no start time) but not stopped, and to run on."""
    scenarios.wait_for(lambda: sid in in_a_queue("r"), 60, f"job {sid} to run")
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


@pytest.mark.parametrize("scenario", refused_writes.SCENARIOS)
def test_a_refused_result_is_kept(tmp_path, cluster, scenario):
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

        scenarios.wait_for(lambda: sids & in_a_queue("S"), 60, "Grid Engine to suspend the experiment's jobs")
        assert daemon.wait(timeout=300) == 0
    finally:
        scenarios.stop_daemon(daemon)
        if high:
            subprocess.run(["qdel", high], timeout=60, capture_output=True)
    scenarios.assert_each_job_ran_once(exp, 3)
    assert all(len(job["attempts"]) == 1 for _, job in scenarios.all_jobs(exp).values())


def test_a_queued_job_is_found_by_its_name_and_folder(tmp_path, cluster):
    scenarios.found_by_name_and_folder(tmp_path, cluster)


def test_the_warning_before_the_time_limit_reaches_the_job_once(tmp_path, cluster):
    # s_rt at 15 s, h_rt at 25 s: Grid Engine signals the job's whole process group at s_rt
    warning_scenario.warned_shell_job(tmp_path, cluster, time_limit=25, warning=10)


def _sge_daemon_jobs(name: str) -> daemon_job.DaemonJobs:
    """The daemon's jobs are found by their name: each run is a copy of the last (qresub), with an id of its own."""
    def submit(script, exp, outputs, env):
        # the README's script as printed; only its limits shortened, on the command line as a user would
        done = subprocess.run(["qsub", "-terse", "-N", name, "-o", f"{outputs}/", "-l", "h_rt=90,s_rt=60",
                               str(script), str(exp)],
                              env=env, cwd=outputs, capture_output=True, text=True, timeout=60, check=True)
        return done.stdout.strip()

    def active(_first):
        listing = subprocess.run(["qstat", "-xml"], capture_output=True, text=True, timeout=60, check=True).stdout
        return [job.findtext("JB_job_number") for job in ET.fromstring(listing).iter("job_list")
                if job.findtext("JB_name") == name]

    return daemon_job.DaemonJobs(
        directive="#$", submit=submit, active=active,
        cancel=lambda ids: subprocess.run(["qdel", *ids], timeout=60, capture_output=True),
        first_run_restarts={"RESTARTED": "0"})


def test_daemon_as_a_job_with_a_90_s_limit_runs_again_until_the_experiment_ends(tmp_path, cluster):
    """The daemon as the README's Grid Engine job script, warned by s_rt at 60 s and killed by
    h_rt at 90 s (Grid Engine enforces limits in seconds, SLURM in minutes): 24 jobs of ~20 s,
    3 at a time, take it three runs (6-9 jobs finish in a run of 60 s, 3 more between runs). About 3 minutes."""
    name = f"sm-daemon-{os.getpid()}"
    jobs = _sge_daemon_jobs(name)
    first = daemon_job.daemon_as_a_batch_job(tmp_path, cluster, jobs, sleep=20, budget=24, timeout_s=20 * 60)
    # by job number: as text, o107 would come before o89
    outputs = sorted((tmp_path / "daemon-output").glob(f"{name}.o*"), key=lambda path: int(path.suffix[2:]))
    # one output per run: the first job and the copies qresub made, each a job of its own
    assert len(outputs) >= 3 and outputs[0].name == f"{name}.o{first}", outputs


def test_a_50_s_job_under_a_20_s_limit_checkpoints_and_completes_in_several_attempts(tmp_path, cluster):
    # Grid Engine's limits are seconds: the same as SLURM's 5 minutes under 2, six times shorter
    warning_scenario.resumed_until_done(tmp_path, cluster, work_s=50, time_limit=20, warning=5, at_least=3)


def test_bad_jobs_stopped_early_are_cancelled_on_the_scheduler(tmp_path, cluster):
    stopping_scenario.bad_jobs_stopped_on_the_scheduler(tmp_path, cluster)
