"""The invariant checker itself: silent on a clean run, and naming the rule each kind of damage
breaks (a checker that always says "fine" would make every fault test pass)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers.experiments import quick_config, write_experiment
from helpers.fake_scheduler import run_daemon
from helpers.invariant_checks import counting_wrapper, logged_runs
from helpers.invariants import INVARIANTS, InvariantError, assert_invariants, check_invariants


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> Path:
    folder = write_experiment(tmp_path_factory.mktemp("clean") / "exp", quick_config(**{"max-finished-jobs": 3}),
                              {"wrapper.py": counting_wrapper()})
    assert run_daemon(folder)[0] == 0
    return folder


def _job(state_dir: Path, job_id: int) -> Path:
    return next(state_dir.glob(f"jobs/*/{job_id:06d}.json"))


def _edit_json(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


DAMAGE = {
    "parse": lambda s: _job(s, 2).write_text('{"id": 2, "state": "comp'),
    "one-state": lambda s: shutil.copy(_job(s, 1), s / "jobs" / "running" / "000001.json"),
    "ids": lambda s: (s / "next_id").write_text("2"),
    "inputs": lambda s: _edit_json(s / "inputs" / "000001.json", x=[0.123]),
    "running": lambda s: _move_to_running_without_id(s, 3),
    "finished": lambda s: (s / "results" / "000002.json").unlink(),
    "no-repeats": lambda s: _repeat_job(s, 1, 9),
    "summaries": lambda s: _edit_json(s / "best.json", id=99),
    "permissions": lambda s: os.chmod(s / "results.csv", 0o666),
}


def _move_to_running_without_id(state: Path, job_id: int) -> None:
    source = _job(state, job_id)
    job = {**json.loads(source.read_text()), "state": "running", "scheduler_id": None}
    for key in ("values", "value", "finished", "submitting"):
        job.pop(key, None)
    (state / "jobs" / "running" / source.name).write_text(json.dumps(job))
    source.unlink()


def _repeat_job(state: Path, job_id: int, new_id: int) -> None:
    job = {**json.loads(_job(state, job_id).read_text()), "id": new_id}
    (state / "jobs" / "complete" / f"{new_id:06d}.json").write_text(json.dumps(job))
    shutil.copy(state / "inputs" / f"{job_id:06d}.json", state / "inputs" / f"{new_id:06d}.json")
    shutil.copy(state / "results" / f"{job_id:06d}.json", state / "results" / f"{new_id:06d}.json")
    (state / "next_id").write_text(str(new_id + 1))


def test_a_clean_run_has_no_violation(clean_run):
    assert check_invariants(clean_run, evaluations=logged_runs(clean_run / "runs.txt")) == []
    assert set(DAMAGE) | {"evaluated-once"} == set(INVARIANTS)


@pytest.mark.parametrize("rule", sorted(DAMAGE))
def test_each_kind_of_damage_is_named(clean_run, tmp_path, rule):
    folder = tmp_path / "exp"
    shutil.copytree(clean_run, folder, symlinks=True)
    DAMAGE[rule](folder / ".spearmint")
    problems = check_invariants(folder)
    assert problems and any(p.startswith(f"{rule}: ") for p in problems), problems
    with pytest.raises(InvariantError, match=rule):
        assert_invariants(folder)


def test_an_evaluation_too_many_is_named(clean_run):
    runs = logged_runs(clean_run / "runs.txt")
    assert check_invariants(clean_run, evaluations=runs + runs[:1]) == [
        f"evaluated-once: job {runs[0]} was evaluated 2 times in 1 attempt(s)"]
    assert check_invariants(clean_run, evaluations=runs[1:]) == [
        f"evaluated-once: job {runs[0]} is complete but was never evaluated"]
