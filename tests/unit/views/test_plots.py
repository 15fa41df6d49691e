"""Plots: valid PNG/SVG files for empty, tiny and large experiments, and what each panel shows."""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch

from spearmint_nn.views import plot_parts, plots
from spearmint_nn.errors import ConfigError
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.models.warping import warping_summary
from spearmint_nn.views.status import take_snapshot
from helpers.experiments import cli
from helpers.experiments import write_finished_experiment as write_experiment
from helpers.reports import png_size

torch.set_num_threads(1)


@pytest.mark.parametrize("n_jobs, failures, constraint", [
    (0, False, False), (30, True, False),
    *(pytest.param(*case, marks=pytest.mark.slow)
      for case in [(1, False, False), (1, True, True), (30, False, True), (1000, True, True)])])
def test_png_and_svg_render_for_every_size(tmp_path, n_jobs, failures, constraint):
    exp = write_experiment(tmp_path, n_jobs, failures=failures, constraint=constraint)
    snap = take_snapshot(exp)
    png = plots.save_plot(snap, tmp_path / "out" / "conv.png")
    width, height = png_size(png.read_bytes())
    assert width == int(plots.FIGURE_WIDTH_IN * plots.PNG_DPI)
    expected = ["convergence"] if n_jobs == 0 else ["convergence", "parameters", "coordinates", "landing"]
    if failures and n_jobs >= 7:  # every 7th job fails
        expected.append("failures")
    if n_jobs:
        expected.append("phases")  # the first job completed, with its times
    assert [s.key for s in plots.sections(snap)] == expected
    assert 400 <= height <= 4000
    assert 20_000 < png.stat().st_size < 3_000_000

    svg = plots.save_plot(snap, tmp_path / "out" / "conv", svg=True)
    assert svg.name == "conv.svg"
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = svg.read_text()
    assert "demo: convergence" in text  # matplotlib keeps each text as a comment beside its glyphs
    assert 20_000 < svg.stat().st_size < 5_000_000


@pytest.mark.slow
def test_default_path_and_format_rules(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 3))
    state = ExperimentPaths(snap.experiment).state
    assert plots.plot_path(snap, None, svg=False) == (state / "report.png", "png")
    assert plots.plot_path(snap, None, svg=True) == (state / "report.svg", "svg")
    assert plots.plot_path(snap, tmp_path / "a.SVG", svg=False) == (tmp_path / "a.SVG", "svg")
    with pytest.raises(ConfigError, match="ends in .png"):
        plots.plot_path(snap, tmp_path / "a.png", svg=True)
    written = plots.save_plot(snap)
    assert written == state / "report.png" and png_size(written.read_bytes())[0] > 0


def test_convergence_shows_every_job_the_best_so_far_and_marks_failures(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 40, failures=True, constraint=True))
    out = plot_parts.outcomes(snap)
    assert out.failed.sum() == snap.counts["failed"] == 5
    assert out.feasible.sum() + out.infeasible.sum() == snap.counts["complete"]
    assert (out.feasible & out.infeasible).sum() == 0
    running = plot_parts.best_so_far(out.values, out.feasible)
    assert np.nanmin(running) == pytest.approx(snap.best.value)
    assert all(np.diff(running[np.isfinite(running)]) <= 0)

    fig = plots.section_figure(plots.sections(snap)[0])
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert f"feasible job ({out.feasible.sum()})" in labels
    assert f"constraint violated ({out.infeasible.sum()})" in labels
    assert "failed, no value (5)" in labels
    step = ax.lines[0]
    np.testing.assert_allclose(step.get_ydata(), running)
    assert ax.get_xlabel() == "finished jobs, in order of completion" and "loss" in ax.get_ylabel()


def test_parameter_panels_use_log_axes_and_categories(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 25, failures=True))
    section = next(s for s in plots.sections(snap) if s.key == "parameters")
    fig = plots.section_figure(section)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_xlabel() for ax in visible] == ["lr (log scale)", "layers (integer)", "act", "w[0]", "w[1]"]
    assert [ax.get_xscale() for ax in visible] == ["log", "linear", "linear", "linear", "linear"]
    assert [t.get_text() for t in visible[2].get_xticklabels()] == ["relu", "tanh", "gelu"]


def test_outliers_do_not_squash_the_value_axis():
    values = np.r_[np.linspace(0.0, 1.0, 30), 1e6]
    lo, hi = plot_parts.value_limits(values)
    assert lo < 0.0 and 1.0 < hi < 2.0
    lo, hi = plot_parts.value_limits(np.linspace(0.0, 1.0, 30))
    assert hi == pytest.approx(1.05)
    assert plot_parts.value_limits(np.array([np.nan])) is None
    assert plot_parts.value_limits(np.array([3.0])) == (2.5, 3.5)


