"""End to end on a real SLURM (started by ``tests/cluster/slurm-up.sh``): see batch_scenarios.

Skipped when no SLURM answers; with ``SPEARMINT_REQUIRE_CLUSTERS=1`` (CI) that is a failure.
``SLURM_STATE_DIR`` (default /var/tmp/spearmint-slurm) locates the controller to stop and start.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import Counter

import pytest

from helpers import batch_scenarios as scenarios
from helpers import daemon_job
from helpers import refused_writes
from helpers import stopping_scenario
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
    """``scontrol requeue``, then the job released 15 s later: SLURM holds a requeued job for
    120 s (its BeginTime) once it is pending again, which would only make the test wait."""
    subprocess.run(["scontrol", "requeue", sid], check=True, timeout=60)
    state = ["squeue", "-h", "-t", "all", "-j", sid, "-O", "State"]
    scenarios.wait_for(lambda: subprocess.run(state, capture_output=True, text=True, timeout=60).stdout.strip()
                       == "PENDING", 120, f"job {sid} to be pending again")
    # not "now": a requeued job released at once was seen allocated while its killed run was still
    # completing, and failed ("Killing non-startable batch job: Job credential revoked")
    subprocess.run(["scontrol", "update", f"JobId={sid}", "StartTime=now+15"], check=True, timeout=60)


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


@pytest.mark.parametrize("scenario", refused_writes.SCENARIOS)
def test_a_refused_result_is_kept(tmp_path, cluster, scenario):
    scenario(tmp_path, cluster)


@pytest.mark.parametrize("partition, outcome", [("preemptible", "requeued"), ("preemptible-cancel", "preempted")])
def test_jobs_preempted_by_a_higher_priority_partition_still_all_finish(tmp_path, cluster, partition, outcome):
    """Jobs on a preemptible partition (slurm-up.sh: PreemptMode REQUEUE, or CANCEL) all lose
    their CPUs to a job of the partition "high": SLURM requeues them (the daemon follows the
    same scheduler jobs) or stops them as PREEMPTED (the daemon submits each again as its next
    attempt). Every job still finishes, once: none counted as a failure, none lost, none
    evaluated twice to completion (the wrapper's own ledgers of starts and ends)."""
    done = 'open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "done.log"), "a").write(f"{job_id}\\n")'
    exp = scenarios.make_experiment(tmp_path / "exp", cluster, sleep=30, budget=4, concurrent=4, body=done,
                                    partition=partition, **scenarios.KILLED_GRACE)
    daemon = scenarios.start_daemon(exp)
    high = None
    try:
        scenarios.wait_for(lambda: len(set(scenarios.runs(exp))) == 4, 180, "the 4 jobs to start")
        first = {i: job["scheduler_id"] for i, job in scenarios.submitted(exp).items()}
        cpus = subprocess.run(["sinfo", "-h", "-p", "high", "-o", "%c"], capture_output=True, text=True,
                              timeout=60).stdout.split()[0]
        high = subprocess.run(["sbatch", "--parsable", "-p", "high", "-n", cpus, "-J", "sm-high", "-o", "/dev/null",
                               "--wrap", "sleep 10"], capture_output=True, text=True, timeout=60, check=True).stdout.strip()
        _wait_for_the_high_job(high, exp)
        preempted_at = time.time()
        # SLURM holds a job it requeued for 120 s (its BeginTime), so this takes some minutes
        assert daemon.wait(timeout=600) == 0
    finally:
        scenarios.stop_daemon(daemon)
        if high:
            subprocess.run(["scancel", high], timeout=60)
    jobs = scenarios.all_jobs(exp)
    assert {i: state for i, (state, _) in jobs.items()} == {1: "complete", 2: "complete", 3: "complete", 4: "complete"}
    # Each started twice; a preempted job submitted again at once may start before the high job
    # took the CPUs, and be preempted once more (SLURM's requeue holds its job back for 120 s).
    starts = Counter(scenarios.runs(exp))
    assert set(starts) == {1, 2, 3, 4} and all(2 <= n <= (2 if outcome == "requeued" else 4) for n in starts.values())
    assert sorted(int(i) for i in (exp / "done.log").read_text().split()) == [1, 2, 3, 4]  # and ended once
    for job_id, (_, job) in jobs.items():
        runs = starts[job_id]
        assert [(a["attempt"], a["outcome"]) for a in job["attempts"]] == [
            *((n, outcome) for n in range(1, runs)), (runs, "ok")], job["attempts"]
        # requeued: the same scheduler job, followed; preempted: a new one, submitted again
        assert (job["scheduler_id"] == first[job_id]) == (outcome == "requeued")
        if outcome == "preempted":  # at the next poll, not after result-grace: no result can come
            assert job["attempts"][0]["ended"] < preempted_at + scenarios.KILLED_RECORDED_WITHIN_S, job["attempts"]
    status = subprocess.run([sys.executable, "-m", "spearmint_nn", "status", str(exp), "--json"],
                            capture_output=True, text=True, timeout=120)
    summary = json.loads(status.stdout)
    assert summary["attempts"] == {"total": sum(starts.values()), "interrupted_jobs": 4, "resumed_jobs": 0}, \
        status.stderr


def _wait_for_the_high_job(high: str, exp) -> None:
    """The preempting job starts within 2 minutes (it takes every CPU, so only by preempting the
    experiment's jobs), else the test fails with what SLURM says of it, the queue and the node."""
    def started() -> bool:
        state = subprocess.run(["sacct", "-n", "-X", "-P", "-j", high, "-o", "State"], capture_output=True,
                               text=True, timeout=60).stdout.split()
        return bool(state) and state[0] not in ("PENDING", "")
    try:
        scenarios.wait_for(started, 120, "the job of partition high to start")
    except AssertionError as exc:
        said = [subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout for argv in (
            ["scontrol", "show", "job", high], ["squeue", "-a", "-o", "%i %P %j %T %C %M %r"],
            ["scontrol", "show", "node"])]
        raise AssertionError(f"{exc}; runs so far {sorted(scenarios.runs(exp))}\n" + "\n".join(said)) from None


def test_a_queued_job_is_found_by_its_name_and_folder(tmp_path, cluster):
    scenarios.found_by_name_and_folder(tmp_path, cluster)


def test_the_warning_before_the_time_limit_reaches_the_job_once(tmp_path, cluster):
    # SLURM's limits are whole minutes and it signals up to a minute early: a warning of 30 s
    # comes between the start and 30 s before the limit.
    warning_scenario.warned_shell_job(tmp_path, cluster, time_limit=60, warning=30)


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


def test_a_5_minute_job_under_a_2_minute_limit_checkpoints_and_completes_in_several_attempts(tmp_path, cluster):
    # the warning 20 s before the limit (SLURM may send it up to a minute early): three attempts
    # or more, each stopped at its checkpoint and submitted again by the daemon
    warning_scenario.resumed_until_done(tmp_path, cluster, work_s=300, time_limit=120, warning=20, at_least=3)


def test_bad_jobs_stopped_early_are_cancelled_on_the_scheduler(tmp_path, cluster):
    stopping_scenario.bad_jobs_stopped_on_the_scheduler(tmp_path, cluster)


def test_jobs_that_start_while_config_json_is_broken_run_with_the_daemons_copy(tmp_path, cluster):
    """Queued jobs (sbatch --begin, 20 s after their submission) start while config.json is cut
    in half by an edit: none fails (each runs with the config the daemon validated), and the
    daemon submits nothing until the file validates again."""
    exp = scenarios.make_experiment(tmp_path / "exp", cluster, sleep=1, budget=6, concurrent=3,
                                    **{"extra-args": ["--begin=now+20"]})
    daemon = scenarios.start_daemon(exp)
    try:
        scenarios.wait_for(lambda: len(scenarios.submitted(exp)) == 3, 120, "3 jobs to be submitted")
        good = (exp / "config.json").read_text()
        (exp / "config.json").write_text(good[: len(good) // 2])
        scenarios.wait_for(lambda: len(set(scenarios.runs(exp))) == 3, 180, "the 3 queued jobs to start")
        time.sleep(5)  # they finish, and the daemon, holding, submits nothing
        assert {i for i, (state, _) in scenarios.all_jobs(exp).items() if state != "pending"} == {1, 2, 3}
        (exp / "config.json").write_text(good)
        assert daemon.wait(timeout=300) == 0, (exp / "console.txt").read_text()[-3000:]
    finally:
        scenarios.stop_daemon(daemon)
    assert sorted(state for state, _ in scenarios.all_jobs(exp).values()) == ["complete"] * 6
    scenarios.assert_each_job_ran_once(exp, 6)
