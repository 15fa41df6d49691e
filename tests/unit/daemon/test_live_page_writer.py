"""When the daemon rewrites its live report page (daemon/summaries.py): after changes, no more
often than the page reloads, at least at its heartbeat, final at exit, and never fatally."""
from __future__ import annotations

import io
import re
import time

from helpers.experiments import write_finished_experiment
from spearmint_nn.daemon import summaries
from spearmint_nn.daemon.event_log import EventLog
from spearmint_nn.daemon.summaries import SummaryWriter
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.jobs import JobState
from spearmint_nn.experiment.store import Store


def _finished_shown(page) -> str:
    return re.search(r"<dt>finished</dt><dd>([^<]*)</dd>", page.read_text()).group(1)


def _written(page) -> float:
    return float(re.search(r'data-written="([0-9.]+)"', page.read_text()).group(1))


def _folder(tmp_path):
    exp = write_finished_experiment(tmp_path, 5, running=2, budget=10)
    config = load_config(exp, check_driver=False)
    return config, Store(config.paths).load_all()


def test_the_page_follows_changes_at_most_every_reload_period_and_ends_final(tmp_path, monkeypatch):
    config, store = _folder(tmp_path)
    page = config.paths.report_html
    writer = SummaryWriter(store, config)
    writer.write_if_due()  # the first cycle writes it
    assert _finished_shown(page) == "5 of 10" and 'class="running"' in page.read_text()

    store.move(6, JobState.COMPLETE, values={"loss": 0.5}, value=0.5, finished=2e9, duration=3.0)
    writer.mark_stale()
    assert writer.seconds_until_due() == 0.0  # the summaries are due
    writer.write_if_due()  # results.csv now; the page waits for its reload period
    assert "\n6,complete," in config.paths.results_csv.read_text()
    assert _finished_shown(page) == "5 of 10"
    assert 0 < writer.seconds_until_due() <= summaries.RELOAD_SECONDS

    monkeypatch.setattr(summaries, "RELOAD_SECONDS", 0.2)
    time.sleep(0.25)
    assert writer.seconds_until_due() == 0.0
    writer.write_if_due()
    assert _finished_shown(page) == "6 of 10"

    # nothing changes: the page waits for its heartbeat, then is written again all the same
    before = _written(page)
    writer.write_if_due()
    assert _written(page) == before
    monkeypatch.setattr(summaries, "HEARTBEAT_SECONDS", 0.3)
    time.sleep(0.35)
    writer.write_if_due()
    assert _written(page) > before

    writer.finish()
    text = page.read_text()
    assert 'class="final"' in text and "location.reload" not in text


def test_a_job_that_starts_changes_no_summary_but_the_page_shows_it(tmp_path, monkeypatch):
    monkeypatch.setattr(summaries, "RELOAD_SECONDS", 0.0)
    config, store = _folder(tmp_path)
    writer = SummaryWriter(store, config)
    writer.write_if_due()
    store.new_job({"lr": [0.01], "layers": [2], "act": ["relu"], "w": [0.0, 0.0]}, "optimizer")
    wait = writer.seconds_until_due()  # the page's own time share: a few of its build times
    assert wait < 1.0
    time.sleep(wait)
    writer.write_if_due()
    assert "<dt>running / pending</dt><dd>2 / 1</dd>" in config.paths.report_html.read_text()


def test_a_page_that_cannot_be_written_is_said_once_and_stops_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(summaries, "RELOAD_SECONDS", 0.0)
    config, store = _folder(tmp_path)
    config.paths.report_html.mkdir()  # a folder in the page's place: every write fails
    stream = io.StringIO()
    log = EventLog(None, stream)
    try:
        writer = SummaryWriter(store, config, log)
        for value in (0.4, 0.3):
            job = store.new_job({"lr": [0.01], "layers": [2], "act": ["relu"], "w": [0.0, 0.0]}, "optimizer")
            store.move(job.id, JobState.COMPLETE, values={"loss": value}, value=value, finished=2e9, duration=1.0)
            writer.mark_stale()
            writer.write_if_due()
        writer.finish()
    finally:
        log.close()
    assert config.paths.best_json.exists() and '"value": 0.3' in config.paths.best_json.read_text()
    assert stream.getvalue().count("was not rewritten") == 1, stream.getvalue()
