"""The daemon's early stopping on a real store, real report files and the real local driver
cancelling real processes: the policy (spearmint_nn.daemon.policies.early_stopping) decides and the owner
of job ends (spearmint_nn.daemon.job_ends) applies its decisions. A job the rule stops is
cancelled and recorded ``stopped`` with its curve and why; a job whose result file is already
there is left to be recorded; a job is judged again only once its curve grew; without the key
nothing happens (the daemon end to end: tests/system/test_early_stopping.py)."""
from __future__ import annotations

import io
import json
import subprocess
import time

import pytest

from drivers.local import LocalDriver
from spearmint_nn.processes import process_stat
from helpers.experiments import quick_config, write_experiment
from spearmint_nn.daemon.policies.early_stopping import EarlyStopping
from spearmint_nn.daemon.job_ends import JobEnds
from spearmint_nn.daemon.events.curves import CurveReader
from spearmint_nn.daemon.event_log import EventLog
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.jobs import JobState
from spearmint_nn.experiment.store import Store

WRAPPER = {"wrapper.py": "def main(job_id, params):\n    return 0.0\n"}
# Two complete jobs whose bests by step 2 are 0.6 and 0.7: the median is 0.65.
COMPLETE = {0.1: [(1, 1.1), (2, 0.6), (3, 0.2)], 0.2: [(1, 1.2), (2, 0.7), (3, 0.3)]}


@pytest.fixture
def processes():
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _setup(tmp_path, early_stopping):
    config = quick_config(**({"early-stopping": early_stopping} if early_stopping else {}))
    config = load_config(write_experiment(tmp_path / "exp", config, WRAPPER), check_driver=False)
    store = Store(config.paths)
    store.create_dirs()
    config.paths.reports.mkdir()
    for x, points in COMPLETE.items():
        job = store.new_job({"x": [x], "y": [0.0]}, "optimizer")
        _write_curve(store, job.id, points)
        store.move(job.id, JobState.RUNNING, driver="local", scheduler_id="1:1")
        store.move(job.id, JobState.COMPLETE, values={"main": points[-1][1]}, value=points[-1][1])
    reporter = EventLog(None, io.StringIO())
    curves = CurveReader(store, reporter)
    driver = LocalDriver({}, config.paths.state)
    shown: list[int] = []  # the ids of the jobs shown to the model

    def tell(job_id, params, value, duration):
        shown.append(job_id)

    ends = JobEnds(config, store, driver, reporter, curves, tell=tell)
    ends.shown = shown
    return config, store, curves, Stopping(store, EarlyStopping(config, curves.curve), ends)


class Stopping:
    """The daemon's early stopping as its loop runs it: the policy's decisions, applied."""

    def __init__(self, store: Store, policy: EarlyStopping, ends: JobEnds):
        self.store, self.policy, self.ends = store, policy, ends

    def poll(self):
        running = [job for job in self.store.jobs(JobState.RUNNING) if job.scheduler_id is not None]
        return self.ends.stop(self.policy.decide(running, self.store.jobs()))

    def points(self):
        return self.ends.unshown_points()


def _write_curve(store: Store, job_id: int, points) -> None:
    with open(store.paths.report_file(job_id), "a") as handle:
        handle.writelines(f"{step} {value}\n" for step, value in points)


def _running(store: Store, processes: list, points) -> tuple[int, subprocess.Popen]:
    """A running job whose "process" is a real sleep in a process group of its own, as the local
    driver starts a runner, with its curve so far."""
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    processes.append(proc)
    job = store.new_job({"x": [0.5], "y": [0.0]}, "optimizer")
    store.move(job.id, JobState.RUNNING, driver="local", scheduler_id=f"{proc.pid}:{process_stat(proc.pid)[1]}")
    _write_curve(store, job.id, points)
    return job.id, proc