def test_many_parameters_are_capped_with_a_note(tmp_path):
    exp = write_experiment(tmp_path, 5)
    config = json.loads((exp / "config.json").read_text())
    config["variables"]["w"]["size"] = 40
    (exp / "config.json").write_text(json.dumps(config))
    snap = take_snapshot(exp)
    assert len(plot_parts.parameter_columns(snap)) == 43
    fig = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "parameters"))
    assert sum(ax.get_visible() for ax in fig.axes) == plots.MAX_PARAMETER_PANELS
    assert "first 24 of 43 parameters" in fig.get_suptitle()


@pytest.mark.slow
def test_warpings_and_durations_appear_when_the_data_exists(tmp_path):
    exp = write_experiment(tmp_path, 12)
    snap = take_snapshot(exp)
    assert [s.key for s in plots.sections(snap)] == ["convergence", "parameters", "coordinates", "landing", "phases"]

    paths = ExperimentPaths(exp)
    paths.warpings.parent.mkdir(parents=True, exist_ok=True)
    dim = snap.space.dim
    gen = torch.Generator().manual_seed(0)
    log_alpha, log_beta = torch.randn(8, dim, generator=gen, dtype=torch.float64) * 0.5, torch.zeros(8, dim, dtype=torch.float64)
    paths.warpings.write_text(json.dumps(warping_summary(log_alpha, log_beta, grid_size=21)))
    for state in ("complete",):
        for file in paths.job_dir(state).glob("*.json"):
            job = json.loads(file.read_text())
            job["predicted_duration"] = job["duration"] * 1.3
            file.write_text(json.dumps(job))
    snap = take_snapshot(exp)
    keys = [s.key for s in plots.sections(snap)]
    assert keys == ["convergence", "parameters", "coordinates", "landing", "phases", "warpings", "durations"]
    warp_fig = plots.section_figure(plots.sections(snap)[5])
    titles = [ax.get_title() for ax in warp_fig.axes if ax.get_visible()]
    assert titles[:6] == ["lr", "layers", "act=relu", "act=tanh", "act=gelu", "w[0]"]
    dur_fig = plots.section_figure(plots.sections(snap)[6])
    ax = dur_fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log" and "seconds" in ax.get_xlabel()
    assert len(ax.collections[0].get_offsets()) == 12
    width, height = png_size(plots.figure_bytes(plots.overview_figure(snap), "png"))
    assert height > 1000

    paths.warpings.write_text('{"grid": [0, 1], "inputs": [{"mean": [0]}]}')
    assert plot_parts.read_warpings(paths) is None  # malformed: left out, not a crash
    paths.warpings.write_text('{"grid": [0, 1], "columns": [0, 1], "inputs": [{"mean": [0, 1]}]}')
    assert plot_parts.read_warpings(paths) is None  # a column named for a missing entry


def test_the_warping_panels_show_the_warped_columns_under_their_names(tmp_path):
    """A model that warps only the value columns (not the one-hot options of "act") saves their
    column indices; each panel is titled with the name of its column."""
    exp = write_experiment(tmp_path, 12)
    snap = take_snapshot(exp)
    labels = plot_parts.encoded_column_labels(snap.space)
    columns = [col for col, label in enumerate(labels) if not label.startswith("act=")]
    assert len(columns) < snap.space.dim
    paths = ExperimentPaths(exp)
    paths.warpings.parent.mkdir(parents=True, exist_ok=True)
    log_alpha = torch.full((4, len(columns)), 0.5, dtype=torch.float64)
    summary = {**warping_summary(log_alpha, torch.zeros_like(log_alpha), 11, columns=columns), "share_warped": 0.3}
    paths.warpings.write_text(json.dumps(summary))
    section = next(s for s in plots.sections(take_snapshot(exp)) if s.key == "warpings")
    figure = plots.section_figure(section)
    titles = [ax.get_title() for ax in figure.axes if ax.get_visible()]
    assert titles == [labels[col] for col in columns][:plots.MAX_WARPING_PANELS]
    assert titles[:3] == ["lr", "layers", "w[0]"]
    assert "warped in 30% of samples" in figure.get_suptitle()  # the GP's share of warped samples


