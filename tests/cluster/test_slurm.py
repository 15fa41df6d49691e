"""End to end on a real SLURM (started by ``tests/cluster/slurm-up.sh``): see batch_scenarios.

Skipped when no SLURM answers; with ``SPEARMINT_REQUIRE_CLUSTERS=1`` (CI) that is a failure.
``SLURM_STATE_DIR`` (default /var/tmp/spearmint-slurm) locates the controller to stop and start.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers import batch_scenarios as scenarios
from helpers import daemon_job

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


_SLURM_FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE"}


def _slurm_daemon_jobs() -> daemon_job.DaemonJobs:
    def submit(script, exp, outputs, env):
        # the README's script as printed; only its limits shortened, on the command line as a user would
        done = subprocess.run(["sbatch", "--parsable", "--time=3", "--signal=B:USR1@60", "--chdir", str(outputs),
                               "--output", str(outputs / "slurm-%j.out"), str(script), str(exp)],
                              env=env, capture_output=True, text=True, timeout=60, check=True)
        return done.stdout.split(";")[0].strip()

    def active(sid):
        state = subprocess.run(["squeue", "-h", "-t", "all", "-j", sid, "-o", "%T"], capture_output=True,
                               text=True, timeout=60).stdout.strip()
        return [sid] if state and state not in _SLURM_FINAL else []

    return daemon_job.DaemonJobs(
        directive="#SBATCH", submit=submit, active=active,
        cancel=lambda ids: subprocess.run(["scancel", *ids], timeout=60),
        first_run_restarts={})  # no SLURM_RESTART_COUNT: not even the requeued daemon's own


def test_daemon_as_a_job_with_a_3_minute_limit_is_requeued_until_the_experiment_ends(tmp_path, cluster):
    """The daemon as the README's SLURM job script, 3 minutes a run, warned 60 s (SLURM: up to 60
    s more) before: 36 jobs of ~25 s, 3 at a time, take it three or four runs, each held ~2
    minutes by SLURM after its requeue. About 10 minutes."""
    jobs = _slurm_daemon_jobs()
    sid = daemon_job.daemon_as_a_batch_job(tmp_path, cluster, jobs, sleep=25, budget=36, timeout_s=45 * 60)
    runs = subprocess.run(["sacct", "-n", "-X", "-D", "-P", "-j", sid, "-o", "State"], capture_output=True,
                          text=True, timeout=60).stdout.split()
    assert runs.count("REQUEUED") >= 2 and runs[-1] == "COMPLETED", runs  # the same job, run again
