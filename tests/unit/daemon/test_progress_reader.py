"""The daemon's reading of running jobs' report files (spearmint_nn.daemon.events.curves), on
a real store and real files: only the bytes appended since the last poll are read, garbage is
said once per job, a job's record keeps the summary, and a new reader (a restarted daemon)
rebuilds every curve from the files (the daemon end to end: tests/system/test_progress_reports.py)."""
from __future__ import annotations

import builtins
import io

import pytest

from spearmint_nn.daemon.events.curves import CurveReader
from spearmint_nn.daemon.event_log import EventLog
from spearmint_nn.stopping.curve import CurvePoint
from spearmint_nn.experiment.jobs import JobState
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.store import Store


@pytest.fixture
def store(tmp_path) -> Store:
    store = Store(ExperimentPaths(tmp_path))
    store.create_dirs()
    store.paths.reports.mkdir()
    return store


@pytest.fixture
def console():
    stream = io.StringIO()
    reporter = EventLog(None, stream)
    yield reporter, stream
    reporter.close()


def _running(store: Store) -> int:
    job_id = store.new_job({"x": [0.5]}, "optimizer").id
    store.move(job_id, JobState.RUNNING, scheduler_id=str(job_id))
    return job_id


def _append(store: Store, job_id: int, text: str) -> None:
    with open(store.paths.report_file(job_id), "ab") as handle:
        handle.write(text.encode())


@pytest.fixture
def reads(monkeypatch) -> list[tuple[str, int]]:
    """(file name, bytes returned) of every read of a report file."""
    calls: list[tuple[str, int]] = []
    real_open = builtins.open

    class Counting:
        def __init__(self, handle, name):
            self._handle, self._name = handle, name

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._handle.close()

        def seek(self, *args):
            return self._handle.seek(*args)

        def read(self, *args):
            data = self._handle.read(*args)
            calls.append((self._name, len(data)))
            return data

    def counting_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        if "reports" in str(path) and mode == "rb":
            return Counting(handle, str(path).rsplit("/", 1)[-1])
        return handle

    monkeypatch.setattr(builtins, "open", counting_open)
    return calls


def test_each_poll_reads_only_what_was_appended_and_records_the_summary(store, console, reads):
    reporter, _ = console
    job_id, quiet = _running(store), _running(store)
    curves = CurveReader(store, reporter)
    _append(store, job_id, "1 0.9\n2 0.7\n")
    assert curves.poll() is True
    assert {k: store.get(job_id).fields.get(k) for k in ("reports", "last_step", "last_value")} == {
        "reports": 2, "last_step": 2, "last_value": 0.7}
    _append(store, job_id, "3 0.5\n4 0.")  # the last line half written
    assert curves.poll() is True
    assert store.get(job_id).fields["last_step"] == 3
    assert curves.poll() is False  # nothing whole appended: the record is not rewritten
    _append(store, job_id, "45\n")
    assert curves.poll() is True
    assert curves.curve(job_id) == [CurvePoint(1, 0.9), CurvePoint(2, 0.7), CurvePoint(3, 0.5), CurvePoint(4, 0.45)]
    # the job without a report file is never opened; each poll read the other's bytes from the
    # last whole line on (the half line again at each poll until it was whole)
    assert [name for name, _ in reads] == ["000001.txt"] * 4
    assert [n for _, n in reads] == [len("1 0.9\n2 0.7\n"), len("3 0.5\n4 0."), len("4 0."), len("4 0.45\n")]
    assert "reports" not in store.get(quiet).fields


def test_garbage_is_skipped_and_said_once_per_job_in_its_record(store, console):
    reporter, stream = console
    job_id = _running(store)
    curves = CurveReader(store, reporter)
    _append(store, job_id, "1 0.9\nepoch 2 done\n2 nan\n")
    curves.poll()
    _append(store, job_id, "oops\n3 0.4\n")
    curves.poll()
    job = store.get(job_id)
    assert job.fields["reports"] == 2 and job.fields["last_value"] == 0.4
    assert "'epoch 2 done'" in job.fields["report_warning"] and "000001.txt" in job.fields["report_warning"]
    assert stream.getvalue().count("warning") == 1
    # a restarted daemon reads the file again from its start and says nothing new
    again = CurveReader(store, reporter)
    again.poll()
    assert stream.getvalue().count("warning") == 1 and store.get(job_id).fields["report_warning"] == job.fields["report_warning"]
    assert again.curve(job_id) == curves.curve(job_id)


def test_a_new_reader_rebuilds_every_report_and_an_ending_job_gets_its_last_ones(store, console):
    reporter, _ = console
    job_id = _running(store)
    first = CurveReader(store, reporter)
    _append(store, job_id, "".join(f"{i} {1 / (i + 1)!r}\n" for i in range(5)))
    first.poll()
    _append(store, job_id, "5 0.1\n")  # written after the first daemon's last poll (it was killed)
    second = CurveReader(store, reporter)
    second.poll()
    _append(store, job_id, "# attempt 2\n6 0.05\n")  # the job's last report, just before it ends
    fields = second.final(job_id)
    assert fields == {"reports": 7, "last_step": 6, "last_value": 0.05}
    store.move(job_id, JobState.COMPLETE, values={"main": 0.05}, value=0.05, **fields)
    assert [(r.step, r.attempt) for r in second.curve(job_id)] == [(i, 1) for i in range(6)] + [(6, 2)]
    # a finished job is never polled again; its curve is read from the file once when asked for
    third = CurveReader(store, reporter)
    assert third.poll() is False
    assert third.curve(job_id) == second.curve(job_id)
    assert third.final(_running(store)) == {}  # a job that never reported ends with no curve fields