def test_a_clear_message_without_matplotlib(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    snap = take_snapshot(write_experiment(tmp_path, 3))
    with pytest.raises(plots.PlotsUnavailable, match=r"pip install 'spearmint-nn\[plot\]'"):
        plots.save_plot(snap, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_report_plot_command(tmp_path):
    exp = write_experiment(tmp_path, 15, failures=True)
    result = cli("report", exp, "--plot")
    default = ExperimentPaths(exp).state / "report.png"
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {default}" and png_size(default.read_bytes())[0] > 0
    result = cli("report", exp, "--plot", tmp_path / "figs" / "conv.svg")
    assert result.returncode == 0 and ET.parse(tmp_path / "figs" / "conv.svg").getroot().tag.endswith("svg")
    result = cli("report", exp, "--plot", tmp_path / "x.png", "--svg")
    assert result.returncode == 2 and "ends in .png" in result.stderr and not (tmp_path / "x.png").exists()
    result = cli("report", exp, "--optimum", "0")
    assert result.returncode == 2 and "--optimum draws regret" in result.stderr
    result = cli("report", exp, "--plot", tmp_path / "regret.png", "--optimum", "0.1")
    assert result.returncode == 0 and png_size((tmp_path / "regret.png").read_bytes())[0] > 0


def test_a_diverged_job_is_drawn_on_the_top_edge(tmp_path):
    exp = write_experiment(tmp_path, 30)
    job_file = ExperimentPaths(exp).job_file("complete", 5)
    job = json.loads(job_file.read_text())
    job["value"] = job["values"]["loss"] = 1e9
    job_file.write_text(json.dumps(job))
    fig = plots.section_figure(plots.sections(take_snapshot(exp))[0])
    ax = fig.axes[0]
    assert ax.get_ylim()[1] < 100
    edge = [c for c in ax.collections if len(c.get_offsets()) == 1 and c.get_offsets()[0][1] == 0.985]
    assert len(edge) == 1


def _mark_the_search(exp, restart_at: int, switch_at: int):
    """Give each finished job, in completion order, what the daemon writes: chosen_by (Sobol for
    5, then the GP, then DNGO from ``switch_at``) and search_start (``restart_at`` from there)."""
    snap = take_snapshot(exp)
    paths = ExperimentPaths(exp)
    for rank, job in enumerate(plot_parts.outcomes(snap).jobs, start=1):
        job_file = paths.job_file(job.state.value, job.id)
        data = json.loads(job_file.read_text())
        data["chosen_by"] = "sobol" if rank <= 5 else ("gp" if rank < switch_at else "dngo")
        data["search_start"] = restart_at if rank > restart_at else 0
        job_file.write_text(json.dumps(data))
    return take_snapshot(exp)


def test_convergence_marks_restarts_and_model_switches_and_draws_regret_on_a_log_scale(tmp_path):
    snap = _mark_the_search(write_experiment(tmp_path, 40), restart_at=25, switch_at=31)
    out = plot_parts.outcomes(snap)
    marks = plot_parts.search_marks(out)
    assert marks.restarts == [25] and marks.switches == [(31, "gp \u2192 dngo")]

    optimum = float(np.nanmin(out.values)) - 0.05
    fig = plots.section_figure(plots.sections(snap, optimum=optimum)[0])
    jobs_ax, best_ax, time_ax = fig.axes[:3]
    assert [line.get_xdata()[0] for line in jobs_ax.lines if line.get_linestyle() in ("--", "-.")] == [25, 31]
    assert "restart (a fresh objective model)" in jobs_ax.get_legend_handles_labels()[1]
    assert any(t.get_text() == "gp \u2192 dngo" for t in jobs_ax.texts)
    assert best_ax.get_yscale() == "log" and best_ax.get_ylabel().startswith("regret")
    regret = best_ax.lines[0].get_ydata()
    running = plot_parts.best_so_far(out.values, out.feasible)
    np.testing.assert_allclose(regret, running - optimum)
    assert regret[-1] == pytest.approx(0.05)
    # against time: the same curve, at each job's finishing time since the first job (minutes here)
    assert time_ax.get_xlabel() == "minutes since the first job"
    times, unit = plot_parts.elapsed(out)
    np.testing.assert_allclose(time_ax.lines[0].get_xdata(), times)
    finished = np.array([job.fields["finished"] for job in out.jobs])
    np.testing.assert_allclose(times * 60, finished - 1.7e9)
    np.testing.assert_allclose(time_ax.lines[0].get_ydata(), regret)

    # without an optimum: the best value itself, on a log scale only when every value is positive
    fig = plots.section_figure(plots.sections(snap)[0])
    assert fig.axes[1].get_yscale() == "log" and fig.axes[1].get_ylabel() == "best loss so far (log)"
