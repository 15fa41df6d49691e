"""The scheduler misbehaves: submissions fail, the status command fails or hangs, jobs are
forgotten. The daemon must go on, retry with growing delays, and fail a job once, with the
scheduler's own words, only when it has to. (Results that show up late: test_faults_fs.)"""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest

import spearmint_nn.daemon.submitter as submitter_module
from helpers.experiments import quick_config, write_experiment
from helpers.fake_scheduler import faulty_driver as _driver, jobs_by_id as _jobs, POLL_MESSAGE, TRANSIENT_MESSAGE, install_fake_slurm, run_daemon
from helpers.invariant_checks import assert_folder_ok, counting_wrapper, logged_runs
from spearmint_nn.drivers.base import JobSpec, PollError, SubmitError
from spearmint_nn.drivers.batch import BatchDriver
from spearmint_nn.drivers.local import LocalDriver
from spearmint_nn.drivers.sge import SgeDriver
from spearmint_nn.drivers.slurm import SlurmDriver


@pytest.fixture
def quick_retries(monkeypatch):
    """Retry delays of the daemon and of batch drivers shortened to fractions of a second."""
    monkeypatch.setattr(submitter_module, "SUBMIT_RETRY_S", 0.2)
    monkeypatch.setattr(submitter_module, "SUBMIT_RETRY_MAX_S", 1.0)
    monkeypatch.setattr(BatchDriver, "poll_backoff_s", (0.3, 1.0))
    monkeypatch.setattr(BatchDriver, "command_timeout_s", 2.0)


def _experiment(tmp_path, body="pass", **config):
    settings = {"max-finished-jobs": 4, "max-concurrent": 2, "polling-time": 0.2, **config}
    return write_experiment(tmp_path / "exp", quick_config(**settings), {"wrapper.py": counting_wrapper(body)})


def test_transient_submit_failures_are_retried_with_growing_delays(tmp_path, quick_retries):
    folder = _experiment(tmp_path)
    driver = _driver(folder)
    driver.submit_faults = {1: 3, 2: 1}
    code, log = run_daemon(folder, driver)
    assert code == 0
    jobs = _jobs(folder)
    assert [j["state"] for j in jobs.values()] == ["complete"] * 4
    gaps = [b - a for a, b in zip(driver.submit_times[1], driver.submit_times[1][1:])]
    assert len(gaps) == 3 and gaps[0] >= 0.2 and gaps[1] >= 0.4 and gaps[2] >= 0.8  # 0.2, 0.4, 0.8 s
    assert f"job 1: submission failed ({TRANSIENT_MESSAGE}); retrying in 0.4 s" in log
    assert len(driver.submit_times[2]) == 2 and len(driver.submit_times[3]) == 1
    assert_folder_ok(folder, folder / "runs.txt")


@pytest.mark.slow
def test_submit_failing_every_time_fails_the_job_with_the_schedulers_message(tmp_path, quick_retries):
    folder = _experiment(tmp_path)
    driver = _driver(folder)
    driver.submit_faults = {1: -1}
    code, log = run_daemon(folder, driver)
    assert code == 0
    jobs = _jobs(folder)
    assert jobs[1]["state"] == "failed" and jobs[1]["failure"] == "submit_rejected"
    assert jobs[1]["reason"] == f"submission failed {submitter_module.MAX_SUBMIT_ATTEMPTS} times; last: {TRANSIENT_MESSAGE}"
    assert len(driver.submit_times[1]) == submitter_module.MAX_SUBMIT_ATTEMPTS
    assert sum(j["state"] == "complete" for j in jobs.values()) == 4  # a refused job is not an evaluation
    assert log.count("failed    job 1 submit_rejected") == 1
    assert_folder_ok(folder, folder / "runs.txt")


def test_permanent_rejection_fails_at_once(tmp_path, quick_retries):
    folder = _experiment(tmp_path)
    driver = _driver(folder)
    driver.transient, driver.submit_faults = False, {2: 1}
    assert run_daemon(folder, driver)[0] == 0
    job = _jobs(folder)[2]
    assert (job["failure"], job["reason"]) == ("submit_rejected", "sbatch: error: invalid partition specified: gpu")
    assert len(driver.submit_times[2]) == 1
    assert_folder_ok(folder, folder / "runs.txt")


