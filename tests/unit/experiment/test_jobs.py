"""The job record: its file form round trips, its rules, and a finished job never changes state."""
from __future__ import annotations

import json

import pytest

from spearmint_nn.experiment.jobs import FINAL_STATES, IllegalTransition, Job, JobState, best_job, best_summary
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.store import Store


def _complete(job_id: int, loss: float, mem: float = 1.0) -> Job:
    return Job(job_id, JobState.COMPLETE, {"x": [float(job_id)]},
               {"source": "optimizer", "values": {"loss": loss, "mem": mem}, "value": loss, "finished": 1e9 + job_id})


def test_the_file_form_round_trips_with_unknown_fields_and_explicit_nulls():
    raw = {"id": 4, "state": "running", "params": {"x": [0.5]}, "source": "user", "created": 1.5,
           "driver": "slurm", "scheduler_id": None, "submitting": 2.0, "a_field_of_a_later_version": [1]}
    job = Job.from_json(raw)
    assert job.state is JobState.RUNNING and job.scheduler_id is None and job.driver == "slurm"
    assert job.to_json() == raw and list(job.to_json()) == list(raw)  # same keys, same order
    assert json.loads(json.dumps(job.to_json()))["state"] == "running" and f"{job.state}" == "running"


def test_rules_budget_feasibility_and_best():
    failed_lost = Job(5, JobState.FAILED, {}, {"failure": "lost"})
    failed_cancelled = Job(6, JobState.FAILED, {}, {"failure": "cancelled"})
    ignored = {"cancelled"}
    assert failed_lost.counts_toward_budget(ignored) and not failed_cancelled.counts_toward_budget(ignored)
    assert not Job(7, JobState.RUNNING, {}).counts_toward_budget(ignored)
    # Until a job has succeeded, a failure of the wrapper's code is held back; a lost job is not.
    raised = Job(8, JobState.FAILED, {}, {"failure": "exception"})
    assert raised.held_back(any_success=False) and not raised.held_back(any_success=True)
    assert not failed_lost.held_back(any_success=False)
    jobs = [_complete(1, 3.0), _complete(2, 1.0, mem=-0.1), _complete(3, 2.0), _complete(4, 2.0), failed_lost]
    assert not jobs[1].is_feasible("loss", ["mem"]) and jobs[1].is_feasible("loss", [])
    assert best_job(jobs, "loss", ["mem"]).id == 3  # job 2 violates mem >= 0; ties go to the lower id
    assert best_job(jobs, "loss", []).id == 2
    assert best_summary(jobs[2]) == {"id": 3, "value": 2.0, "values": {"loss": 2.0, "mem": 1.0},
                                     "params": {"x": [3.0]}, "duration": None, "finished": 1e9 + 3}
    nan = Job(8, JobState.COMPLETE, {}, {"value": float("nan"), "values": {"loss": float("nan")}})
    assert nan.objective_value("loss") is None and not nan.is_feasible("loss", [])


def test_a_finished_job_never_changes_state_and_the_store_refuses_it(tmp_path):
    store = Store(ExperimentPaths(tmp_path))
    store.create_dirs()
    job = store.new_job({"x": [1.0]}, "optimizer")
    store.move(job.id, JobState.RUNNING, scheduler_id=None, submitting=1.0)
    again = store.move(job.id, "running", scheduler_id="77")  # submitted anew after a crash
    assert again.scheduler_id == "77" and store.paths.job_file("running", job.id).exists()
    store.move(job.id, JobState.COMPLETE, values={"loss": 1.0}, value=1.0)
    for state in JobState:
        with pytest.raises(IllegalTransition, match=f"job {job.id} cannot go from complete to {state.value}"):
            store.move(job.id, state)
    assert store.get(job.id).state is JobState.COMPLETE
    assert json.loads(store.paths.job_file("complete", job.id).read_text())["state"] == "complete"
    assert [p.name for p in store.paths.job_dir("running").iterdir()] == []


