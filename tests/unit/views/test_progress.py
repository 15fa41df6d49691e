"""The snapshot of an experiment folder, the live progress line and ``status --watch``.

``write_finished_experiment`` (tests/helpers/experiments.py) builds real experiment folders.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers.experiments import cli
from spearmint_nn.experiment.config import load_config
from spearmint_nn.daemon.event_log import EventLog
from spearmint_nn.experiment.summaries import write_summaries
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.jobs import JobState, best_job
from spearmint_nn.views.progress import (SPARK_BLOCKS, DaemonProgress, LiveLine, format_duration, pace_text,
                                        progress_text, sparkline, watch)
from spearmint_nn.views.status import status_summary, status_text, take_snapshot
from spearmint_nn.experiment.store import Store

from helpers.experiments import write_finished_experiment as write_experiment


def test_snapshot_counts_best_and_completion_order(tmp_path):
    exp = write_experiment(tmp_path, 30, failures=True, constraint=True, running=2, budget=50)
    snap = take_snapshot(exp)
    assert snap.name == "demo" and snap.budget == 50 and snap.concurrency == 2
    assert snap.objective == "loss" and snap.constraints == ("mem",)
    assert snap.counts == {"pending": 0, "running": 2, "complete": 26, "failed": 4, "stopped": 0}
    finished_times = [job.finished for job in snap.finished]
    assert finished_times == sorted(finished_times) and len(finished_times) == 30
    assert [j.id for j in snap.finished] != sorted(j.id for j in snap.finished)
    feasible = [j for j in snap.jobs if j.state is JobState.COMPLETE and j.values["mem"] >= 0]
    assert snap.best.id == min(feasible, key=lambda j: j.value).id
    assert best_job(snap.store.jobs(JobState.COMPLETE), "loss", ["mem"]) == snap.best
    assert all(snap.is_feasible(j) == (j in feasible) for j in snap.jobs)


def test_snapshot_of_a_folder_with_a_broken_config_still_lists_jobs(tmp_path):
    exp = write_experiment(tmp_path, 5)
    (exp / "config.json").write_text("{not json")
    snap = take_snapshot(exp)
    assert snap.space is None and snap.budget is None and len(snap.jobs) == 5
    assert snap.best is not None and snap.name == "demo"


def test_eta_from_observed_durations(tmp_path):
    exp = write_experiment(tmp_path, 10, budget=30)
    snap = take_snapshot(exp)
    mean = sum(snap.durations()) / len(snap.durations())
    assert snap.eta_seconds() == pytest.approx(20 * mean / 2)  # 20 jobs left, 2 slots
    assert take_snapshot(write_experiment(tmp_path, 0, name="empty")).eta_seconds() is None


def test_progress_text_has_the_numbers_and_no_control_characters(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 12, failures=True, running=2, budget=40))
    snap.last_refit_s = 1.234
    text = progress_text(snap)
    assert text.startswith("demo: 12/40 done, 2 running, 1 failed, best ")
    assert " finished " not in text and " failed " not in text  # event words counted in daemon.log
    assert f"(job {snap.best.id})" in text and "refit 1.2s" in text and "ETA " in text
    assert all(ch.isprintable() for ch in text)


def test_format_duration():
    assert [format_duration(s) for s in (0, 42, 250, 3 * 3600 + 300, 2 * 86400 + 4 * 3600)] == \
        ["0s", "42s", "4m10s", "3h05m", "2d04h"]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_line_keeps_log_lines_above_it():
    out = FakeTerminal()
    live = LiveLine(out)
    live.show("1/10 finished")
    live.above("job 1 finished: 0.5")
    live.show("2/10 finished")
    live.close()
    assert out.getvalue() == ("\r1/10 finished\x1b[K"
                              "\r\x1b[Kjob 1 finished: 0.5\n\r1/10 finished\x1b[K"
                              "\r2/10 finished\x1b[K\n")


def test_live_line_is_cut_to_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    out = FakeTerminal()
    LiveLine(out).show("x" * 100)
    assert out.getvalue() == "\r" + "x" * 29 + "\x1b[K"


def _daemon_like(exp: Path, stream: io.StringIO, interactive: bool | None) -> tuple[EventLog, DaemonProgress, Store]:
    """A EventLog and a loaded Store as the daemon builds them, with the progress display attached."""
    config = load_config(exp, check_driver=False)
    reporter = EventLog(config.paths.log, stream)
    # Every event is due: these tests are about which events show progress, not the rate limit
    # (on a loaded machine a slow first snapshot postponed the next one past the test's events).
    progress = DaemonProgress(config, stream=stream, interactive=interactive, time_share=1.0)
    store = Store(config.paths).load_all()
    progress.attach(reporter, store)
    return reporter, progress, store


def test_daemon_progress_on_a_terminal_redraws_below_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the whole line fits, whatever runs the tests
    exp = write_experiment(tmp_path, 3, budget=10)
    term = FakeTerminal()
    reporter, progress, _ = _daemon_like(exp, term, interactive=None)
    try:
        assert progress.interactive
        reporter.event("model", "suggested 1 point(s)", refit_seconds=2.5)
        reporter.event("submitted", "job 4 as local 123", job=4)
    finally:
        progress.close()
        reporter.close()
    text = term.getvalue()
    lines = text.split("\n")
    assert "model     suggested 1 point(s)" in lines[0] and "submitted job 4" in lines[1]
    expected = progress_text(take_snapshot(exp, last_refit_s=2.5))
    assert expected.startswith("demo: 3/10 done, 0 running, 0 failed, best ") and "refit 2.5s" in expected
    assert text.endswith("\r" + expected + "\x1b[K\n")
    # the log file gets plain lines only
    log = ExperimentPaths(exp).log.read_text()
    assert "submitted job 4" in log and "\x1b" not in log and "\r" not in log


def test_daemon_progress_off_a_terminal_logs_a_plain_line_per_finished_job(tmp_path):
    exp = write_experiment(tmp_path, 3, budget=10)
    out = io.StringIO()
    reporter, progress, store = _daemon_like(exp, out, interactive=None)
    try:
        assert not progress.interactive
        job = store.new_job({"lr": [0.01], "layers": [2], "act": ["relu"], "w": [0.0, 0.0]}, "optimizer")
        reporter.event("proposed", f"job {job.id}", job=job.id)
        store.move(job.id, "running", scheduler_id="1")
        reporter.event("submitted", f"job {job.id} as local 1", job=job.id)
        store.move(job.id, "complete", values={"loss": -5.0}, value=-5.0, finished=2e9, duration=3.0)
        reporter.event("finished", f"job {job.id} value=-5", job=job.id)
    finally:
        progress.close()
        reporter.close()
    lines = out.getvalue().splitlines()
    progress_lines = [line for line in lines if " progress " in line]
    assert len(progress_lines) == 2, lines  # not one per proposal or submission
    assert "3/10 done" in progress_lines[0] and "4/10 done" in progress_lines[1]
    assert f"best -5 (job {job.id})" in progress_lines[1]
    assert all(ch.isprintable() for line in lines for ch in line)
    assert progress_lines[1] in ExperimentPaths(exp).log.read_text()


def test_refit_time_from_the_proposer_thread_shows_at_the_next_event(tmp_path):
    exp = write_experiment(tmp_path, 3, budget=10)
    term = FakeTerminal()
    reporter, progress, _ = _daemon_like(exp, term, interactive=True)
    try:
        worker = threading.Thread(target=reporter.event, args=("model", "suggested 1 point(s)"),
                                  kwargs={"refit_seconds": 7.25})
        worker.start()
        worker.join()
        assert "refit" not in term.getvalue()  # no snapshot of the store off its owner thread
        reporter.event("proposed", "job 4", job=4)
    finally:
        progress.close()
        reporter.close()
    assert "refit 7.2s" in term.getvalue()


def test_status_json_is_stable(tmp_path):
    exp = write_experiment(tmp_path, 20, failures=True, constraint=True, running=2, budget=30)
    result = cli("status", exp, "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert set(status) == {"experiment", "name", "daemon", "counts", "finished", "max_finished_jobs",
                           "objective", "direction", "best", "running", "recent_failures", "feasibility",
                           "failures_by_kind", "failure_groups", "failure_group_count", "model_best", "related",
                           "outside_variables", "attempts", "max_concurrent", "site_limit", "stopped", "config_error"}
    assert status["stopped"] == []  # no job stopped early (the key is off)
    snap = take_snapshot(exp)
    assert status["counts"] == snap.counts and status["finished"] == snap.budget_used == 20
    assert status["max_finished_jobs"] == 30 and status["objective"] == "loss" and status["name"] == "demo"
    assert set(status["best"]) == {"id", "value", "values", "params", "duration", "finished"}
    assert status["best"]["id"] == snap.best.id and status["best"]["params"] == snap.best.params
    assert [r["id"] for r in status["running"]] == [21, 22]
    assert all(set(r) == {"id", "scheduler_id", "driver", "age_s", "attempt", "finished", "overdue", "reports",
                          "last_step", "last_value"} for r in status["running"])
    assert [r["finished"] for r in status["running"]] == [False, False]
    # submitted years ago, when the finished jobs took under a minute each: hung
    assert [r["overdue"] for r in status["running"]] == [True, True]
    # jobs written without attempts ran once; running jobs whose runner has not started have none
    assert status["attempts"] == {"total": 20, "interrupted_jobs": 0, "resumed_jobs": 0}
    assert [r["attempt"] for r in status["running"]] == [None, None]
    assert [f["id"] for f in status["recent_failures"]] == [7, 14]
    assert all(set(f) == {"id", "failure", "reason"} for f in status["recent_failures"])
    assert status["daemon"] == {"running": False}
    # every 7th job failed the same way: one group; no model_best (no best.json written)
    assert status["failure_group_count"] == 1 and status["model_best"] is None
    assert [(g["count"], g["first_job"], g["last_job"], g["jobs"], g["kind"]) for g in status["failure_groups"]] == [
        (2, 7, 14, [7, 14], "exception")]
    assert "(jobs 7, 14)" in cli("status", exp).stdout  # the two jobs, not "7..14"
    assert status["outside_variables"] == {"jobs": 0, "reasons": {}}  # the variables were not edited
    feasibility = status["feasibility"]
    assert set(feasibility) == {"feasible", "infeasible", "failed", "ignored"}
    assert feasibility["feasible"] == sum(1 for j in snap.jobs if snap.is_feasible(j))
    assert feasibility["failed"] + feasibility["ignored"] == snap.counts["failed"] == sum(status["failures_by_kind"].values())
    assert feasibility["feasible"] + feasibility["infeasible"] == snap.counts["complete"]


def test_a_running_job_whose_result_is_there_reads_as_finished_until_a_daemon_records_it(tmp_path):
    """After a kill -9 of the daemon, its jobs that finished meanwhile are no longer "running" in
    status: their result files are there, waiting for the next daemon."""
    exp = write_experiment(tmp_path, 3, running=2, budget=10)
    paths = ExperimentPaths(exp)
    paths.results.mkdir(parents=True, exist_ok=True)
    paths.result_file(4).write_text("{}")
    status = json.loads(cli("status", exp, "--json").stdout)
    assert [(r["id"], r["finished"]) for r in status["running"]] == [(4, True), (5, False)]
    lines = [line for line in cli("status", exp).stdout.splitlines() if line.startswith("  job ")]
    assert lines[0].endswith("finished: its result is there (run the daemon to record it)")
    assert "its result is there" not in lines[1] and "hung?" in lines[1] and "hung?" not in lines[0]


def test_a_running_job_is_overdue_far_past_the_longest_finished_one():
    from spearmint_nn.views.status import overdue

    assert overdue(400.0, [50.0, 100.0, 120.0])
    assert not overdue(300.0, [50.0, 100.0, 120.0])  # within 3 x the longest
    assert not overdue(400.0, [50.0, 100.0])  # too few finished jobs to tell
    assert not overdue(50.0, [1.0, 2.0, 3.0])  # under a minute: no warning


def test_status_watch_in_a_pipe_prints_plain_views_and_stops_at_the_budget(tmp_path):
    exp = write_experiment(tmp_path, 5, budget=5)
    result = cli("status", exp, "--watch", "--interval", "0.1", timeout=60)
    assert result.returncode == 0, result.stderr
    assert "jobs: 0 pending, 0 running, 5 complete, 0 failed" in result.stdout
    assert re.fullmatch(r"demo: 5/5 done, 0 running, 0 failed, best [-\d.e+]+ \(job \d+\)",
                        result.stdout.splitlines()[-1])
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    lines = cli("status", exp, "--watch", "--json", timeout=60).stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["finished"] == 5


def test_watch_stops_when_the_budget_is_spent_and_on_ctrl_c(tmp_path):
    done = write_experiment(tmp_path, 5, budget=5)
    assert take_snapshot(done).search_is_over
    out = io.StringIO()
    watch(done, progress_text, stream=out, sleep=lambda s: pytest.fail("should not sleep"))
    assert out.getvalue().count("5/5 done") == 1 and "\x1b" not in out.getvalue()

    busy = write_experiment(tmp_path, 3, running=1, budget=5, name="busy")
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            raise KeyboardInterrupt

    term = FakeTerminal()
    watch(busy, progress_text, interval_s=0.5, stream=term, sleep=nap)
    assert naps == [0.5] * 3 and term.getvalue().count("\x1b[H\x1b[2J") == 3


def test_sparkline_runs_from_the_lowest_to_the_highest_character():
    assert sparkline([3.0, 2.0, 2.0, 1.0], chars="abc") == "cbba"
    assert sparkline([5.0, 5.0]) == SPARK_BLOCKS[0] * 2 and sparkline([]) == ""
    long = sparkline(list(range(100, 0, -1)), width=10, chars="0123456789")
    assert len(long) == 10 and long[0] == "9" and long[-1] == "0" and list(long) == sorted(long, reverse=True)
    # a first value far above the rest (a search's running best) flattens nothing after it
    assert sparkline([300.0, 5.0, 4.0, 4.0, 3.9, 3.8], chars="0123456789") == "974420"


def _daemon_runs_as(experiment: Path, pid: int) -> None:
    """daemon.json as ``spearmint-nn run`` writes it, for process ``pid`` on this host."""
    info = {"host": socket.gethostname(), "pid": pid, "started": time.time(), "command": "run"}
    ExperimentPaths(experiment).daemon_info.write_text(json.dumps(info))


def _ended_process() -> int:
    """The id of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_pace_says_when_the_cluster_waits_for_the_optimizer(tmp_path):
    exp = write_experiment(tmp_path, 20, running=1, budget=40)  # max-concurrent 2: one slot free
    _daemon_runs_as(exp, os.getpid())
    snap = take_snapshot(exp)
    finished = [job.fields["finished"] for job in snap.finished]
    created = [job.fields["created"] for job in snap.jobs]
    now = max(finished) + 1
    text = pace_text(snap, now=now, chars="0123456789")
    best_line, rate_line = text.splitlines()
    values = [job.value for job in sorted(snap.finished, key=lambda j: j.fields["finished"])]
    assert best_line.endswith(f"{values[0]:.6g} -> {min(values):.6g}") and best_line.split()[3][-1] == "0"
    minutes = (now - min(created)) / 60  # the search is younger than ten minutes
    done, proposed = len(finished) / minutes, len(created) / minutes
    assert rate_line.startswith(f"last {format_duration(now - min(created))}: {done:.1f} jobs done/min, "
                                f"{proposed:.1f} proposed/min; 1 of 2 slots free")
    assert ("waiting for the optimizer" in rate_line) == (proposed < 0.9 * done)
    # every job proposed long ago, results arriving now: the optimizer is behind with a free slot
    paths = ExperimentPaths(exp)
    for job in snap.jobs:
        job_file = paths.job_file(job.state.value, job.id)
        data = json.loads(job_file.read_text())
        data["created"] -= 3600
        job_file.write_text(json.dumps(data))
    late = pace_text(take_snapshot(exp), now=now, chars="0123456789")
    assert "0.0 proposed/min" in late and late.endswith("(the cluster is waiting for the optimizer)")


