"""The job store: atomic files, one folder per job, crash repair, user drops, summaries."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import spearmint_nn.experiment.store as store_module
from helpers.experiments import quick_config, write_experiment
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.summaries import write_summaries
from spearmint_nn.experiment.jobs import BadValues, check_values
from spearmint_nn.experiment.store import Store
from spearmint_nn.files import atomic_write_json


@pytest.fixture
def config(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(
        tasks={"loss": {"type": "OBJECTIVE"}, "mem": {"type": "CONSTRAINT"}}), {"wrapper.py": ""})
    return load_config(folder)


@pytest.fixture
def store(config):
    s = Store(config.paths)
    s.create_dirs()
    return s.load_all(repair=True)


def _files(config, state):
    return sorted(p.name for p in config.paths.job_dir(state).iterdir())


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "a.json"
    atomic_write_json(target, {"k": [1, 2]})
    atomic_write_json(target, {"k": [3]})
    assert json.loads(target.read_text()) == {"k": [3]}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    with pytest.raises(ValueError):
        atomic_write_json(target, {"k": math.nan})  # strict JSON only, and the old file survives
    assert json.loads(target.read_text()) == {"k": [3]} and len(list(tmp_path.iterdir())) == 1


def test_job_moves_keep_one_file_and_ids_are_never_reused(config, store):
    params = {"x": [1.0], "y": [2.0]}
    a = store.new_job(params, "optimizer")
    b = store.new_job(params, "optimizer")
    assert (a.id, b.id) == (1, 2)
    assert json.loads(config.paths.input_file(1).read_text()) == params
    store.move(1, "running", scheduler_id="x")
    store.move(1, "complete", values={"loss": 3.0, "mem": 1.0}, value=3.0)
    assert _files(config, "pending") == ["000002.json"] and _files(config, "running") == []
    assert _files(config, "complete") == ["000001.json"]
    assert store.counts() == {"pending": 1, "running": 0, "complete": 1, "failed": 0, "stopped": 0}
    # a withdrawn pending job and a stale next_id file must not make an id come back
    config.paths.job_file("pending", 2).unlink()
    assert store.forget_withdrawn() == [2]
    config.paths.next_id.write_text("1")
    reloaded = Store(config.paths).load_all(repair=True)
    assert reloaded.next_id == 3  # input 000002.json still exists
    assert reloaded.allocate_id() == 3
    assert Store(config.paths).load_all().next_id == 4


def test_finished_count_is_what_max_finished_jobs_counts(config, store):
    params = {"x": [1.0], "y": [2.0]}
    ignored = config.ignored_failures
    store.new_job(params, "optimizer")  # pending: not finished
    for failure in ("exception", "bad_result", "cancelled", "bad_wrapper", "nan", "timeout"):
        store.new_job(params, "optimizer", "failed", failure=failure)
    # before any success the wrapper's own failures are held back; ignored kinds never count
    assert store.finished_count(ignored) == 2  # nan, timeout
    assert store.finished_count(()) == 4  # cancelled and bad_wrapper counted when not ignored
    store.new_job(params, "import", "complete", values={"loss": 1.0, "mem": 1.0}, value=1.0)
    assert store.finished_count(ignored) == 5  # the success releases exception and bad_result
    assert Store(config.paths).load_all().finished_count(ignored) == 5


def test_crash_between_write_and_remove_is_repaired_later_state_wins(config, store):
    store.new_job({"x": [1.0], "y": [2.0]}, "optimizer")
    running = store.move(1, "running", scheduler_id="7")
    atomic_write_json(config.paths.job_file("complete", 1), {**running.to_json(), "state": "complete", "value": 1.0,
                                                              "values": {"loss": 1.0, "mem": 0.0}})
    reader = Store(config.paths).load_all()  # readers do not repair, but see the later state
    assert reader.get(1).state == "complete" and reader.counts()["running"] == 0
    assert _files(config, "running") == ["000001.json"]
    repaired = Store(config.paths).load_all(repair=True)
    assert repaired.get(1).state == "complete" and _files(config, "running") == []
    assert any("kept complete" in p for p in repaired.problems)


def test_garbage_files_never_crash_a_reader(config, store):
    (config.paths.job_dir("complete") / "000005.json").write_bytes(b"\xff\x00{half")
    (config.paths.job_dir("failed") / "000006.json").write_text('{"id": 99, "state": "failed"}')
    (config.paths.job_dir("running") / ".000007.json.123.tmp").write_text("{")
    reader = Store(config.paths).load_all()
    assert reader.jobs() == [] and len(reader.problems) == 2
    assert reader.next_id == 7  # ids seen in file names are never handed out again
    Store(config.paths).load_all(repair=True)
    assert _files(config, "complete") == ["000005.json.bad"]
    assert _files(config, "running") == []


def test_user_drops_are_validated(config, store):
    pending = config.paths.job_dir("pending")
    (pending / "mine.json").write_text('{"x": [0.5], "y": [1.5]}')
    (pending / "bad.json").write_text('{"x": [50.0], "y": [1.5]}')
    (pending / "garbage.json").write_bytes(b"\x00\x01 not json")
    (pending / "done.json").write_text('{"params": {"x": 1, "y": 2}, "values": {"loss": 4.5, "mem": -1}}')
    (pending / "typo.json").write_text('{"params": {"x": [1], "y": [2]}, "valeu": 3}')
    (pending / ".half-written.json.tmp").write_text("{")
    dropped = store.dropped_files()
    assert [p.name for p in dropped] == ["bad.json", "done.json", "garbage.json", "mine.json", "typo.json"]
    jobs = {p.name: store.intake_dropped(p, config) for p in dropped}
    assert jobs["mine.json"].state == "pending" and jobs["mine.json"].source == "user"
    assert jobs["mine.json"].params == {"x": [0.5], "y": [1.5]}
    assert jobs["bad.json"].state == "failed" and jobs["bad.json"].failure == "bad_params"
    assert jobs["bad.json"].reason == "params.x: 50.0 is outside [-5, 10]"
    assert jobs["garbage.json"].reason == "params: file is not valid UTF-8 JSON"
    assert jobs["done.json"].state == "complete" and jobs["done.json"].source == "import"
    assert jobs["done.json"].params == {"x": [1.0], "y": [2.0]} and jobs["done.json"].value == 4.5
    assert jobs["typo.json"].reason == "params: unexpected keys ['valeu']; use params with value or values"
    assert store.dropped_files() == []
    assert sorted(p.name for p in pending.iterdir()) == [".half-written.json.tmp", f"{jobs['mine.json'].id:06d}.json"]


def test_interrupted_intake_is_finished_once(config, store):
    job_id = store.allocate_id()
    staged = config.paths.job_dir("pending") / f".drop-{job_id:06d}.json"
    staged.write_text('{"x": [0.0], "y": [0.0]}')
    reloaded = Store(config.paths).load_all(repair=True)
    jobs = reloaded.finish_intakes(config)
    assert [j.id for j in jobs] == [job_id] and not staged.exists()
    assert Store(config.paths).load_all(repair=True).finish_intakes(config) == []


def test_summaries_match_job_files(config, store):
    rows = [((1.0, 2.0), {"loss": 5.0, "mem": 1.0}), ((2.0, 3.0), {"loss": 1.0, "mem": -1.0}),
            ((3.0, 4.0), {"loss": 2.0, "mem": 0.5})]
    for (x, y), values in rows:
        job = store.new_job({"x": [x], "y": [y]}, "optimizer")
        store.move(job.id, "complete", values=values, value=values["loss"], duration=1.5)
    failed = store.new_job({"x": [0.0], "y": [0.0]}, "optimizer")
    store.move(failed.id, "failed", failure="nan", reason="returned loss=nan")
    store.new_job({"x": [9.0], "y": [9.0]}, "optimizer")  # pending: not in results.csv
    write_summaries(store, config)
    with open(config.paths.results_csv) as handle:
        table = list(csv.DictReader(handle))
    assert [r["id"] for r in table] == ["1", "2", "3", "4"]
    assert [r["state"] for r in table] == ["complete"] * 3 + ["failed"]
    assert [r["task:mem"] for r in table[:3]] == ["1.0", "-1.0", "0.5"]
    assert [r["best_so_far"] for r in table] == ["5.0", "5.0", "2.0", "2.0"]  # job 2 violates mem >= 0
    assert table[3]["failure"] == "nan" and table[3]["x"] == "0.0"
    best = json.loads(config.paths.best_json.read_text())
    assert best["id"] == 3 and best["value"] == 2.0 and best["params"] == {"x": [3.0], "y": [4.0]}


def test_events_after_loading_read_no_file(config, store, monkeypatch):
    for _ in range(50):
        job = store.new_job({"x": [1.0], "y": [1.0]}, "optimizer")
        store.move(job.id, "complete", values={"loss": 1.0, "mem": 1.0}, value=1.0)
    big = Store(config.paths).load_all(repair=True)

    def no_reads(path):
        raise AssertionError(f"read {path} after loading")

    monkeypatch.setattr(store_module, "read_json", no_reads)
    job = big.new_job({"x": [2.0], "y": [2.0]}, "optimizer")
    big.move(job.id, "running", scheduler_id="1")
    big.move(job.id, "complete", values={"loss": 0.5, "mem": 1.0}, value=0.5)
    write_summaries(big, config)
    assert json.loads(config.paths.best_json.read_text())["id"] == job.id and big.counts()["complete"] == 51


@pytest.mark.parametrize("raw,tasks,expected", [
    (1.5, ["f"], {"f": 1.5}),
    (np.float32(2.0), ["f"], {"f": 2.0}),
    (np.array([3.0]), ["f"], {"f": 3.0}),
    ({"f": 1, "c": -2.5}, ["f", "c"], {"f": 1.0, "c": -2.5}),
])
def test_check_values_accepts(raw, tasks, expected):
    assert check_values(raw, tasks) == expected


@pytest.mark.parametrize("raw,tasks,failure,message", [
    (math.nan, ["f"], "nan", "returned f=nan"),
    ({"f": 1.0, "c": math.inf}, ["f", "c"], "nan", "returned c=inf"),
    ("0.5", ["f"], "bad_result", "returned str '0.5'; expected a number or a dict of task -> number"),
    (True, ["f"], "bad_result", "returned bool True; expected a number or a dict of task -> number"),
    ({"g": 1.0}, ["f"], "bad_result", "returned keys ['g']; expected exactly ['f']"),
    ({"f": "x"}, ["f"], "bad_result", "task 'f' is str 'x', not a number"),
    (2.0, ["f", "c"], "bad_result", "returned one number but the config has tasks ['c', 'f']: return a dict"),
])
def test_check_values_rejects(raw, tasks, failure, message):
    with pytest.raises(BadValues) as info:
        check_values(raw, tasks)
    assert info.value.failure == failure and str(info.value) == message
