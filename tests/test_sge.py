"""End to end on a real Grid Engine (started by ``tests/cluster/sge-up.sh``): see batch_scenarios.

Skipped when no Grid Engine answers; with ``SPEARMINT_REQUIRE_CLUSTERS=1`` (CI) that is a failure.
``SGE_STATE_DIR`` (default /var/tmp/spearmint-sge) locates the qmaster to stop and start.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import batch_scenarios as scenarios
from spearmint_nn.drivers.base import JobSpec, SchedulerState
from spearmint_nn.drivers.sge import SgeDriver

pytestmark = [pytest.mark.slow, pytest.mark.sge]

CLUSTER_DIR = Path(__file__).parent / "cluster"
STATE_DIR = Path(os.environ.get("SGE_STATE_DIR", "/var/tmp/spearmint-sge"))


def sge_problem() -> str | None:
    """Why no Grid Engine can be used here, or None."""
    if shutil.which("qsub") is None:
        return "no qsub on PATH"
    done = subprocess.run(["qstat", "-xml"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return f"qstat fails ({(done.stdout + done.stderr).strip()[:200]})"
    return None


@pytest.fixture(scope="module")
def cluster() -> scenarios.Cluster:
    problem = sge_problem()
    if problem:
        message = f"no usable Grid Engine: {problem}; start one as root with: bash tests/cluster/sge-up.sh"
        if os.environ.get("SPEARMINT_REQUIRE_CLUSTERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return scenarios.Cluster(
        driver="sge",
        cancel=lambda sid: subprocess.run(["qdel", sid], check=True, timeout=60, capture_output=True),
        time_limit=5,       # h_rt is enforced within about a second
        limit_wait_s=30,
        stop_controller=lambda: scenarios.stop_pid_file(STATE_DIR / "spool" / "qmaster" / "qmaster.pid"),
        start_controller=lambda: scenarios.run_script(CLUSTER_DIR / "sge-up.sh", {"SGE_STATE_DIR": str(STATE_DIR)}),
    )


def test_twelve_jobs_three_at_a_time(tmp_path, cluster):
    scenarios.twelve_jobs_three_at_a_time(tmp_path, cluster)


def test_failing_wrapper(tmp_path, cluster):
    scenarios.failing_wrapper(tmp_path, cluster)


def test_killed_by_time_limit(tmp_path, cluster):
    scenarios.killed_by_time_limit(tmp_path, cluster)


def test_cancelled_with_qdel(tmp_path, cluster):
    scenarios.cancelled_from_outside(tmp_path, cluster)


def test_daemon_killed_and_restarted_adopts_its_jobs(tmp_path, cluster):
    scenarios.daemon_killed_and_restarted(tmp_path, cluster)


def test_qmaster_stopped_and_restarted(tmp_path, cluster):
    if not (STATE_DIR / "spool" / "qmaster" / "qmaster.pid").exists() or os.geteuid() != 0:
        pytest.skip(f"needs root and the cluster of tests/cluster/sge-up.sh in {STATE_DIR}")
    scenarios.controller_restarted(tmp_path, cluster)


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