def test_the_pace_is_over_the_time_the_search_has_run_and_stops_with_its_daemon(tmp_path):
    exp = write_experiment(tmp_path, 12, running=1, budget=40)  # 13 jobs made over two minutes
    created = [job.fields["created"] for job in take_snapshot(exp).jobs]
    last_event = max(max(created), *(job.fields["finished"] for job in take_snapshot(exp).finished))
    now = min(created) + 180
    _daemon_runs_as(exp, os.getpid())
    rate_line = pace_text(take_snapshot(exp), now=now).splitlines()[1]
    assert rate_line.startswith("last 3m00s: 4.0 jobs done/min, 4.3 proposed/min")  # 12 and 13 in 3 minutes
    _daemon_runs_as(exp, _ended_process())  # stopped: the pace it had, not falling with the time since
    for later in (now, now + 3600):
        rate_line = pace_text(take_snapshot(exp), now=later).splitlines()[1]
        minutes = (last_event - min(created)) / 60
        assert rate_line.startswith(f"last {format_duration(last_event - min(created))} before the daemon "
                                    f"stopped: {12 / minutes:.1f} jobs done/min, {13 / minutes:.1f} proposed/min")
        assert "waiting for the optimizer" not in rate_line


def _status_view(snap) -> str:
    return status_text(status_summary(snap))


