"""Failed jobs grouped by how they failed, with the last lines of their output, and a noisy
objective's best by the model's posterior mean, as ``status``, ``report``, the HTML report
and the plots show them.

The experiment folders are real: config and wrapper on disk, job files and best.json written
through the :class:`~spearmint_nn.experiment.store.Store` as the daemon writes them.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.experiments import cli
from spearmint_nn.views import plots
from spearmint_nn.experiment.config import load_config
from spearmint_nn.views.html_report import MAX_FAILURE_GROUPS, render_html
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views.progress import progress_text
from spearmint_nn.views.status import printable_tail, read_model_best, take_snapshot
from spearmint_nn.experiment.summaries import job_table, write_summaries
from spearmint_nn.experiment.store import Store
from helpers.reports import Page
from helpers.experiments import write_finished_experiment as write_experiment

# What each job id does: "ok" completes; the rest fail in three ways.
OUTCOMES = ["ok", "ok", "nan", "ok", "exception", "nan", "ok", "nan", "ok", "nan",
            "exception", "ok", "nan", "timeout", "nan", "ok"]
NAN_IDS = [i + 1 for i, kind in enumerate(OUTCOMES) if kind == "nan"]  # 3, 6, 8, 10, 13, 15


def _params(job_id: int) -> dict[str, Any]:
    return {"lr": [10.0 ** (-job_id / 4)], "layers": [1 + job_id % 8], "act": ["relu"], "w": [0.1 * (job_id % 5), -0.3]}


def _diverged_output(job_id: int) -> str:
    """What a wrapper that catches its own exception and returns NaN prints on stdout."""
    return ("epoch 1 loss 2.31\n"
            "epoch 2 loss 1.87\n"
            "\x1b[33mwarning: loss is growing\x1b[0m\n"
            "Traceback (most recent call last):\n"
            '  File "wrapper.py", line 14, in main\n'
            "    loss = train(lr)\n"
            f"FloatingPointError: loss diverged at step {job_id * 100}\n")


def failing_experiment(root: Path, model_best: dict[str, Any] | None = None, name: str = "demo",
                       likelihood: str = "GAUSSIAN", outcomes: list[str] | None = None) -> Path:
    """16 finished jobs (see OUTCOMES; with ``model_best`` 4 more complete ones, MODEL_BEST_OUTCOMES,
    so that the model's best is shown), written through the Store, and best.json through
    ``write_summaries`` (with ``model_best`` when given)."""
    if outcomes is None:
        outcomes = OUTCOMES if model_best is None else MODEL_BEST_OUTCOMES
    exp = write_experiment(root, 0, budget=40, name=name)
    config_file = exp / "config.json"
    config_json = json.loads(config_file.read_text())
    config_json["likelihood"] = likelihood
    config_file.write_text(json.dumps(config_json))
    config = load_config(exp, check_driver=False)
    store = Store(config.paths)
    store.create_dirs()
    store.load_all()
    for job_id, kind in enumerate(outcomes, start=1):
        params = _params(job_id)
        store.new_job(params, "optimizer", "running", scheduler_id=str(500 + job_id), driver="local",
                      submitted=1.7e9 + 10 * job_id)
        finished = 1.7e9 + 10 * job_id + 5
        if kind == "ok":
            loss = (job_id - 7) ** 2 / 10 + 0.5
            store.move(job_id, "complete", values={"loss": loss}, value=loss, finished=finished, duration=4.0)
        elif kind == "nan":
            store.move(job_id, "failed", failure="nan", reason="the wrapper returned NaN for loss",
                       location="wrapper.py:14", stderr_tail="", stdout_tail=_diverged_output(job_id),
                       finished=finished, duration=4.0)
        elif kind == "exception":
            store.move(job_id, "failed", failure="exception",
                       reason=f"ValueError: lr {params['lr'][0]:.5f} outside the schedule's range",
                       location="wrapper.py:9",
                       stderr_tail=f"Traceback (most recent call last):\nValueError: lr {params['lr'][0]:.5f}",
                       finished=finished, duration=1.0)
        else:
            store.move(job_id, "failed", failure="timeout", reason="killed after the 3600 s time limit",
                       finished=finished, duration=3600.0)
    write_summaries(store, config, model_best=model_best)
    return exp


# Job 9 (observed 0.9) is the model's best; job 7 (observed 0.5) the luckiest draw. The model's best
# is shown from 10 completed jobs on (MIXED_VARIABLES has 5 elements: 2 x 5 is no more), and the
# model saw every finished job.
MODEL_BEST_OUTCOMES = OUTCOMES + ["ok"] * 4
MODEL_BEST = {"id": 9, "mean": 0.734, "std": 0.125, "value": 0.9, "observations": 20, "fitted": 1.7e9 + 200}


def test_status_text_groups_failures_with_the_last_lines_of_their_output(tmp_path):
    exp = failing_experiment(tmp_path)
    result = cli("status", exp)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    head = lines.index("failures: 9 job(s) (nan 6, exception 2, timeout 1) in 3 group(s) of the same kind, "
                       "reason and place:")
    nan_line = "      6 x nan at wrapper.py:14: the wrapper returned NaN for loss (jobs 3, 6, 8, 10, 13, 15)"
    assert lines[head + 1] == nan_line
    # the last 5 lines of the last nan job's stdout, colour codes dropped; not the older lines
    assert lines[head + 2:head + 7] == [
        "          | warning: loss is growing",
        "          | Traceback (most recent call last):",
        '          |   File "wrapper.py", line 14, in main',
        "          |     loss = train(lr)",
        "          | FloatingPointError: loss diverged at step 1500"]
    assert "epoch 2 loss 1.87" not in result.stdout and "\x1b" not in result.stdout
    # the lr differs between the two exception jobs: one group, with the last job's reason
    assert lines[head + 7] == ("      2 x exception at wrapper.py:9: ValueError: lr 0.00178 outside the "
                               "schedule's range (jobs 5, 11)")
    assert lines[head + 8:head + 10] == ["          | Traceback (most recent call last):",
                                         "          | ValueError: lr 0.00178"]
    assert lines[head + 10] == "      1 x timeout: killed after the 3600 s time limit (job 14)"
    assert lines[head + 11:] == []
    # noiseless-style best line: nothing about the model when best.json has no model_best
    assert "best: loss = 0.5 (job 7)" in result.stdout and "posterior" not in result.stdout


def test_status_json_has_failure_groups_and_keeps_the_old_keys(tmp_path):
    exp = failing_experiment(tmp_path)
    status = json.loads(cli("status", exp, "--json").stdout)
    assert {"recent_failures", "failures_by_kind", "best"} <= set(status)
    assert status["failures_by_kind"] == {"nan": 6, "exception": 2, "timeout": 1}
    assert status["failure_group_count"] == 3 and status["model_best"] is None
    nan, exc, timeout = status["failure_groups"]
    assert {k: nan[k] for k in ("kind", "count", "first_job", "last_job", "jobs", "location", "reason")} == {
        "kind": "nan", "count": 6, "first_job": 3, "last_job": 15, "jobs": [3, 6, 8, 10, 13, 15],
        "location": "wrapper.py:14", "reason": "the wrapper returned NaN for loss"}
    assert nan["output_tail"] == _diverged_output(15)
    assert (exc["count"], exc["first_job"], exc["last_job"]) == (2, 5, 11)
    assert timeout == {"kind": "timeout", "reason": "killed after the 3600 s time limit", "location": None,
                       "count": 1, "first_job": 14, "last_job": 14, "jobs": [14], "output_tail": ""}


def test_status_caps_the_groups_and_says_where_the_rest_are(tmp_path):
    exp = write_experiment(tmp_path, 3, budget=40)
    config = load_config(exp, check_driver=False)
    store = Store(config.paths).load_all()
    for k in range(12):  # twelve different reasons (letters are not masked): twelve groups
        for _ in range(2 if k == 0 else 1):
            store.new_job(_params(k), "optimizer", "failed", failure="exception", finished=2e9 + k,
                          reason=f"KeyError: 'column_{chr(97 + k)}'", stderr_tail=f"tail of group {chr(97 + k)}")
    text = cli("status", exp).stdout
    assert "failures: 13 job(s) (exception 13) in 12 group(s)" in text
    assert text.count(" x exception: KeyError") == 8
    assert "      2 x exception: KeyError: 'column_a' (jobs 4, 5)" in text
    # tails under the three largest groups only
    assert [line for line in text.splitlines() if line.startswith("          | ")] == [
        "          | tail of group a", "          | tail of group l", "          | tail of group k"]
    assert f"  ... 4 more group(s) with 4 job(s): spearmint-nn report {exp} --failures lists them all" in text
    report = cli("report", exp, "--failures").stdout
    assert report.count(" x exception: KeyError") == 12 and "tail of group e" in report


def test_report_failures_prints_every_group_with_its_whole_tail_and_the_csv_is_unchanged(tmp_path):
    exp = failing_experiment(tmp_path)
    result = cli("report", exp, "--failures")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("failures: 9 job(s) (nan 6, exception 2, timeout 1) in 3 group(s)")
    assert lines[1] == "      6 x nan at wrapper.py:14: the wrapper returned NaN for loss (jobs 3, 6, 8, 10, 13, 15)"
    assert lines[2:9] == ["          | " + line.replace("\x1b[33m", "").replace("\x1b[0m", "")
                          for line in _diverged_output(15).splitlines()]
    assert "      1 x timeout: killed after the 3600 s time limit (job 14)" in lines

    table = cli("report", exp).stdout
    config = load_config(exp, check_driver=False)
    header, rows = job_table(Store(config.paths).load_all().jobs(), config)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header] + rows)
    assert table == buffer.getvalue()
    assert cli("report", write_experiment(tmp_path, 2, name="clean"), "--failures").stdout == "no failed jobs\n"


def test_html_failures_section_shows_groups_not_jobs(tmp_path):
    exp = failing_experiment(tmp_path)
    html = render_html(take_snapshot(exp))
    page = Page(html)
    section = html[html.index('<section id="failures">'):html.index('<section id="jobs">')]
    assert section.count('<div class="failure"') == 3
    assert "6 job(s)</strong>" in section and "(jobs 3, 6, 8, 10, 13, 15)" in section
    assert "<code>wrapper.py:14</code>" in section and "the wrapper returned NaN for loss" in section
    assert "(jobs 5, 11)" in section and "ValueError: lr 0.00178" in section
    assert "(job 14)" in section and "killed after the 3600 s time limit" in section
    assert "FloatingPointError: loss diverged at step 1500" in section and "\x1b" not in section
    details = [attrs for tag, attrs in page.tags if tag == "details"]
    assert len(details) == 2  # the timeout group has no output
    assert "exception &times; 2" in section and "3 group(s)" in section


@pytest.mark.slow
def test_html_of_thousands_of_failures_stays_small(tmp_path):
    exp = write_experiment(tmp_path, 5, budget=10)
    paths = ExperimentPaths(exp)
    # as the daemon leaves them, written directly (fsyncs would be slow): 70 groups, 60 of 43
    # jobs and 10 of 42
    for job_id in range(6, 3006):
        reason = f"OSError: scratch disk {job_id % 70} is full"  # short numbers are not masked
        paths.job_file("failed", job_id).write_text(json.dumps({
            "id": job_id, "state": "failed", "params": _params(job_id), "source": "optimizer",
            "failure": "exception", "reason": reason, "finished": 2e9 + job_id, "stderr_tail": "x" * 2000}))
    html = render_html(take_snapshot(exp))
    section = html[html.index('<section id="failures">'):html.index('<section id="jobs">')]
    assert section.count('<div class="failure"') == MAX_FAILURE_GROUPS == 50
    assert "20 more group(s) with 850 job(s); the table of all jobs lists every failed job." in section
    assert len(section) < 150_000  # 50 tails of 2,000 characters, not 3,000


def test_model_best_in_status_text_and_json(tmp_path):
    exp = failing_experiment(tmp_path, model_best=MODEL_BEST)
    best_json = json.loads((exp / ".spearmint" / "best.json").read_text())
    assert best_json["id"] == 7 and best_json["model_best"]["id"] == 9

    text = cli("status", exp).stdout
    assert "best observed (luckiest draw): loss = 0.5 (job 7) lr=0.0177828 layers=8 act=relu w=[0.2, -0.3]\n" in text
    assert ("best by the model's posterior mean: loss = 0.734 +- 0.125 (job 9; observed there 0.9; "
            "model of 20 observations) lr=0.00562341 layers=2 act=relu w=[0.4, -0.3]\n  (two bests: loss is modelled as noisy") in text
    status = json.loads(cli("status", exp, "--json").stdout)
    assert status["best"]["id"] == 7
    assert status["model_best"] == {**MODEL_BEST, "params": _params(9)}  # params from job 9's file


def test_model_best_is_read_defensively(tmp_path):
    exp = failing_experiment(tmp_path, model_best={"id": 9, "mean": 0.7, "std": None, "params": {"lr": [0.5]}})
    paths = ExperimentPaths(exp)
    store = Store(paths).load_all()
    assert read_model_best(paths, store) == {"id": 9, "params": {"lr": [0.5]}, "mean": 0.7, "std": None,
                                             "value": None, "observations": None, "fitted": None}
    text = cli("status", exp).stdout
    assert "best by the model's posterior mean: loss = 0.7 (job 9) lr=0.5" in text
    for broken in ({"id": "9", "mean": 0.7}, {"id": 9}, {"id": True, "mean": 1.0}, [1, 2]):
        best = json.loads(paths.best_json.read_text())
        paths.best_json.write_text(json.dumps({**best, "model_best": broken}))
        assert read_model_best(paths, store) is None
    paths.best_json.write_text("{truncated")
    assert read_model_best(paths, store) is None


def test_html_best_section_shows_both_bests_labelled(tmp_path):
    exp = failing_experiment(tmp_path, model_best=MODEL_BEST)
    html = render_html(take_snapshot(exp))
    page = Page(html)
    best = html[html.index('<section id="best">'):html.index('<section id="plots">')]
    # the observed best leads; the model's best follows it
    observed = best[best.index('<div id="best-observed">'):best.index('<div id="model-best">')]
    model = best[best.index('<div id="model-best">'):]
    assert "Best by the model's posterior mean" in model and "<dd>9</dd>" in model
    assert "0.734 \u00b1 0.125" in model and "<dd>0.9</dd>" in model and "<dd>20</dd>" in model
    assert "0.00562341" in model  # job 9's lr, from its job file
    assert "Best observed (luckiest draw)" in observed and "<dd>7</dd>" in observed and "0.0177828" in observed
    text = page.text  # the summary's facts in order: the observed best before the model's
    assert text.index("best observed value (luckiest draw)") < text.index("best by the model's posterior mean")
    assert "best by the model's posterior mean" in page.text and "0.734 \u00b1 0.125 (job 9)" in page.text
    assert "best observed value (luckiest draw)" in page.text and "0.5 (job 7)" in page.text
    classes = [a["class"].split() for t, a in page.tags if t == "tr" and "state-" in a.get("class", "")]
    assert sum("model-best" in c for c in classes) == 1 and sum("best" in c for c in classes) == 1
    assert '<tr class="state-complete model-best"><td>9</td>' in html
    assert '<tr class="state-complete best"><td>7</td>' in html


def test_the_models_best_waits_for_enough_completed_jobs(tmp_path):
    """7 jobs completed of the 10 needed: best.json leaves the model's best out, and status, its
    JSON, the HTML report and the live line show the best observed alone."""
    exp = failing_experiment(tmp_path, model_best=MODEL_BEST, outcomes=OUTCOMES)
    assert "model_best" not in json.loads((exp / ".spearmint" / "best.json").read_text())
    text = cli("status", exp).stdout
    assert "best: loss = 0.5 (job 7)" in text and "posterior" not in text
    assert json.loads(cli("status", exp, "--json").stdout)["model_best"] is None
    snap = take_snapshot(exp)
    assert 'id="model-best"' not in render_html(snap) and "model's best" not in progress_text(snap)
    # a best.json written before the rule (or by hand) is judged the same when read
    best_file = exp / ".spearmint" / "best.json"
    best_file.write_text(json.dumps({**json.loads(best_file.read_text()), "model_best": MODEL_BEST}))
    assert read_model_best(ExperimentPaths(exp), Store(ExperimentPaths(exp)).load_all())["id"] == 9
    assert take_snapshot(exp).model_best is None


def test_the_model_fitted_to_too_few_jobs_is_not_shown_however_many_completed(tmp_path):
    early = {**MODEL_BEST, "observations": 3}  # fitted when 3 jobs had finished
    exp = failing_experiment(tmp_path, model_best=early)
    assert "model_best" not in json.loads((exp / ".spearmint" / "best.json").read_text())


def test_noiseless_html_has_one_best_and_no_model_wording(tmp_path):
    exp = failing_experiment(tmp_path, likelihood="NOISELESS")
    html = render_html(take_snapshot(exp))
    assert 'id="model-best"' not in html and "posterior" not in html and "luckiest" not in html
    assert "The best job is highlighted." in html


def test_convergence_plot_marks_the_model_best_beside_the_best_observed(tmp_path):
    exp = failing_experiment(tmp_path, model_best=MODEL_BEST)
    snap = take_snapshot(exp)
    fig = plots.section_figure(plots.sections(snap)[0])
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    assert "best observed so far (luckiest draw) (0.5)" in labels
    label = "best by the model's posterior mean: job 9, 0.734 \u00b1 0.125"
    assert label in labels
    bar = handles[labels.index(label)]  # an ErrorbarContainer: (marker line, caps, bar segments)
    marker, _, (segments,) = bar
    position = [job.id for job in snap.finished].index(9) + 1
    assert list(marker.get_xdata()) == [position] and list(marker.get_ydata()) == [pytest.approx(0.734)]
    (x0, y0), (x1, y1) = segments.get_segments()[0]
    assert x0 == x1 == position and sorted([y0, y1]) == [pytest.approx(0.609), pytest.approx(0.859)]
    assert "best by the model's posterior mean 0.734 \u00b1 0.125 (job 9)" in plots.summary_line(snap)


def test_parameter_panels_mark_the_model_best_at_its_params(tmp_path):
    snap = take_snapshot(failing_experiment(tmp_path, model_best=MODEL_BEST))
    fig = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "parameters"))
    assert "diamond = best by the model's posterior mean" in fig.get_suptitle()
    lr_panel = fig.axes[0]
    diamonds = [c.get_offsets().tolist() for c in lr_panel.collections
                if c.get_facecolor()[0][:3].tolist() == pytest.approx([0x94 / 255, 0x67 / 255, 0xbd / 255])]
    assert diamonds == [[[pytest.approx(10 ** (-9 / 4)), pytest.approx(0.734)]]]  # job 9's lr, predicted mean


def test_noiseless_convergence_plot_is_unchanged(tmp_path):
    snap = take_snapshot(failing_experiment(tmp_path, likelihood="NOISELESS"))
    ax = plots.section_figure(plots.sections(snap)[0]).axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "best so far (0.5)" in labels and not any("posterior" in label for label in labels)
    assert ax.containers == [] and len(ax.lines) == 1
    assert "luckiest" not in plots.summary_line(snap)
    fig = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "parameters"))
    assert fig.get_suptitle() == "demo: loss against each parameter; star = best job, red ticks = failed jobs"


def test_printable_tail_keeps_what_a_terminal_showed():
    text = "a\n\x1b[31mred\x1b[0m\n 10%\r 50%\r100%\r\n\nbell\x07\n"
    assert printable_tail(text, 3) == ["red", "100%", "bell"]
    assert printable_tail(text, 0) == [] and printable_tail("", 5) == []
    assert np.all([line.isprintable() for line in printable_tail(text, 10)])


def test_the_live_progress_line_names_the_models_best_beside_the_best_observed(tmp_path):
    noisy = take_snapshot(failing_experiment(tmp_path, model_best=MODEL_BEST))
    assert "best 0.5 (job 7), model's best 0.734 (job 9)" in progress_text(noisy)
    plain = take_snapshot(failing_experiment(tmp_path, name="plain", likelihood="NOISELESS"))
    assert "model's best" not in progress_text(plain)
