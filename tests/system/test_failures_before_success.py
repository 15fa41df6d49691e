"""Before any job has succeeded, the same failure at the same place is a bug in the wrapper: the
daemon stops after 3, and those jobs cost no budget and teach the model nothing, after the fix
either. A failure before the first success that does not repeat counts once a job succeeds.
Real daemons, real jobs."""
from __future__ import annotations

import json

from helpers.experiments import BRANIN_WRAPPER, all_jobs, cli, quick_config

# A renamed parameter: every call raises KeyError: 'lr' at line 3.
RENAMED_PARAMETER = "def main(job_id, params):\n    x = float(params['x'][0])\n    return x * float(params['lr'][0])\n"


def _status(folder):
    return json.loads(cli("status", folder, "--json").stdout)


def test_a_wrapper_bug_stops_after_3_jobs_that_cost_no_budget_and_the_fix_completes_the_budget(make_experiment):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 6, "max-concurrent": 2}),
                             files={"wrapper.py": RENAMED_PARAMETER})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 1, result.stderr
    stopped = [line for line in result.stderr.splitlines() if "stopped" in line]
    assert len(stopped) == 1, result.stderr
    assert "3 jobs in a row failed the same way (exception): KeyError: 'lr' at wrapper.py:3" in stopped[0]
    assert ("No job has succeeded yet, so this is a bug in the wrapper, not a property of the points: these jobs "
            "are recorded as bad_wrapper, do not count against max-finished-jobs and are not shown to the model. "
            f"Fix wrapper.py:3, then `spearmint-nn run {folder}` again to go on") in stopped[0]
    assert ": 0 finished, no complete job yet" in stopped[0]
    failed = {job_id: job for job_id, (state, job) in all_jobs(folder).items() if state == "failed"}
    assert len(failed) >= 3
    assert {(job["failure"], job["reclassified_from"], job["reason"], job["location"]) for job in failed.values()} \
        == {("bad_wrapper", "exception", "KeyError: 'lr'", "wrapper.py:3")}
    status = _status(folder)
    assert status["finished"] == 0 and status["feasibility"]["ignored"] == len(failed)

    (folder / "wrapper.py").write_text(BRANIN_WRAPPER)
    result = cli("run", folder, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "shown to the model" not in result.stderr  # no replayed job: the model never sees the bug's jobs
    jobs = all_jobs(folder)
    before = [job for state, job in jobs.values() if state == "failed"]
    # The job the stopped run left in flight failed the same way: recorded as the same bug.
    assert {job["id"] for job in before} >= set(failed)
    assert {(job["failure"], job["reclassified_from"]) for job in before} == {("bad_wrapper", "exception")}
    assert sum(state == "complete" for state, _ in jobs.values()) == 6
    status = _status(folder)
    assert status["finished"] == 6 and status["feasibility"] == {"feasible": 6, "infeasible": 0, "failed": 0,
                                                                 "ignored": len(before)}


def test_a_failure_before_the_first_success_counts_once_a_job_succeeds(make_experiment):
    wrapper = "def main(job_id, params):\n    if job_id == 1:\n        raise ValueError('diverged')\n    return 1.0\n"
    folder = make_experiment(quick_config(**{"max-finished-jobs": 4, "max-concurrent": 1}), files={"wrapper.py": wrapper})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 0, result.stderr
    assert ("a job succeeded, so the 1 failure(s) held back until then (jobs 1) now count against max-finished-jobs "
            "and are shown to the model as infeasible points") in result.stderr
    jobs = all_jobs(folder)
    assert jobs[1][0] == "failed" and jobs[1][1]["failure"] == "exception" and "reclassified_from" not in jobs[1][1]
    assert [state for state, _ in jobs.values()] == ["failed", "complete", "complete", "complete"]
    assert _status(folder)["finished"] == 4


def test_a_budget_smaller_than_the_streak_still_finds_the_wrapper_bug(make_experiment):
    # Failures held back start new jobs one at a time once the budget would be spent; before,
    # the 2 failures spent it and the run ended "budget reached" with the bug unnamed.
    folder = make_experiment(quick_config(**{"max-finished-jobs": 2, "max-concurrent": 2}),
                             files={"wrapper.py": RENAMED_PARAMETER})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 1 and "this is a bug in the wrapper" in result.stderr, result.stderr
    assert len(all_jobs(folder)) == 3 and _status(folder)["finished"] == 0