def test_the_last_view_of_watch_is_taken_after_the_daemon_exited(tmp_path):
    done = write_experiment(tmp_path, 5, budget=5)  # the job files say the search is over...
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    _daemon_runs_as(done, daemon.pid)  # ... while its daemon is still writing summaries
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        daemon.kill()
        daemon.wait()

    out = io.StringIO()
    try:
        watch(done, _status_view, stream=out, sleep=nap)
    finally:
        daemon.kill()
        daemon.wait()
    views = out.getvalue().split("experiment demo")[1:]
    assert len(naps) == 1 and len(views) == 2
    assert f"daemon running (host {socket.gethostname()}, pid {daemon.pid})" in views[0]
    assert "daemon not running" in views[-1]


def test_watch_ends_when_a_daemon_it_saw_running_stops_before_the_budget(tmp_path):
    busy = write_experiment(tmp_path, 3, budget=5)  # a streak of failures stopped it, say
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    _daemon_runs_as(busy, daemon.pid)
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 2:
            daemon.kill()
            daemon.wait()
        assert len(naps) < 5, "watch went on after the daemon stopped"

    out = io.StringIO()
    try:
        watch(busy, _status_view, stream=out, sleep=nap)
    finally:
        daemon.kill()
        daemon.wait()
    views = out.getvalue().split("experiment demo")[1:]
    assert len(naps) == 2 and len(views) == 2  # a view is written when it changed
    assert "daemon running" in views[0] and "daemon not running" in views[-1]