def test_a_job_the_rule_stops_is_cancelled_and_recorded_stopped(tmp_path, processes):
    config, store, curves, early = _setup(tmp_path, {"rule": "median", "min-jobs": 2, "min-steps": 2})
    bad, bad_proc = _running(store, processes, [(1, 3.0)])
    good, good_proc = _running(store, processes, [(1, 0.9), (2, 0.5)])
    assert curves.poll()
    assert early.poll() == []  # the bad job's step 1 is below min-steps
    _write_curve(store, bad, [(2, 2.5)])
    assert curves.poll()
    assert [job.id for job in early.poll()] == [bad]  # best 2.5 by step 2 > the median 0.65
    assert bad_proc.wait(timeout=30) != 0 and good_proc.poll() is None
    record = json.loads(store.paths.job_file("stopped", bad).read_text())
    assert record["state"] == "stopped" and record["stopped_step"] == 2
    assert (record["reports"], record["last_step"], record["last_value"]) == (2, 2, 2.5)
    assert record["stopped_reason"] == ("median rule: its best value 2.5 by step 2 is worse than the median 0.65 "
                                        "of 2 complete jobs at that step")
    assert store.get(good).state is JobState.RUNNING
    assert early.points() == [store.get(bad).params]  # handed to the optimizer as pending
    assert store.finished_count(config.ignored_failures) == 3


def test_a_job_stopped_past_three_complete_curves_is_shown_to_the_model_at_its_predicted_value(tmp_path, processes):
    config, store, curves, early = _setup(tmp_path, {"rule": "median", "min-jobs": 2, "min-steps": 2})
    third = store.new_job({"x": [0.3], "y": [0.0]}, "optimizer")
    _write_curve(store, third.id, [(1, 1.3), (2, 0.8), (3, 0.5)])
    store.move(third.id, JobState.RUNNING, driver="local", scheduler_id="1:1")
    store.move(third.id, JobState.COMPLETE, values={"main": 0.5}, value=0.5)
    bad, bad_proc = _running(store, processes, [(1, 3.0), (2, 2.5)])
    assert curves.poll()
    stopped = early.poll()
    assert [job.id for job in stopped] == [bad] and bad_proc.wait(timeout=30) != 0
    # the complete jobs moved -0.4, -0.4 and -0.3 after step 2: 2.5 + their mean
    record = json.loads(store.paths.job_file("stopped", bad).read_text())
    assert record["predicted_values"]["main"] == pytest.approx(2.5 - 1.1 / 3)
    assert record["predicted_sd"] == pytest.approx(0.0577, abs=1e-4) and record["predicted_from_jobs"] == 3
    assert stopped[0].predicted_values == record["predicted_values"] and early.ends.shown == [bad]
    assert early.points() == []  # observed at that value, not pending


def test_a_job_is_judged_again_only_when_its_curve_grew_and_a_finished_one_is_left_alone(tmp_path, processes):
    config, store, curves, early = _setup(tmp_path, {"rule": "median", "min-jobs": 2})
    waiting, waiting_proc = _running(store, processes, [(1, 0.5), (2, 0.5)])
    done, done_proc = _running(store, processes, [(1, 5.0), (2, 5.0)])
    store.paths.result_file(done).write_text("{}")  # it has finished: the loop records it
    assert curves.poll()
    assert early.poll() == [] and done_proc.poll() is None
    # job 4 (0.5, kept) is not judged again at the next poll: nothing new in its curve, and the
    # complete jobs changing changes nothing until it reports again
    store.update(1, value=0.0)
    assert not curves.poll() and early.poll() == []
    _write_curve(store, waiting, [(3, 0.45)])
    curves.poll()
    assert [job.id for job in early.poll()] == [waiting]  # 0.45 by step 3 > the median 0.25 of 0.2 and 0.3
    assert waiting_proc.wait(timeout=30) != 0


def test_without_the_key_no_job_is_judged(tmp_path, processes):
    config, store, curves, early = _setup(tmp_path, None)
    job_id, proc = _running(store, processes, [(1, 9.0), (2, 9.0), (3, 9.0)])
    assert curves.poll()
    assert early.poll() == [] and early.points() == []
    time.sleep(0.2)
    assert proc.poll() is None and store.get(job_id).state is JobState.RUNNING
