"""Learning curves in the views: status and status --json (running jobs' last step and value),
the job table of results.csv and ``report`` (last_step, last_value), and the HTML report's plot
of every job's curve, read from real report files."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import torch

from helpers.experiments import cli
from helpers.experiments import write_finished_experiment as write_experiment
from helpers.reports import Page
from spearmint_nn.experiment.summaries import job_table
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views import curve_plots, plots
from spearmint_nn.views.html_report import render_html
from spearmint_nn.views.status import status_summary, status_text, take_snapshot

torch.set_num_threads(1)


def _with_curves(tmp_path, n_jobs: int = 6, running: int = 2):
    """A finished experiment whose jobs 1..3 and running jobs reported curves (files and records,
    as the daemon leaves them); job 2's file ends with a half-written line."""
    exp = write_experiment(tmp_path, n_jobs, running=running)
    paths = ExperimentPaths(exp)
    paths.reports.mkdir()
    reporting = [1, 2, 3] + list(range(n_jobs + 1, n_jobs + running + 1))
    for job_id in reporting:
        steps = 4 + job_id
        text = "".join(f"{s} {10.0 / (s + job_id)!r}\n" for s in range(1, steps + 1))
        paths.report_file(job_id).write_text(text + ("7 0.0" if job_id == 2 else ""))
        state = "running" if job_id > n_jobs else "complete"
        record = json.loads(paths.job_file(state, job_id).read_text())
        record.update(reports=steps, last_step=steps, last_value=10.0 / (steps + job_id))
        paths.job_file(state, job_id).write_text(json.dumps(record))
    return exp, paths


def test_status_shows_each_running_jobs_last_report(tmp_path):
    exp, paths = _with_curves(tmp_path)
    record = json.loads(paths.job_file("running", 8).read_text())
    del record["reports"], record["last_step"], record["last_value"]  # job 8 has not reported yet
    paths.job_file("running", 8).write_text(json.dumps(record))
    summary = status_summary(take_snapshot(exp))
    assert [(r["id"], r["reports"], r["last_step"], r["last_value"]) for r in summary["running"]] == [
        (7, 11, 11, 10.0 / 18), (8, 0, None, None)]
    text = status_text(summary)
    line7 = next(line for line in text.splitlines() if line.startswith("  job      7"))
    line8 = next(line for line in text.splitlines() if line.startswith("  job      8"))
    assert f"s  step 11: {10.0 / 18:.6g} (11 reports)" in line7 and "step" not in line8
    # --watch shows the same (it runs on here: jobs are running and no daemon ran yet)
    watching = subprocess.Popen([sys.executable, "-m", "spearmint_nn", "status", str(exp), "--watch"],
                                stdout=subprocess.PIPE, text=True)
    try:
        seen = [line for line, _ in zip(watching.stdout, range(40)) if "step 11:" in line]
    finally:
        watching.kill()
        watching.wait()
    assert seen and f"s  step 11: {10.0 / 18:.6g} (11 reports)" in seen[0]


def test_the_job_table_has_each_jobs_last_step_and_value(tmp_path):
    exp, paths = _with_curves(tmp_path)
    snap = take_snapshot(exp)
    header, rows = job_table(snap.jobs, snap.config)
    assert header[header.index("attempts") + 1:header.index("attempts") + 3] == ["last_step", "last_value"]
    by_id = {row[0]: dict(zip(header, row)) for row in rows}
    assert (by_id[3]["last_step"], by_id[3]["last_value"]) == (7, 10.0 / 10)
    assert (by_id[4]["last_step"], by_id[4]["last_value"]) == ("", "")  # it reported nothing
    report = list(csv.DictReader(io.StringIO(cli("report", exp).stdout)))
    assert report[2]["last_step"] == "7" and float(report[2]["last_value"]) == 1.0


def test_the_curves_plot_draws_one_line_per_job_from_the_files(tmp_path):
    exp, paths = _with_curves(tmp_path)
    snap = take_snapshot(exp)
    curves = curve_plots.job_curves(snap)
    assert [c.job.id for c in curves] == [1, 2, 3, 7, 8]
    assert len(curves[1].steps) == 6  # job 2's half-written last line is not a report
    section = next(s for s in plots.sections(snap) if s.key == "curves")
    ax = plots.section_figure(section).axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "complete (3)" in labels and "running (2)" in labels
    lines = {label: collection for collection, label in zip(*ax.get_legend_handles_labels())}
    assert len(lines["complete (3)"].get_segments()) == 3 and len(lines["running (2)"].get_segments()) == 2
    low, high = ax.get_xlim()
    assert 0.5 < low < 1.0 and 12.0 < high < 12.5  # every step shown: job 8 reported 12
    page = Page(render_html(snap))
    assert any(attrs.get("id") == "plot-curves" for attrs in page.all("figure"))
    # an experiment without report files has no such section
    assert "curves" not in [s.key for s in plots.sections(take_snapshot(write_experiment(tmp_path / "none", 3)))]


def test_a_stopped_jobs_curve_is_drawn_apart(tmp_path):
    exp, paths = _with_curves(tmp_path)
    record = json.loads(paths.job_file("running", 7).read_text())
    record.update(state="stopped", stopped_reason="median rule: ...", finished=1.8e9)
    paths.job_file("stopped", 7).parent.mkdir(exist_ok=True)
    paths.job_file("stopped", 7).write_text(json.dumps(record))
    paths.job_file("running", 7).unlink()
    snap = take_snapshot(exp)
    section = next(s for s in plots.sections(snap) if s.key == "curves")
    labels = plots.section_figure(section).axes[0].get_legend_handles_labels()[1]
    assert "stopped (1)" in labels and "running (1)" in labels and "complete (3)" in labels
    page = Page(render_html(snap))
    text = " ".join(page.text)
    assert "complete / failed / stopped early" in text and "6 / 0 / 1" in text