def test_status_watch_shows_the_pace(tmp_path):
    exp = write_experiment(tmp_path, 5, budget=5)
    result = cli("status", exp, "--watch", "--interval", "0.1", timeout=60)
    assert "best so far  " in result.stdout and "jobs done/min" in result.stdout


def test_status_prints_parameters_to_six_digits_and_the_files_keep_them_all(tmp_path):
    exp = write_experiment(tmp_path, 12)
    config = load_config(exp, check_driver=False)
    store = Store(config.paths).load_all()
    write_summaries(store, config)
    snap = take_snapshot(exp)
    params = snap.best.params
    assert len(repr(params["lr"][0])) > 12  # a proposal's float, every digit of it
    best_line = next(line for line in status_text(status_summary(snap)).splitlines() if line.startswith("best"))
    w = ", ".join(f"{v:.6g}" for v in params["w"])
    assert best_line.endswith(f"lr={params['lr'][0]:.6g} layers={params['layers'][0]} act={params['act'][0]} w=[{w}]")
    assert json.loads(config.paths.best_json.read_text())["params"] == params
    with open(config.paths.results_csv, newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == str(snap.best.id))
    assert float(row["lr"]) == params["lr"][0]


def test_status_says_why_the_models_best_differs_from_the_best_observed(tmp_path):
    exp = write_experiment(tmp_path, 12)
    snap = take_snapshot(exp)
    other = next(job for job in snap.finished if job.id != snap.best.id and job.value is not None)
    paths = ExperimentPaths(exp)
    model_best = {"id": other.id, "mean": other.value - 0.01, "std": 0.2, "value": other.value, "observations": 12}
    paths.best_json.write_text(json.dumps({"id": snap.best.id, "model_best": model_best}))
    lines = status_text(status_summary(take_snapshot(exp))).splitlines()
    why = lines.index(next(line for line in lines if line.startswith("best by the model's posterior mean"))) + 1
    assert lines[why] == ('  (two bests: loss is modelled as noisy, "likelihood": "GAUSSIAN", so its lowest '
                          'observation may be a lucky draw; a deterministic objective wants "NOISELESS")')
    for mean in (snap.best.value, snap.best.value - 0.01):  # one job: its mean beside its value is no second best
        model_best.update(id=snap.best.id, mean=mean, value=snap.best.value)
        paths.best_json.write_text(json.dumps({"id": snap.best.id, "model_best": model_best}))
        assert "two bests" not in status_text(status_summary(take_snapshot(exp)))