@pytest.mark.parametrize("fault", ["fails", "hangs"])
def test_status_command_failing_or_hanging_does_not_stop_the_daemon_or_lose_jobs(tmp_path, fault):
    folder = _experiment(tmp_path, body="time.sleep(0.5)")
    driver = _driver(folder)
    if fault == "fails":
        driver.poll_fails = True
    else:
        driver.poll_hang_s = 0.3
    threading.Timer(4.0, lambda: (setattr(driver, "poll_fails", False), setattr(driver, "poll_hang_s", 0.0))).start()
    code, log = run_daemon(folder, driver)
    assert code == 0 and driver.polls_failed >= 3
    expected = POLL_MESSAGE if fault == "fails" else "gave no answer within 0.3 s"
    assert f"poll of the local driver failed (squeue" in log and expected in log
    assert [j["state"] for j in _jobs(folder).values()] == ["complete"] * 4  # results still collected
    assert_folder_ok(folder, folder / "runs.txt")


@pytest.mark.slow
def test_forgotten_job_is_lost_only_after_the_grace_period(tmp_path):
    folder = _experiment(tmp_path, body="time.sleep(1.5)", **{"max-finished-jobs": 3})
    driver = _driver(folder, result_grace_s=2.0)
    driver.forget = {2}
    code, log = run_daemon(folder, driver)
    assert code == 0
    jobs = _jobs(folder)
    lost = jobs[2]
    assert (lost["state"], lost["failure"]) == ("failed", "lost")
    assert lost["reason"] == "the scheduler has no record of this job"
    waited = lost["finished"] - (time.time() - (time.monotonic() - driver.unknown_since[2]))
    assert waited >= 2.0  # not declared lost before the grace period
    assert log.count("failed    job 2 lost") == 1
    # A lost job is an (infeasible) evaluation of its point, so it counts against the budget.
    assert sum(j["state"] == "complete" for j in jobs.values()) == 2
    assert_folder_ok(folder)


# ---- the SLURM driver against fake sbatch/squeue/sacct executables -----------------------------

@pytest.fixture
def fake_slurm(tmp_path, monkeypatch, quick_retries):
    env = install_fake_slurm(tmp_path / "bin", tmp_path / "slurm")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return tmp_path / "slurm"


def _spec(tmp_path, job_id=1):
    state = tmp_path / "exp" / ".spearmint"
    return JobSpec(job_id=job_id, command=["true"], workdir=tmp_path, stdout=state / "output" / "1.out",
                   stderr=state / "output" / "1.err", script_path=state / "scripts" / "1.sh", name="exp-1")


def test_sbatch_transient_failures_are_reported_at_once_with_its_message(tmp_path, fake_slurm):
    driver = SlurmDriver({}, tmp_path / "exp" / ".spearmint")
    (fake_slurm / "sbatch_failures").write_text("2")
    for _ in range(2):  # each failure is raised at once, for the daemon to retry later
        with pytest.raises(SubmitError) as error:
            driver.submit(_spec(tmp_path))
        assert error.value.transient
        assert str(error.value) == f"sbatch failed: {TRANSIENT_MESSAGE}"
    assert driver.submit(_spec(tmp_path)) == "100"  # the third try


