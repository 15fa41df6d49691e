"""End to end on a real SLURM (started by ``tests/cluster/slurm-up.sh``): see batch_scenarios.

Skipped when no SLURM answers; with ``SPEARMINT_REQUIRE_CLUSTERS=1`` (CI) that is a failure.
``SLURM_STATE_DIR`` (default /var/tmp/spearmint-slurm) locates the controller to stop and start.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers import batch_scenarios as scenarios
from helpers import warning_scenario

pytestmark = [pytest.mark.slow, pytest.mark.slurm]


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


def requeue(sid: str) -> None:
    """``scontrol requeue``, then the job released at once: SLURM holds a requeued job for
    120 s (its BeginTime) once it is pending again, which would only make the test wait."""
    subprocess.run(["scontrol", "requeue", sid], check=True, timeout=60)
    state = ["squeue", "-h", "-t", "all", "-j", sid, "-O", "State"]
    scenarios.wait_for(lambda: subprocess.run(state, capture_output=True, text=True, timeout=60).stdout.strip()
                       == "PENDING", 120, f"job {sid} to be pending again")
    subprocess.run(["scontrol", "update", f"JobId={sid}", "StartTime=now"], check=True, timeout=60)


@pytest.fixture(scope="module")
def cluster() -> scenarios.Cluster:
    return scenarios.usable(scenarios.Cluster(
        driver="slurm",
        title="SLURM",
        cancel=lambda sid: subprocess.run(["scancel", sid], check=True, timeout=60),
        requeue=requeue,
        time_limit=60,      # SLURM's smallest limit is one minute, checked about every 30 s
        limit_wait_s=60,
        controller_pid="run/slurmctld.pid",
        restarted={"SLURM_RESTART_COUNT": "1"},
    ), slurm_problem())


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS)
def test_scenario(tmp_path, cluster, scenario):
    scenario(tmp_path, cluster)


def test_the_warning_before_the_time_limit_reaches_the_job_once(tmp_path, cluster):
    # SLURM's limits are whole minutes and it signals up to a minute early: a warning of 30 s
    # comes between the start and 30 s before the limit.
    warning_scenario.warned_shell_job(tmp_path, cluster, time_limit=60, warning=30)