def test_a_job_failed_for_want_of_its_result_is_decided_by_the_result_that_comes_late(tmp_path):
    """The one change of a finished job: failed because no result file was to be seen when the
    scheduler said it ended, it becomes what the late result says, once; other failures stay."""
    store = Store(ExperimentPaths(tmp_path))
    store.create_dirs()
    waiting, other, legacy = (store.new_job({"x": [float(i)]}, "optimizer").id for i in range(3))
    for job_id in (waiting, other, legacy):
        store.move(job_id, JobState.RUNNING, scheduler_id=str(job_id))
    store.move(waiting, JobState.FAILED, failure="no_result", reason="completed", stderr_tail="",
               finished=2.0, ended_without_result=1.0)
    store.move(other, JobState.FAILED, failure="exception", reason="boom", finished=2.0)
    store.move(legacy, JobState.FAILED, failure="lost", reason="the scheduler has no record", finished=2.0)
    assert [store.get(i).awaits_result for i in (waiting, other, legacy)] == [True, False, True]
    with pytest.raises(IllegalTransition):
        store.move(other, JobState.COMPLETE, values={"loss": 1.0}, value=1.0)
    for job_id in (waiting, other, legacy):
        with pytest.raises(IllegalTransition):  # a result decides it, nothing else sends it back
            store.move(job_id, JobState.RUNNING)

    done = store.move(waiting, JobState.COMPLETE, values={"loss": 1.0}, value=1.0, finished=3.0)
    assert done.state is JobState.COMPLETE and not done.awaits_result
    assert "failure" not in done.fields and "ended_without_result" not in done.fields
    assert done.fields["late_result"] == {"failure": "no_result", "reason": "completed", "ended": 1.0}
    assert json.loads(store.paths.job_file("complete", waiting).read_text())["value"] == 1.0
    assert not store.paths.job_file("failed", waiting).exists() and store.counts()["complete"] == 1
    with pytest.raises(IllegalTransition):
        store.move(waiting, JobState.FAILED, failure="no_result", reason="again")

    raised = store.move(legacy, JobState.FAILED, failure="exception", reason="ValueError: x", location="w.py:3")
    assert (raised.failure, raised.location, raised.awaits_result) == ("exception", "w.py:3", False)
    assert raised.fields["late_result"]["failure"] == "lost"
    with pytest.raises(IllegalTransition):
        store.move(legacy, JobState.COMPLETE, values={"loss": 2.0}, value=2.0)


def test_a_stopped_job_is_final_and_counts_once_against_the_budget(tmp_path):
    """Early stopping's state: finished like complete and failed, never changed by a result that
    its runner wrote after the cancel, counted against max-finished-jobs and never a failure."""
    store = Store(ExperimentPaths(tmp_path))
    store.create_dirs()
    assert store.paths.job_dir("stopped").is_dir()
    job = store.new_job({"x": [1.0]}, "optimizer")
    store.move(job.id, JobState.RUNNING, scheduler_id="42")
    stopped = store.move(job.id, JobState.STOPPED, stopped_reason="median rule: ...", finished=3.0,
                         reports=4, last_step=4, last_value=0.9)
    assert stopped.state.finished and stopped.state in FINAL_STATES and not stopped.awaits_result
    assert stopped.counts_toward_budget(set()) and not stopped.held_back(any_success=False)
    assert store.finished_count(()) == 1 and store.counts()["stopped"] == 1
    for state in JobState:  # a late result makes it neither complete nor failed
        with pytest.raises(IllegalTransition, match=f"job {job.id} cannot go from stopped to {state.value}"):
            store.move(job.id, state, values={"loss": 0.1}, value=0.1)
    reloaded = Store(store.paths).load_all()
    assert reloaded.get(job.id).state is JobState.STOPPED and reloaded.finished_count(()) == 1
    assert reloaded.get(job.id).fields["stopped_reason"] == "median rule: ..."