def test_squeue_failing_or_hanging_is_a_poll_error_then_a_pause(tmp_path, fake_slurm, monkeypatch):
    monkeypatch.setattr(BatchDriver, "poll_backoff_s", (20.0, 60.0))  # longer than any slow squeue
    driver = SlurmDriver({}, tmp_path / "exp" / ".spearmint")
    job = driver.submit(_spec(tmp_path))
    (fake_slurm / "squeue_mode").write_text("hang")
    start = time.monotonic()
    with pytest.raises(PollError, match="squeue gave no answer within 2 s"):
        driver.poll([job])
    assert time.monotonic() - start < 5  # one try of 2 s, not an hour
    (fake_slurm / "squeue_mode").write_text("fail")
    driver = SlurmDriver({}, tmp_path / "exp" / ".spearmint")
    with pytest.raises(PollError, match="Unable to contact slurm controller"):
        driver.poll([job])
    with pytest.raises(PollError, match="failed to answer 1 time.s. in a row; next try in"):
        driver.poll([job])  # the scheduler is left alone for a while after a failure
    (fake_slurm / "squeue_mode").write_text("")
    fresh = SlurmDriver({}, tmp_path / "exp" / ".spearmint")  # no pause: the scheduler is back
    assert fresh.poll([job])[job].state.finished  # `true` has long ended


@pytest.mark.slow
def test_daemon_on_fake_slurm_survives_outages_and_declares_forgotten_jobs_lost(tmp_path, fake_slurm):
    folder = _experiment(tmp_path, body="time.sleep(1.0)",
                         driver={"name": "slurm", "result-grace": 2},
                         # one job at a time: the budget cannot be reached while the lost job waits out its grace
                         **{"max-finished-jobs": 4, "max-concurrent": 1})
    (fake_slurm / "sbatch_failures").write_text("4")  # job 1's first four submissions fail
    (fake_slurm / "forget").write_text("102")         # the third scheduler job vanishes with its node
    # the controller is away for job 1's first polls (and for the 4 lookups of a job named as job
    # 1 before each retry of its submission, which then submits it again)
    (fake_slurm / "squeue_failures").write_text("6")
    code, log = run_daemon(folder, timeout_s=180)
    assert code == 0
    jobs = _jobs(folder)
    by_sid = {j.get("scheduler_id"): j for j in jobs.values()}
    lost = by_sid["102"]
    assert (lost["state"], lost["failure"], lost["reason"]) == ("failed", "lost", "neither squeue nor sacct knows this job")
    assert "job 1: submission failed (sbatch failed: " + TRANSIENT_MESSAGE + "); retrying in 0.2 s" in log
    assert "Unable to contact slurm controller" in log
    assert sum(j["state"] == "complete" for j in jobs.values()) == 3  # the lost job counts too
    for job in jobs.values():  # each run's claim names its SLURM job: a restart could adopt it
        if job["state"] == "complete":
            claim = json.loads((folder / ".spearmint" / "claims" / f"{job['id']:06d}.json").read_text())
            assert claim["scheduler_ids"]["SLURM_JOB_ID"] == job["scheduler_id"]
    assert_folder_ok(folder, folder / "runs.txt")


def test_drivers_adopt_a_job_from_its_claim(tmp_path):
    claim = {"host": socket.gethostname(), "pid": 42, "start_ticks": 7,
             "scheduler_ids": {"SLURM_JOB_ID": "123", "JOB_ID": "9"}}
    assert SlurmDriver({}, tmp_path).adopt_claim(claim) == "123"
    assert SgeDriver({}, tmp_path).adopt_claim(claim) == "9"
    assert LocalDriver({}, tmp_path).adopt_claim(claim) == "42:7"
    assert LocalDriver({}, tmp_path).adopt_claim({**claim, "host": "elsewhere"}) is None
    assert SlurmDriver({}, tmp_path).adopt_claim({**claim, "scheduler_ids": {}}) is None