def test_a_stopped_job_shows_in_status_results_csv_and_the_live_line(tmp_path):
    exp = write_experiment(tmp_path, 6, running=1, budget=10)
    paths = ExperimentPaths(exp)
    store = Store(paths).load_all()
    why = "median rule: its best value 3.2 by step 4 is worse than the median 1.5 of 5 complete jobs at that step"
    store.move(7, JobState.STOPPED, stopped_reason=why, stopped_step=4, finished=1.8e9, reports=4, last_step=4,
               last_value=3.5)
    snap = take_snapshot(exp)
    assert snap.counts["stopped"] == 1 and snap.budget_used == 7  # one evaluation against the budget
    assert snap.feasibility == {"feasible": 6, "infeasible": 0, "failed": 0, "ignored": 0}  # not a failure
    summary = status_summary(snap)
    assert summary["stopped"] == [{"id": 7, "reports": 4, "last_step": 4, "last_value": 3.5, "stopped_reason": why}]
    text = status_text(summary)
    assert "jobs: 0 pending, 0 running, 6 complete, 0 failed, 1 stopped; 7/10 finished" in text, text
    assert f"stopped early: 1 job(s)\n  job      7  step 4: 3.5 (4 reports)  {why}" in text, text
    assert "1 stopped" in progress_text(snap)
    write_summaries(store, load_config(exp, check_driver=False))
    with open(paths.results_csv, newline="") as handle:
        rows = {row["id"]: row for row in csv.DictReader(handle)}
    assert rows["7"]["state"] == "stopped" and rows["7"]["reason"] == why and rows["7"]["last_value"] == "3.5"
    assert rows["7"]["value"] == "" and rows["7"]["feasible"] == ""


