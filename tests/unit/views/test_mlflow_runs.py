"""The MLflow export on folders written as the daemon writes them (job files, report files), read
back with the real MLflow: a late result that turns a failed job complete, two searches of the
same name in one store, ``$MLFLOW_TRACKING_URI``, a refused store, curves with fractional steps."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.experiments import write_finished_experiment
from spearmint_nn.cli import main
from spearmint_nn.errors import ConfigError
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.store import Store
from spearmint_nn.views import mlflow_export


def _open(folder: Path):
    config = load_config(folder, check_driver=False)
    return config, Store(config.paths).load_all()


def _runs(uri: str, name: str = "demo") -> dict[int, object]:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id])
    return {int(run.data.tags[mlflow_export.JOB_ID_TAG]): run for run in runs}


def test_a_curve_with_fractional_steps_is_logged_in_its_order_and_one_of_whole_steps_by_its_steps(tmp_path):
    folder = write_finished_experiment(tmp_path, 2)
    paths = ExperimentPaths(folder)
    paths.reports.mkdir(parents=True, exist_ok=True)
    paths.report_file(1).write_text("0.5 1.0\n1 0.8\n1.5 0.7\n")
    paths.report_file(2).write_text("10 0.9\n# attempt 2\n20 0.6\n")
    runs = {run.job_id: run for run in mlflow_export.job_runs(*_open(folder))}
    assert [(step, value) for step, value, _ in runs[1].curve] == [(0, 1.0), (1, 0.8), (2, 0.7)]
    assert [(step, value) for step, value, _ in runs[2].curve] == [(10, 0.9), (20, 0.6)]
    stamps = [stamp for _, _, stamp in runs[1].curve]
    assert len(set(stamps)) == 3 and stamps == sorted(stamps)  # each point its own, in order


def test_a_late_result_turns_the_failed_run_finished_and_drops_its_failure(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the MLflow export: pip install -e '.[mlflow]'")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    folder = write_finished_experiment(tmp_path, 3)
    paths = ExperimentPaths(folder)
    job = json.loads(paths.job_file("complete", 3).read_text())
    paths.job_file("complete", 3).unlink()
    failed = {key: value for key, value in job.items() if key not in ("values", "value", "started", "ended", "host")}
    failed.update(state="failed", failure="no_result", reason="the job ended without a result file")
    paths.job_file("failed", 3).write_text(json.dumps(failed))

    uri, _, counts = mlflow_export.export(*_open(folder))
    assert uri == f"sqlite:///{folder.resolve() / 'mlflow.db'}"
    assert (counts.created, counts.updated, counts.unchanged) == (3, 0, 0)
    run = _runs(uri)[3]
    assert run.info.status == "FAILED" and run.data.tags["spearmint_nn.failure"] == "no_result"
    assert "loss" not in run.data.metrics

    paths.job_file("failed", 3).unlink()  # the result came late: the job is complete after all
    paths.job_file("complete", 3).write_text(json.dumps(job))
    _, _, counts = mlflow_export.export(*_open(folder))
    assert (counts.created, counts.updated, counts.unchanged) == (0, 1, 2)
    run = _runs(uri)[3]
    assert run.info.status == "FINISHED" and run.data.metrics["loss"] == pytest.approx(job["value"])
    assert "spearmint_nn.failure" not in run.data.tags and "spearmint_nn.reason" not in run.data.tags
    assert run.data.tags["spearmint_nn.state"] == "complete"
    assert run.data.params["w.1"] == str(job["params"]["w"][1])  # a vector variable, one param per element


def test_another_search_of_the_same_name_is_refused_before_anything_is_written(tmp_path):
    MlflowClient = pytest.importorskip("mlflow", reason="the MLflow export: pip install -e '.[mlflow]'").MlflowClient
    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    first = write_finished_experiment(tmp_path / "a", 3)
    mlflow_export.export(*_open(first), uri)
    second = write_finished_experiment(tmp_path / "b", 5, seed=1)  # also named "demo", created later
    paths = ExperimentPaths(second)
    for job_id in range(1, 6):
        job = json.loads(paths.job_file("complete", job_id).read_text())
        paths.job_file("complete", job_id).write_text(json.dumps({**job, "created": job["created"] + 3600}))
    with pytest.raises(ConfigError, match="experiment-name.*another search"):
        mlflow_export.export(*_open(second), uri)
    runs = _runs(uri)
    assert sorted(runs) == [1, 2, 3]
    experiment = MlflowClient(uri).get_experiment_by_name("demo")
    assert experiment.tags[mlflow_export.FOLDER_TAG] == str(first.resolve())
    first_params = json.loads(ExperimentPaths(first).job_file("complete", 1).read_text())["params"]
    assert runs[1].data.params["lr"] == str(first_params["lr"][0])


def test_mlflow_tracking_uri_names_the_store_when_the_command_names_none(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the MLflow export: pip install -e '.[mlflow]'")
    folder = write_finished_experiment(tmp_path, 2)
    uri = f"sqlite:///{tmp_path / 'team.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert mlflow_export.export(*_open(folder))[0] == uri
    assert sorted(_runs(uri)) == [1, 2]
    assert not (folder / "mlflow.db").exists()


def test_a_store_mlflow_refuses_is_one_line_and_exit_1(tmp_path, capsys):
    pytest.importorskip("mlflow", reason="the MLflow export: pip install -e '.[mlflow]'")
    folder = write_finished_experiment(tmp_path, 1)
    assert main(["export", str(folder), "--mlflow", "nosuchscheme://store"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("spearmint-nn: MLflow: ") and "nosuchscheme" in err[0]
