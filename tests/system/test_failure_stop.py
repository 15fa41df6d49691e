"""A daemon whose jobs fail the same way stops with one message, loses nothing and resumes after
the fix; config.json edited while it runs takes effect or is reported. Real daemons, real jobs."""
from __future__ import annotations

import json
import time

import pytest

from helpers.experiments import BRANIN_WRAPPER, all_jobs, cli, quick_config, start_daemon

# Broken in ways only running main shows (a wrapper that does not import or has no main stops
# the run before any job: tests/system/test_wrapper_check.py).
BROKEN_WRAPPERS = {
    "NameError in main": ("def main(job_id, params):\n    x = params['x'][0]\n    return undefined_name * x\n",
                          "NameError", "wrapper.py:3"),
    "returns None": ("def main(job_id, params):\n    x = params['x'][0]\n", "None", None),
}


@pytest.mark.parametrize("case", [case if case == "returns None" else pytest.param(case, marks=pytest.mark.slow)
                                  for case in sorted(BROKEN_WRAPPERS)])
def test_a_broken_wrapper_stops_the_daemon_with_one_message_and_run_resumes_after_the_fix(make_experiment, case):
    text, error, location = BROKEN_WRAPPERS[case]
    # No budget, as in Spearmint's own configs: before, such a run never ended.
    folder = make_experiment(quick_config(**{"max-finished-jobs": None, "max-concurrent": 2}),
                             files={"wrapper.py": text})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 1, result.stderr
    stopped = [line for line in result.stderr.splitlines() if "stopped" in line]
    assert len(stopped) == 1 and "failed the same way" in stopped[0], result.stderr
    assert error in stopped[0] and ".spearmint/output/" in stopped[0]
    if location:
        assert location in stopped[0]
    jobs = all_jobs(folder)
    failed = [job for state, job in jobs.values() if state == "failed"]
    assert 3 <= len(failed) <= 5 and {job["failure"] for job in failed} == {"bad_wrapper"}

    (folder / "wrapper.py").write_text(BRANIN_WRAPPER)
    config = json.loads((folder / "config.json").read_text())
    config["max-finished-jobs"] = 4
    (folder / "config.json").write_text(json.dumps(config))
    result = cli("run", folder, timeout=120)
    assert result.returncode == 0, result.stderr
    after = all_jobs(folder)
    assert all(after[job_id][1]["failure"] == "bad_wrapper" for job_id in (job["id"] for job in failed))
    assert sum(state == "complete" for state, _ in after.values()) == 4
    assert not any(state in ("pending", "running") for state, _ in after.values())


def test_the_same_exception_every_time_after_a_success_stops_after_the_configured_streak(make_experiment):
    # Jobs that succeeded, then a GPU that fails every job: the failures count, as the message says.
    wrapper = ("def main(job_id, params):\n    if job_id <= 2:\n        return 1.0\n"
               "    raise RuntimeError('CUDA error: an illegal memory access was encountered')\n")
    folder = make_experiment(quick_config(**{"max-finished-jobs": None, "max-concurrent": 1,
                                             "stop-after-identical-failures": 4}), files={"wrapper.py": wrapper})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 1
    assert ("4 jobs in a row failed the same way (exception): RuntimeError: CUDA error: an illegal memory access "
            "was encountered at wrapper.py:4 (jobs 3..6)") in result.stderr
    assert ("These jobs count against max-finished-jobs and are shown to the model as infeasible points. Fix the "
            "cause, then `spearmint-nn run") in result.stderr
    jobs = all_jobs(folder)
    assert len(jobs) == 6 and {job["failure"] for state, job in jobs.values() if state == "failed"} == {"exception"}
    assert json.loads(cli("status", folder, "--json").stdout)["finished"] == 6


def test_a_disk_that_refuses_the_wrappers_writes_stops_the_daemon_after_3_and_costs_no_budget(make_experiment):
    # Jobs that succeeded, then a disk that fills up: nothing about the points, and every job fails so.
    wrapper = ("def main(job_id, params):\n    if job_id <= 2:\n        return 1.0\n"
               "    raise OSError(28, 'No space left on device')\n")
    folder = make_experiment(quick_config(**{"max-finished-jobs": None, "max-concurrent": 1,
                                             "stop-after-identical-failures": 20}), files={"wrapper.py": wrapper})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 1
    assert ("3 jobs in a row failed the same way (storage): OSError: [Errno 28] No space left on device at "
            "wrapper.py:4 (jobs 3..5)") in result.stderr, result.stderr
    jobs = all_jobs(folder)
    assert len(jobs) == 5 and {job["failure"] for state, job in jobs.values() if state == "failed"} == {"storage"}
    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["finished"] == 2 and status["feasibility"]["ignored"] == 3  # not counted, not shown to the model


@pytest.mark.slow
def test_raising_max_finished_jobs_while_running_takes_effect(make_experiment):
    wrapper = "import time\n" + BRANIN_WRAPPER.replace("def main(job_id, params):",
                                                       "def main(job_id, params):\n    time.sleep(0.5)")
    config = quick_config(**{"max-finished-jobs": 3, "max-concurrent": 1, "polling-time": 0.2})
    folder = make_experiment(config, files={"wrapper.py": wrapper})
    daemon = start_daemon(folder)
    try:
        deadline = time.monotonic() + 60
        while len(list((folder / ".spearmint" / "jobs" / "complete").glob("*.json"))) < 1:
            assert time.monotonic() < deadline and daemon.poll() is None
            time.sleep(0.1)
        config.update({"max-finished-jobs": 6, "fantasies": 3})
        (folder / "config.json").write_text(json.dumps(config))
        assert daemon.wait(timeout=120) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
    console = (folder / "console.txt").read_text()
    assert "config.json changed: now max-finished-jobs 6" in console
    assert "config.json changed fantasies: noticed but not applied" in console
    assert sum(state == "complete" for state, _ in all_jobs(folder).values()) == 6


@pytest.mark.slow
def test_the_reason_a_wrapper_caught_reaches_status_report_and_html(make_experiment):
    wrapper = ("import sys, traceback\n\ndef main(job_id, params):\n    try:\n        return float(params['x'][0]) / 0.0\n"
               "    except ZeroDivisionError:\n        traceback.print_exc(file=sys.stdout)\n        return float('nan')\n")
    folder = make_experiment(quick_config(**{"max-finished-jobs": 3, "max-concurrent": 1}), files={"wrapper.py": wrapper})
    assert cli("run", folder, timeout=120).returncode == 0
    status = cli("status", folder)
    assert "3 x nan" in status.stdout and "(jobs 1..3)" in status.stdout
    assert "ZeroDivisionError: float division by zero" in status.stdout
    groups = json.loads(cli("status", folder, "--json").stdout)["failure_groups"]
    assert [(g["kind"], g["count"], g["first_job"], g["last_job"]) for g in groups] == [("nan", 3, 1, 3)]
    assert "ZeroDivisionError" in groups[0]["output_tail"]
    assert "ZeroDivisionError" in cli("report", folder, "--failures").stdout
    assert cli("report", folder, "--html", folder / "report.html").returncode == 0
    assert "ZeroDivisionError: float division by zero" in (folder / "report.html").read_text()
