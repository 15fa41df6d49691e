"""``spearmint-nn run`` stopped by SIGUSR1, the warning before its own batch job's time limit:
it exits 75 ("run me again"), leaves its jobs running even with ``--cancel-on-exit``, and the
next run adopts them. The same on real schedulers, as batch jobs: tests/helpers/daemon_job.py."""
from __future__ import annotations

import signal

from helpers.experiments import all_jobs, cli, quick_config, start_daemon, wait_for
from helpers.invariant_checks import assert_folder_ok, counting_wrapper, logged_runs
from spearmint_nn.daemon.events.signals import TIME_LIMIT_EXIT


def test_time_limit_warning_stops_with_75_leaves_jobs_and_the_next_run_adopts_them(make_experiment):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 4, "max-concurrent": 2}),
                             {"wrapper.py": counting_wrapper("time.sleep(4)")})
    running = folder / ".spearmint" / "jobs" / "running"
    daemon = start_daemon(folder, "--cancel-on-exit")
    try:
        wait_for(lambda: len(list(running.glob("*.json"))) == 2 and len(logged_runs(folder / "runs.txt")) == 2,
                 120, "2 jobs running")
        daemon.send_signal(signal.SIGUSR1)
        assert daemon.wait(timeout=60) == TIME_LIMIT_EXIT
    finally:
        if daemon.poll() is None:
            daemon.kill()
    log = (folder / ".spearmint" / "daemon.log").read_text()
    assert "received SIGUSR1, the warning before the time limit" in log
    left = {i: job for i, (state, job) in all_jobs(folder).items() if state == "running"}
    assert len(left) == 2, all_jobs(folder)  # not cancelled, although --cancel-on-exit
    again = cli("run", folder, "--cancel-on-exit", timeout=300)
    assert again.returncode == 0, again.stderr
    jobs = all_jobs(folder)
    assert [state for state, _ in jobs.values()] == ["complete"] * 4
    for job_id, job in left.items():
        assert jobs[job_id][1]["scheduler_id"] == job["scheduler_id"]  # adopted, not run again
        assert f"job {job_id} running as local {job['scheduler_id']}" in again.stdout + again.stderr
    assert_folder_ok(folder, runs_file=folder / "runs.txt")  # each job evaluated exactly once
