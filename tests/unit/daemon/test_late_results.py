"""The daemon's watch over jobs failed for want of a result file: one listing of results/ per
poll finds the files that came late, without a stat per waiting job (the daemon end to end is
in tests/system/test_faults_fs.py)."""
from __future__ import annotations

import os

import pytest

from spearmint_nn.daemon.events.late_results import LateResults, arrival_line
from spearmint_nn.experiment.jobs import JobState
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.results import JobResult, ResultStatus
from spearmint_nn.experiment.store import Store


@pytest.fixture
def store(tmp_path) -> Store:
    store = Store(ExperimentPaths(tmp_path))
    store.create_dirs()
    return store


def _failed(store: Store, failure: str, **fields) -> int:
    job_id = store.new_job({"x": [0.5]}, "optimizer").id
    store.move(job_id, JobState.RUNNING, scheduler_id=str(job_id))
    store.move(job_id, JobState.FAILED, failure=failure, reason="completed", finished=1.0, **fields)
    return job_id


def _write_result(store: Store, job_id: int) -> None:
    JobResult(id=job_id, status=ResultStatus.OK, values={"main": 1.5}).write(store.paths.result_file(job_id))


@pytest.fixture
def listings(monkeypatch) -> list[str]:
    """Every os.listdir call, and every os.stat of a file in results/."""
    calls: list[str] = []
    real_listdir, real_stat = os.listdir, os.stat

    def listdir(path="."):
        calls.append(f"listdir {os.path.basename(path)}")
        return real_listdir(path)

    def stat(path, *args, **kwargs):
        if os.path.basename(os.path.dirname(str(path))) == "results":
            calls.append(f"stat {os.path.basename(str(path))}")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "stat", stat)
    return calls


def test_one_listing_finds_the_results_that_came_for_waiting_jobs(store, listings):
    waiting = [_failed(store, "no_result", ended_without_result=100.0) for _ in range(3)]
    timed_out = _failed(store, "timeout", ended_without_result=100.0)
    raised = _failed(store, "exception")  # recorded from its result: not waiting for one
    _write_result(store, waiting[1])
    _write_result(store, timed_out)
    _write_result(store, raised)
    late = LateResults(store)
    listings.clear()
    found = late.arrived()
    assert [job.id for job, _ in found] == [waiting[1], timed_out]
    assert listings == ["listdir results"]  # no stat of the jobs still waiting
    assert "recorded in place of the failure no_result" in found[0][1]
    assert "recorded in place of the failure timeout" in found[1][1]


def test_nothing_is_listed_while_no_job_waits_unless_asked(store, listings):
    late = LateResults(store)
    _failed(store, "exception")
    listings.clear()
    assert late.arrived() == [] and listings == []
    assert late.arrived(refresh=True) == [] and listings == ["listdir results"]


def test_a_result_file_that_cannot_be_read_yet_is_left_for_a_later_poll(store):
    job_id = _failed(store, "lost")  # an older daemon's mark: the failure kind alone
    store.paths.result_file(job_id).write_text('{"id": ')
    late = LateResults(store)
    assert late.arrived() == []
    _write_result(store, job_id)
    assert [job.id for job, _ in late.arrived()] == [job_id]


def test_the_line_says_how_late_and_whether_a_daemon_was_watching(store):
    job = store.get(_failed(store, "no_result", ended_without_result=1000.0))
    assert arrival_line(job, 1095.2) == (
        f"job {job.id}: its result arrived 95 s after the scheduler said it ended (a shared filesystem "
        "showing it late); recorded in place of the failure no_result")
    assert arrival_line(job, 1000.0 + 7200, first_poll=True) == (
        f"job {job.id}: its result was found 120 min after the scheduler said it ended (a shared filesystem "
        "showing it late, or no daemon running meanwhile); recorded in place of the failure no_result")
    first = LateResults(store)
    _write_result(store, job.id)
    assert "was found" in first.arrived()[0][1]
    assert "arrived" in first.arrived()[0][1]