def test_a_preempted_job_is_submitted_again_as_its_next_attempt_up_to_max_attempts(tmp_path):
    """Preempted without a requeue: never a failure at its point, never counted; submitted again
    (a new scheduler job, runner --attempt 2, 3), and after max-attempts it fails "interrupted",
    ignored by the model like the interruptions before."""
    folder = _experiment(tmp_path, body="time.sleep(1.0)", **{"max-attempts": 3})
    driver = _driver(folder, result_grace_s=0.5)
    driver.preempt = {1: 1, 3: 3}
    # preempted once the wrapper has logged the attempt, so that every attempt is one run of it
    driver.started = lambda job_id, attempt: logged_runs(folder / "runs.txt").count(job_id) >= attempt
    code, log = run_daemon(folder, driver)
    assert code == 0, log
    jobs = _jobs(folder)
    once = jobs[1]
    assert once["state"] == "complete"
    assert [(a["attempt"], a["outcome"]) for a in once["attempts"]] == [(1, "preempted"), (2, "ok")]
    assert once["attempts"][0]["scheduler_id"] != once["scheduler_id"]  # a new scheduler job
    assert len(driver.submit_times[1]) == 2
    given_up = jobs[3]
    assert (given_up["state"], given_up["failure"]) == ("failed", "interrupted")
    assert "as many as max-attempts (3) allows" in given_up["reason"]
    assert [(a["attempt"], a["outcome"]) for a in given_up["attempts"]] == [(n, "preempted") for n in (1, 2, 3)]
    # the budget of 4 is 4 complete evaluations: the interrupted job did not count
    assert sorted(j["state"] for j in jobs.values()) == ["complete"] * 4 + ["failed"]
    assert "job 1 preempted (SLURM: PREEMPTED, killed by signal 15); submitting it again as attempt 2" in log
    # the wrapper ran job 1 twice and job 3 three times, and completed each complete job once
    runs = logged_runs(folder / "runs.txt")
    assert runs.count(1) == 2 and runs.count(3) == 3
    assert_folder_ok(folder, folder / "runs.txt")  # once per attempt


def test_a_submission_whose_answer_was_lost_is_adopted_not_submitted_again(tmp_path, fake_slurm):
    """sbatch queued the job but its answer timed out: before trying again the daemon asks
    squeue for a job of that name in the experiment's folder and follows it, so no copy of the
    job runs untracked (one sbatch call per submission, whatever the lost answers). Jobs 1 and 2
    went as one job array: each is found as its task, by the array's name and the task's index."""
    folder = _experiment(tmp_path, body="time.sleep(0.5)", driver={"name": "slurm", "result-grace": 2},
                         **{"max-finished-jobs": 3})
    (fake_slurm / "sbatch_lost_answers").write_text("2")  # the array of jobs 1, 2 and then job 3 reach the queue
    code, log = run_daemon(folder, timeout_s=120)
    assert code == 0, log
    jobs = _jobs(folder)
    assert [j["state"] for j in jobs.values()] == ["complete"] * 3
    calls = [json.loads(line) for line in (fake_slurm / "sbatch_calls.jsonl").read_text().splitlines()]
    assert [call[call.index("--job-name") + 1] for call in calls] == ["exp-1-array", "exp-3"]
    assert "--array=0-1%2" in calls[0]
    assert [jobs[i]["scheduler_id"] for i in (1, 2, 3)] == ["100_0", "100_1", "101"]
    assert "job 1: its failed submission reached the scheduler after all, as 100_0" in log
    assert "job 2: its failed submission reached the scheduler after all, as 100_1" in log
    assert_folder_ok(folder, folder / "runs.txt")


@pytest.mark.slow
def test_results_on_disk_are_recorded_within_a_poll_while_every_poll_hangs(tmp_path):
    """Every scheduler poll hangs 6 s (a controller that is away) while jobs end 2 s apart: the
    loop does not wait on it (spearmint_nn.daemon.scheduler_calls), each result is recorded within
    a poll of its file."""
    folder = _experiment(tmp_path, body="time.sleep(1 + 2 * (job_id % 3))",
                         **{"max-finished-jobs": 6, "max-concurrent": 3, "polling-time": 0.5})
    driver = _driver(folder)
    driver.poll_hang_s = 6.0
    code, log = run_daemon(folder, driver)
    assert code == 0 and driver.polls_failed >= 2
    results = folder / ".spearmint" / "results"
    late = {job_id: job["finished"] - (results / f"{job_id:06d}.json").stat().st_mtime
            for job_id, job in _jobs(folder).items()}
    assert all(seconds < 2.0 for seconds in late.values()), late
    assert_folder_ok(folder, folder / "runs.txt")
