"""End to end on a real SLURM (started by ``tests/cluster/slurm-up.sh``): see batch_scenarios.

Skipped when no SLURM answers; with ``SPEARMINT_REQUIRE_CLUSTERS=1`` (CI) that is a failure.
``SLURM_STATE_DIR`` (default /var/tmp/spearmint-slurm) locates the controller to stop and start.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import batch_scenarios as scenarios

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

CLUSTER_DIR = Path(__file__).parent / "cluster"
STATE_DIR = Path(os.environ.get("SLURM_STATE_DIR", "/var/tmp/spearmint-slurm"))


def slurm_problem() -> str | None:
    """Why no SLURM can be used here, or None."""
    if shutil.which("sbatch") is None:
        return "no sbatch on PATH"
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=60)
    if ping.returncode != 0 or "UP" not in ping.stdout:
        return f"slurmctld does not answer ({(ping.stdout + ping.stderr).strip()[:200]})"
    acct = subprocess.run(["sacct", "-n", "-X", "-j", "1"], capture_output=True, text=True, timeout=60)
    if acct.returncode != 0:
        return f"sacct does not work ({acct.stderr.strip()[:200]})"
    return None


@pytest.fixture(scope="module")
def cluster() -> scenarios.Cluster:
    problem = slurm_problem()
    if problem:
        message = f"no usable SLURM: {problem}; start one as root with: bash tests/cluster/slurm-up.sh"
        if os.environ.get("SPEARMINT_REQUIRE_CLUSTERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return scenarios.Cluster(
        driver="slurm",
        cancel=lambda sid: subprocess.run(["scancel", sid], check=True, timeout=60),
        time_limit=60,      # SLURM's smallest limit is one minute, checked about every 30 s
        limit_wait_s=60,
        stop_controller=lambda: scenarios.stop_pid_file(STATE_DIR / "run" / "slurmctld.pid"),
        start_controller=lambda: scenarios.run_script(CLUSTER_DIR / "slurm-up.sh", {"SLURM_STATE_DIR": str(STATE_DIR)}),
    )


def test_twelve_jobs_three_at_a_time(tmp_path, cluster):
    scenarios.twelve_jobs_three_at_a_time(tmp_path, cluster)


def test_failing_wrapper(tmp_path, cluster):
    scenarios.failing_wrapper(tmp_path, cluster)


def test_killed_by_time_limit(tmp_path, cluster):
    scenarios.killed_by_time_limit(tmp_path, cluster)


def test_cancelled_with_scancel(tmp_path, cluster):
    scenarios.cancelled_from_outside(tmp_path, cluster)


def test_daemon_killed_and_restarted_adopts_its_jobs(tmp_path, cluster):
    scenarios.daemon_killed_and_restarted(tmp_path, cluster)


def test_slurmctld_stopped_and_restarted(tmp_path, cluster):
    if not (STATE_DIR / "run" / "slurmctld.pid").exists() or os.geteuid() != 0:
        pytest.skip(f"needs root and the cluster of tests/cluster/slurm-up.sh in {STATE_DIR}")
    scenarios.controller_restarted(tmp_path, cluster)
