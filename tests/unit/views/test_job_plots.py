"""Where the jobs landed: parallel coordinates and the scatter matrix show each job where it is."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from matplotlib.collections import LineCollection, PathCollection

from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views import job_plots, plots
from spearmint_nn.views.status import take_snapshot
from helpers.experiments import write_finished_experiment as write_experiment

torch.set_num_threads(1)


def _section(snap, key):
    return plots.section_figure(next(s for s in plots.sections(snap) if s.key == key))


def test_each_job_sits_on_every_axis_at_its_own_value(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 40, failures=True, constraint=True))
    data = job_plots.coordinates(snap)
    assert data.labels == ["lr", "layers", "act", "w[0]", "w[1]", "loss"]
    out = data.out
    lr = np.array([job.params["lr"][0] for job in out.jobs])
    np.testing.assert_allclose(data.positions[:, 0], np.log10(lr / 1e-5) / 5)  # a log axis
    layers = np.array([job.params["layers"][0] for job in out.jobs])
    np.testing.assert_allclose(data.positions[:, 1], (layers - 1) / 7)
    act = [job.params["act"][0] for job in out.jobs]
    np.testing.assert_allclose(data.positions[:, 2], [["relu", "tanh", "gelu"].index(a) / 2 for a in act])
    assert np.isnan(data.positions[out.failed, -1]).all()  # a failed job's line stops before the objective
    values = data.positions[~out.failed, -1]
    assert values.min() >= 0 and values.max() <= 1
    lo, hi = data.value_range
    np.testing.assert_allclose(data.positions[~out.failed, -1] * (hi - lo) + lo, out.values[~out.failed])


def test_parallel_coordinates_colour_feasible_jobs_by_value_with_the_best_on_top(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 40, failures=True, constraint=True))
    out = job_plots.coordinates(snap).out
    ax = _section(snap, "coordinates").axes[0]
    collections = [c for c in ax.collections if isinstance(c, LineCollection) and len(c.get_segments()) > 0
                   and len(c.get_segments()[0]) == 6]
    coloured = next(c for c in collections if c.get_array() is not None)
    drawn = np.asarray(coloured.get_array())
    np.testing.assert_allclose(np.sort(drawn)[::-1], drawn)  # worst first: the best drawn last, on top
    feasible = np.sort(out.values[out.feasible])
    np.testing.assert_allclose(np.sort(drawn), np.arange(len(feasible)) / (len(feasible) - 1))  # by rank
    labels = ax.get_legend_handles_labels()[1]
    assert "failed, no value (5)" in labels
    assert f"constraint violated ({int(out.infeasible.sum())})" in labels
    assert f"best job {snap.best.id} ({snap.best.value:.6g})" in labels
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "loss"
    assert ax.get_xticklabels()[0].get_text() == "lr (log scale)"


def _set_losses(experiment, losses):
    """Give the complete jobs of ``experiment`` these objective values, in id order."""
    paths = ExperimentPaths(experiment)
    for job_file, loss in zip(sorted(paths.job_dir("complete").glob("*.json")), losses):
        job = json.loads(job_file.read_text())
        job["value"], job["values"] = loss, {"loss": loss}
        job_file.write_text(json.dumps(job))


def test_the_best_jobs_stand_out_in_colour_when_the_poor_ones_are_far_off(tmp_path):
    # a classifier's validation loss: most jobs learn (0.05-0.3), some sit at chance (2.3)
    exp = write_experiment(tmp_path, 40)
    _set_losses(exp, [2.3] * 12 + list(np.linspace(0.05, 0.3, 28)))
    snap = take_snapshot(exp)
    for key in ("coordinates", "landing"):
        fig = _section(snap, key)
        coloured = next(c for ax in fig.axes for c in ax.collections if c.get_array() is not None)
        shade = coloured.norm(np.asarray(coloured.get_array(), float))
        good = np.sort(shade)[:28]  # the 28 jobs that learned
        assert good.max() - good.min() > 0.5, key  # spread over the colour map, not one colour
        bar = fig.axes[-1]
        assert bar.get_ylabel() == "loss (lower is better), coloured by rank"
        assert [t.get_text() for t in bar.get_yticklabels()][0] == "0.05"


def test_the_objective_axis_is_labelled_with_the_lowest_and_highest_values(tmp_path):
    exp = write_experiment(tmp_path, 20)
    _set_losses(exp, list(np.linspace(0.02, 1.5, 20)))  # a loss: never below zero
    snap = take_snapshot(exp)
    assert job_plots.coordinates(snap).value_range == (0.02, 1.5)
    ax = _section(snap, "coordinates").axes[0]
    last_axis = len(job_plots.coordinates(snap).labels) - 1
    marks = sorted(t.get_text() for t in ax.texts if t.xy[0] == last_axis)
    assert marks == ["0.02", "1.5"]


def test_an_inactive_conditional_parameter_breaks_its_line(tmp_path):
    exp = write_experiment(tmp_path, 6)
    paths = ExperimentPaths(exp)
    job_file = paths.job_file("complete", 2)
    job = json.loads(job_file.read_text())
    del job["params"]["layers"]
    job_file.write_text(json.dumps(job))
    data = job_plots.coordinates(take_snapshot(exp))
    row = data.positions[[j.id for j in data.out.jobs].index(2)]
    assert math.isnan(row[1]) and np.isfinite(row[[0, 2, 3, 4, 5]]).all()


def test_a_search_stuck_on_a_face_shows_in_the_scatter_matrix(tmp_path):
    exp = write_experiment(tmp_path, 30)
    paths = ExperimentPaths(exp)
    rng = np.random.default_rng(3)
    for job_id in range(1, 31):  # every job pushed against w[0] = 1
        job_file = paths.job_file("complete", job_id)
        job = json.loads(job_file.read_text())
        job["params"]["w"][0] = float(rng.uniform(0.95, 1.0))
        job_file.write_text(json.dumps(job))
    snap = take_snapshot(exp)
    fig = _section(snap, "landing")
    grid = np.array(fig.axes[:25]).reshape(5, 5)
    assert not any(grid[r, c].get_visible() for r in range(5) for c in range(5) if c > r)
    w1_against_w0 = grid[4, 3]
    assert w1_against_w0.get_xlim()[0] < -1 and w1_against_w0.get_xlim()[1] > 1  # the whole range is shown
    points = np.vstack([c.get_offsets() for c in w1_against_w0.collections if isinstance(c, PathCollection)])
    assert len(points) >= 30 and (points[:, 0] >= 0.95).all()  # every point against the face
    heights = [p.get_height() for p in grid[3, 3].patches]
    assert sum(heights) == 30 and sum(heights[-1:]) == 30  # w[0]'s histogram: all in its top bin
    assert grid[4, 0].get_xscale() == "log" and [t.get_text() for t in grid[4, 2].get_xticklabels()] == [
        "relu", "tanh", "gelu"]
    assert grid[4, 0].get_xlabel() == "lr (log scale)" and grid[1, 0].get_ylabel() == "layers (integer)"


def test_the_scatter_matrix_keeps_to_eight_parameters_with_a_note(tmp_path):
    exp = write_experiment(tmp_path, 5)
    config = json.loads((exp / "config.json").read_text())
    config["variables"]["w"]["size"] = 40
    (exp / "config.json").write_text(json.dumps(config))
    fig = _section(take_snapshot(exp), "landing")
    shown = sum(ax.get_visible() for ax in fig.axes if ax.get_label() != "<colorbar>")
    assert shown == 8 * 9 // 2
    assert "first 8 of 43 parameters" in fig.get_suptitle()


@pytest.mark.parametrize("n_params, sections", [(1, {"convergence", "parameters", "coordinates", "phases"}),
                                                 (5, {"convergence", "parameters", "coordinates", "landing", "phases"})])
def test_the_matrix_needs_two_parameters(tmp_path, n_params, sections):
    exp = write_experiment(tmp_path, 5)
    if n_params == 1:
        config = json.loads((exp / "config.json").read_text())
        config["variables"] = {"lr": config["variables"]["lr"]}
        (exp / "config.json").write_text(json.dumps(config))
    assert {s.key for s in plots.sections(take_snapshot(exp))} == sections
