"""The model's own picture, end to end: the daemon runs the Branin example, writes what its GP
says, and the report draws importance, slices and a contour whose minimum is Branin's."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views import job_plots, model_plots, plots, run_plots
from spearmint_nn.views.status import take_snapshot
from helpers.experiments import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "experiments" / "branin"
BRANIN_MINIMA = [(-math.pi, 12.275), (math.pi, 2.275), (9.42478, 2.475)]


@pytest.fixture(scope="module")
def branin_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("picture") / "branin"
    shutil.copytree(EXAMPLE, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update({"seed": 0, "polling-time": 0.2, "max-finished-jobs": 40})
    (folder / "config.json").write_text(json.dumps(config))
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    return folder


@pytest.mark.slow
def test_the_contour_of_the_model_finds_a_branin_minimum_after_40_jobs(branin_run):
    snap = take_snapshot(branin_run)
    picture = model_plots.read_picture(ExperimentPaths(branin_run))
    assert picture is not None and picture["observations"] == 40 and picture["model"] == "gp"
    keys = [s.key for s in plots.sections(snap)]
    assert keys[keys.index("landing") + 1:keys.index("landing") + 4] == ["importance", "slices", "contour"]

    fig = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "contour"))
    ax = fig.axes[0]
    minimum = next(c for c in ax.collections if c.get_label() == "the mean's minimum").get_offsets()[0]
    if picture["contour"]["x_name"] == "y":  # the more important parameter goes on the horizontal axis
        minimum = minimum[::-1]
    assert ax.get_xlabel() == picture["contour"]["x_name"]
    distance = min(math.dist(minimum, m) for m in BRANIN_MINIMA)
    assert distance < 1.0, (minimum, distance)  # the grid's step is 0.625
    jobs = next(c for c in ax.collections if c.get_label() == "finished jobs").get_offsets()
    assert len(jobs) == 40

    fig = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "importance"))
    bars = [p.get_width() for p in fig.axes[0].patches]
    assert len(bars) == 2 and all(0.05 < b < 1 for b in bars)  # both of Branin's inputs matter

    fig = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "slices"))
    x_slice = fig.axes[0].lines[0]
    assert fig.axes[0].get_xlabel() == "x" and len(x_slice.get_xdata()) == 41
    best = snap.best.objective_value(snap.objective)
    assert np.min(x_slice.get_ydata()) == pytest.approx(best, abs=2.0)  # through the best point


@pytest.mark.slow
def test_a_real_job_records_its_queue_start_up_and_run(branin_run):
    phases = run_plots.job_phases(take_snapshot(branin_run))
    assert len(phases.run) == 40 and np.isfinite(phases.startup).all()
    # a local job's process starts as it is submitted; the interpreter and imports take a moment
    assert (phases.queue >= 0).all() and np.median(phases.queue) < 5
    assert (phases.startup > 0).all() and np.median(phases.startup) < 30


@pytest.mark.slow
def test_the_html_report_embeds_the_models_picture(branin_run, tmp_path):
    report = tmp_path / "report.html"
    result = cli("report", branin_run, "--html", report, "--optimum", "0.397887")
    assert result.returncode == 0, result.stderr
    html = report.read_text()
    for key in ("importance", "slices", "contour", "phases"):
        assert f'id="plot-{key}"' in html


def _run_example(root: Path, name: str, jobs: int) -> Path:
    folder = root / name
    shutil.copytree(EXAMPLE.parent / name, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update({"seed": 0, "polling-time": 0.2, "max-finished-jobs": jobs})
    (folder / "config.json").write_text(json.dumps(config))
    result = cli("run", folder, timeout=900)
    assert result.returncode == 0, result.stderr
    return folder


@pytest.mark.slow
def test_a_conditional_noisy_search_is_drawn_whole(tmp_path):
    folder = _run_example(tmp_path, "conditional_mlp", 20)
    snap = take_snapshot(folder)
    keys = [s.key for s in plots.sections(snap)]
    assert {"convergence", "parameters", "coordinates", "landing", "importance", "slices", "phases"} <= set(keys)
    assert "warning" not in (folder / ".spearmint" / "daemon.log").read_text()  # the picture did not fail
    picture = model_plots.read_picture(ExperimentPaths(folder))
    assert [i["name"] for i in picture["importance"]][:3] == ["layers", "width_1", "dropout_1"]
    best = snap.best.params
    assert {cut["name"] for cut in picture["slices"]} <= set(best)  # slices only through active parameters
    # the jobs with one layer have no width_3: their lines break there
    coordinates = job_plots.coordinates(snap)
    width_3 = coordinates.labels.index("width_3")
    one_layer = np.array([job.params["layers"][0] < 3 for job in coordinates.out.jobs])
    assert np.isnan(coordinates.positions[one_layer, width_3]).all()
    assert np.isfinite(coordinates.positions[~one_layer, width_3]).all()
    fig = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "landing"))
    assert "first 8 of 9 parameters" in fig.get_suptitle()
    # a noisy objective: the model's best beside the best observed
    convergence = plots.section_figure(plots.sections(snap)[0]).axes[0]
    assert any(label.startswith("best by the model's posterior mean") for label in
               convergence.get_legend_handles_labels()[1])


def test_a_malformed_picture_is_left_out(tmp_path):
    from helpers.experiments import write_finished_experiment

    exp = write_finished_experiment(tmp_path, 10)
    paths = ExperimentPaths(exp)
    paths.model_picture.parent.mkdir(parents=True)
    for text in ("{", json.dumps({"importance": [{"name": "x"}], "slices": []}),
                 json.dumps({"importance": [{"name": "x", "mean": 0.5, "std": 0.1}],
                             "slices": [{"name": "x", "x": [1, 2], "mean": [1], "low": [1], "high": [1]}]})):
        paths.model_picture.write_text(text)
        assert model_plots.read_picture(paths) is None
        assert "importance" not in [s.key for s in plots.sections(take_snapshot(exp))]
