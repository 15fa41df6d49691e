"""How the jobs ran: failure groups with their counts and output, and each job's phases."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views import plot_parts, plots, run_plots
from spearmint_nn.views.status import take_snapshot
from helpers.experiments import write_finished_experiment as write_experiment

torch.set_num_threads(1)


def _section(snap, key):
    return plots.section_figure(next(s for s in plots.sections(snap) if s.key == key))


def test_failures_show_each_group_with_its_count_reason_and_output(tmp_path):
    exp = write_experiment(tmp_path, 40, failures=True)
    paths = ExperimentPaths(exp)
    job_file = paths.job_file("failed", 14)  # a second group: another kind and reason
    job = json.loads(job_file.read_text())
    job.update(failure="timeout", reason="killed after 3600 s", stderr_tail="epoch 12 of 50\n")
    job_file.write_text(json.dumps(job))
    snap = take_snapshot(exp)
    ax = _section(snap, "failures").axes[0]
    assert sorted(p.get_width() for p in ax.patches) == [1, 4]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["4 \u00d7", "1 \u00d7"]
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("exception: wrapper raised ValueError") and "output: ValueError: <b>bad</b>" in t
               for t in texts)
    assert any(t.startswith("timeout: killed after 3600 s") and "output: epoch 12 of 50" in t for t in texts)
    assert "failures" not in [s.key for s in plots.sections(take_snapshot(write_experiment(tmp_path / "ok", 10)))]


def test_phases_split_queue_start_up_and_run(tmp_path):
    exp = write_experiment(tmp_path, 12)
    paths = ExperimentPaths(exp)
    for job_id in range(1, 13):
        job_file = paths.job_file("complete", job_id)
        job = json.loads(job_file.read_text())
        job["process_started"] = job["started"] - 0.5 * job_id  # start-up: half a second per id
        job_file.write_text(json.dumps(job))
    snap = take_snapshot(exp)
    phases = run_plots.job_phases(snap)
    jobs = plot_parts.outcomes(snap).jobs
    np.testing.assert_allclose(phases.startup, [0.5 * job.id for job in jobs])
    np.testing.assert_allclose(phases.run, [job.fields["ended"] - job.fields["started"] for job in jobs])
    np.testing.assert_allclose(phases.queue, [max(job.fields["process_started"] - job.fields["submitted"], 0)
                                              for job in jobs])
    assert (phases.queue == 0).any() and (phases.queue > 0).any()  # some started before their submission was written
    fig = _section(snap, "phases")
    stacked, spread = fig.axes[:2]
    assert [t.get_text() for t in stacked.get_legend().get_texts()] == [
        f"queue (median {np.median(phases.queue):.3g} s)", f"start-up (median {np.median(phases.startup):.3g} s)",
        f"run (median {np.median(phases.run):.3g} s)"]
    assert spread.get_yscale() == "log" and [t.get_text() for t in spread.get_xticklabels()] == [
        "queue", "start-up", "run"]


def test_without_process_start_the_start_up_counts_as_queue(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 5))
    phases = run_plots.job_phases(snap)
    assert (phases.startup == 0).all()
    jobs = plot_parts.outcomes(snap).jobs
    np.testing.assert_allclose(phases.queue, [j.fields["started"] - j.fields["submitted"] for j in jobs])