def test_status_lists_the_last_stopped_jobs_and_json_all_of_them(tmp_path):
    exp = write_experiment(tmp_path, 1, running=7, budget=10)
    store = Store(ExperimentPaths(exp)).load_all()
    for job_id in range(2, 9):
        store.move(job_id, JobState.STOPPED, stopped_reason=f"reason {job_id}", finished=1.8e9 + job_id)
    summary = status_summary(take_snapshot(exp))
    assert [entry["id"] for entry in summary["stopped"]] == list(range(2, 9))
    text = status_text(summary)
    assert "stopped early: 7 job(s), the last 5:" in text
    assert "reason 4" in text and "reason 8" in text and "reason 3" not in text and "reason 2" not in text


def test_attempts_tell_jobs_the_cluster_interrupted_from_jobs_resumed_from_their_checkpoint():
    from spearmint_nn.experiment.jobs import Job
    from spearmint_nn.views.status import attempt_counts, attempts_text

    def job(job_id: int, *outcomes: str) -> Job:
        attempts = [{"attempt": n + 1, "outcome": outcome} for n, outcome in enumerate(outcomes)]
        return Job(job_id, JobState.COMPLETE, {}, {"attempts": attempts} if attempts else {})

    finished = [job(1), job(2, "ok"), job(3, "checkpointed", "checkpointed", "ok"), job(4, "requeued", "ok"),
                job(5, "checkpointed", "preempted", "ok")]
    counts = attempt_counts(finished)
    # a wrapper that stopped at its own checkpoint was not interrupted by the cluster
    assert counts == {"total": 10, "interrupted_jobs": 2, "resumed_jobs": 1}
    assert attempts_text(counts) == ("10 runs of the finished jobs; 2 job(s) interrupted by the cluster (requeued, "
                                     "preempted, a failed node) and run again; 1 job(s) stopped at their own "
                                     "checkpoint and resumed")
    assert attempts_text(attempt_counts(finished[2:3])) == ("3 runs of the finished jobs; 1 job(s) stopped at "
                                                           "their own checkpoint and resumed")
