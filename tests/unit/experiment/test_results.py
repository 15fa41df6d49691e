"""The job's result file as a type: what the runner writes is what the daemon reads."""
from __future__ import annotations

import json

import pytest

from spearmint_nn.experiment.jobs import BadValues
from spearmint_nn.experiment.results import JobResult, ResultStatus

OK = JobResult(id=7, status=ResultStatus.OK, values={"main": 6.5, "c": -1.0}, host="node1",
               process_started=99.5, started=100.0, ended=112.5)
ERROR = JobResult(id=7, status=ResultStatus.ERROR, failure="exception", error="ValueError: boom",
                  traceback="Traceback ...", location="wrapper.py:3", host="node1", process_started=None,
                  started=100.0, ended=101.0)


@pytest.mark.parametrize("result", [OK, ERROR])
def test_round_trip_through_the_file(tmp_path, result):
    path = tmp_path / "000007.json"
    result.write(path)
    assert JobResult.read(path, 7) == result
    assert json.loads(path.read_text()) == result.to_json()


def test_the_file_keeps_the_keys_a_running_experiment_knows():
    assert list(OK.to_json()) == ["id", "host", "process_started", "started", "status", "values", "ended"]
    assert list(ERROR.to_json()) == ["id", "host", "process_started", "started", "status", "failure", "error",
                                     "traceback", "location", "ended"]


def test_an_older_runners_result_is_read():
    # No failure kind, no location, no process_started: what runners of earlier versions wrote.
    old = JobResult.from_json({"id": 3, "status": "error", "error": "boom", "started": 1, "ended": 4, "host": "h"}, 3)
    assert (old.failure, old.error, old.location, old.traceback) == ("exception", "boom", None, "")
    assert old.job_fields() == {"started": 1, "ended": 4, "host": "h", "duration": 3}
    bare = JobResult.from_json({"id": 3, "status": "error"}, 3)
    assert (bare.failure, bare.error, bare.job_fields()) == ("exception", "no message", {})
    assert JobResult.from_json({"id": 5, "status": "ok", "values": {"loss": 1.0}}, 5).job_fields() == {}


@pytest.mark.parametrize("obj", [None, [], "ok", {"id": 8, "status": "ok"}, {"id": 7}, {"id": 7, "status": "done"},
                                 {"id": "7", "status": "ok"}])
def test_what_is_not_a_result_of_the_job_reads_as_none(obj):
    assert JobResult.from_json(obj, 7) is None


def test_unreadable_and_missing_files_read_as_none(tmp_path):
    (tmp_path / "cut.json").write_text('{"id": 7, "stat')
    (tmp_path / "bytes.json").write_bytes(b"\xff\xfe\x00")
    for name in ("cut.json", "bytes.json", "missing.json"):
        assert JobResult.read(tmp_path / name, 7) is None


def test_fields_of_the_wrong_type_are_unknown_and_values_are_checked_by_the_reader():
    odd = JobResult.from_json({"id": 7, "status": "ok", "values": {"main": "x"}, "started": "noon", "ended": 5,
                               "host": 3, "location": "w.py:1"}, 7)
    assert (odd.started, odd.host, odd.location, odd.duration) == (None, None, None, None)
    assert odd.job_fields() == {"ended": 5}
    with pytest.raises(BadValues) as caught:
        odd.checked_values(["main"])
    assert caught.value.failure == "bad_result"
    assert OK.checked_values(["c", "main"]) == {"main": 6.5, "c": -1.0}


def test_job_fields_give_the_errors_location_printable_and_the_duration():
    located = JobResult.from_json({**ERROR.to_json(), "location": "w\x1b.py:3"}, 7)
    assert located.job_fields() == {"started": 100.0, "ended": 101.0, "host": "node1", "location": "w?.py:3",
                                    "duration": 1.0}
    assert "location" not in OK.job_fields() and OK.job_fields()["duration"] == 12.5
