"""``spearmint-nn export DIR --mlflow`` against the real MLflow, on a folder the real daemon filled
with the local driver: jobs that report learning curves, one that fails, one still running at the
first export. What MLflow holds is read back with its own client and compared with the job
records; exporting again adds no duplicate run and no duplicate curve point, and takes in what
finished in between."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.experiments import all_jobs, cli, quick_config, start_daemon, wait_for, write_experiment
from spearmint_nn.experiment.curves import read_curve
from spearmint_nn.experiment.layout import ExperimentPaths

mlflow = pytest.importorskip("mlflow", reason="the MLflow export: pip install -e '.[mlflow]'")
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import ViewType  # noqa: E402

STEPS = 3
HELD_JOB, HELD_STEP = 4, 2  # job 4 waits after its 2nd report until the test creates "go"
FAILING_JOB = 2

WRAPPER = f"""
import os, time
from spearmint_nn import job

def main(job_id, params):
    x = float(params["x"][0])
    if job_id == {FAILING_JOB}:
        raise ValueError("job {FAILING_JOB} fails on purpose")
    for step in range(1, {STEPS} + 1):
        job.report(step, x + 1.0 / step)
        if job_id == {HELD_JOB} and step == {HELD_STEP}:
            deadline = time.time() + 240
            while not os.path.exists("go") and time.time() < deadline:
                time.sleep(0.1)
    return {{"main": x + 1.0 / {STEPS}, "c": 1.0 - abs(x)}}
"""
NAME = "branin-export"


def _export(folder: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}
    proc = cli("export", folder, "--mlflow", env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def _runs(folder: Path) -> dict[int, "mlflow.entities.Run"]:
    """job id -> its run, asserting one run per job."""
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(NAME)
    runs = client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL)
    ids = [int(run.data.tags["spearmint_nn.job_id"]) for run in runs]
    assert len(ids) == len(set(ids)), f"duplicate runs: {sorted(ids)}"
    return {int(run.data.tags["spearmint_nn.job_id"]): run for run in runs}


def _curve(folder: Path, run) -> list[tuple[int, float]]:
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    history = client.get_metric_history(run.info.run_id, "learning_curve")
    return [(m.step, m.value) for m in sorted(history, key=lambda m: m.timestamp)]


def _check_runs_match_the_jobs(folder: Path) -> dict[int, object]:
    jobs = all_jobs(folder, live=True)
    runs = _runs(folder)
    assert sorted(runs) == sorted(jobs)
    paths = ExperimentPaths(folder)
    status = {"complete": "FINISHED", "failed": "FAILED", "running": "RUNNING", "pending": "SCHEDULED"}
    for job_id, (state, job) in jobs.items():
        run = runs[job_id]
        tags, metrics = run.data.tags, run.data.metrics
        assert run.info.status == status[state] and tags["spearmint_nn.state"] == state
        assert run.info.run_name == f"job {job_id}"
        assert run.data.params == {"x": str(job["params"]["x"][0]), "y": str(job["params"]["y"][0])}
        expected_curve = [(p.step, p.value) for p in read_curve(paths.report_file(job_id))]
        assert _curve(folder, run) == pytest.approx(expected_curve)
        if state == "complete":
            assert metrics["main"] == pytest.approx(job["values"]["main"])
            assert metrics["c"] == pytest.approx(job["values"]["c"])
            assert metrics["duration_s"] == pytest.approx(job["duration"])
            assert metrics["attempts"] == len(job["attempts"])
            assert tags["spearmint_nn.feasible"] == ("yes" if job["values"]["c"] >= 0 else "no")
            assert run.info.end_time == int(job["finished"] * 1000)
        else:
            assert "main" not in metrics
        assert ("spearmint_nn.failure" in tags) == (state == "failed")
    return runs


def test_export_writes_each_job_once_and_updates_runs_as_jobs_finish(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(**{
        "experiment-name": NAME, "tasks": {"main": "OBJECTIVE", "c": "CONSTRAINT"},
        "max-finished-jobs": 5, "max-concurrent": 1, "polling-time": 0.3}), {"wrapper.py": WRAPPER})
    daemon = start_daemon(folder)
    try:
        wait_for(lambda: (jobs := all_jobs(folder, live=True)).get(HELD_JOB, ("",))[0] == "running"
                 and jobs[HELD_JOB][1].get("last_step") == HELD_STEP, 180,
                 f"job {HELD_JOB} running at step {HELD_STEP}")
        first = _export(folder)
        assert "4 runs created, 0 updated, 0 up to date" in first.stdout, first.stdout
        assert f"mlflow ui --backend-store-uri sqlite:///{folder.resolve() / 'mlflow.db'}" in first.stdout
        runs = _check_runs_match_the_jobs(folder)
        failed = runs[FAILING_JOB].data.tags
        job = all_jobs(folder, live=True)[FAILING_JOB][1]
        assert failed["spearmint_nn.failure"] == job["failure"] == "exception"
        assert failed["spearmint_nn.reason"] == job["reason"] and "fails on purpose" in job["reason"]
        held = runs[HELD_JOB]
        assert held.info.status == "RUNNING" and [step for step, _ in _curve(folder, held)] == [1, 2]

        again = _export(folder)  # nothing new: every run up to date, none added
        assert "0 runs created, 0 updated, 4 up to date" in again.stdout, again.stdout
        assert len(_runs(folder)) == 4

        (folder / "go").touch()
        assert daemon.wait(timeout=240) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    last = _export(folder)
    assert "1 runs created, 1 updated, 3 up to date" in last.stdout, last.stdout
    runs = _check_runs_match_the_jobs(folder)
    assert sorted(runs) == [1, 2, 3, 4, 5]
    held = runs[HELD_JOB]
    assert held.info.status == "FINISHED" and [step for step, _ in _curve(folder, held)] == [1, 2, 3]
    assert MlflowClient(f"sqlite:///{folder / 'mlflow.db'}").get_experiment_by_name(NAME).artifact_location \
        == (folder.resolve() / "mlartifacts").as_uri()


def test_without_mlflow_the_command_says_how_to_install_it(make_experiment):
    folder = make_experiment()
    block = ("import sys\n"
             "sys.modules['mlflow'] = None  # as if it were not installed: importing it fails\n"
             "from spearmint_nn.cli import main\n"
             f"sys.exit(main(['export', {str(folder)!r}, '--mlflow']))\n")
    proc = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "spearmint-nn: export --mlflow needs the mlflow package: "
        "pip install 'spearmint-nn[mlflow]' (in a clone: pip install -e '.[mlflow]')"]
    assert not (folder / "mlflow.db").exists()
