"""A job whose result file cannot be written loses nothing and fails nothing (local driver; the
same on the real SLURM and Grid Engine: tests/helpers/batch_scenarios.py).

Real mounts at the moment the wrappers return (tests/helpers/refused_writes.py): ``results/``
read-only, the whole disk full for a few seconds, the whole disk full for longer than the
runner's retries, and every place of the result refused.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import refused_writes as refused
from helpers.experiments import quick_config, start_daemon, wait_for, write_experiment

BUDGET = 3


def _experiment(folder: Path, tmp_path: Path, discard_output: bool = False, **config) -> Path:
    settings = {"max-finished-jobs": BUDGET, "max-concurrent": BUDGET, "polling-time": 0.3, **config}
    return write_experiment(folder, quick_config(**settings),
                            {"wrapper.py": refused.wrapper(tmp_path / "ledger", tmp_path / "go", discard_output)})


def _daemon(exp: Path, retry_s: float) -> subprocess.Popen:
    os.environ["SPEARMINT_RESULT_RETRY"] = str(retry_s)  # the jobs inherit it (local driver)
    try:
        return start_daemon(exp)
    finally:
        del os.environ["SPEARMINT_RESULT_RETRY"]


def _all_started(tmp_path: Path) -> None:
    wait_for(lambda: len(set(refused.ledger(tmp_path / "ledger")[0])) == BUDGET, 60, "every wrapper to start")


def _all_returned(tmp_path: Path) -> None:
    wait_for(lambda: len(refused.ledger(tmp_path / "ledger")[1]) == BUDGET, 60, "every wrapper to return")


def _recorded_once(exp: Path, tmp_path: Path) -> dict[int, dict]:
    """The complete jobs, once every computed value is checked recorded once and no job ran twice."""
    jobs = refused.assert_each_value_recorded_once(exp, tmp_path / "ledger", BUDGET)
    assert all(len(values) == 1 for values in refused.ledger(tmp_path / "ledger")[1].values())  # none run again
    return jobs


def _finish(daemon: subprocess.Popen, exp: Path) -> str:
    """The daemon's exit once the budget is reached (started again if the disk stopped it)."""
    code = daemon.wait(timeout=120)
    console = (exp / "console.txt").read_text()
    if code != 0:
        again = subprocess.run([sys.executable, "-m", "spearmint_nn", "run", str(exp)], capture_output=True,
                               text=True, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
        console += again.stdout + again.stderr
    return console


@pytest.mark.slow
def test_a_read_only_results_folder_keeps_every_value_in_the_checkpoint_folder(tmp_path):
    refused.need_root()
    exp = _experiment(tmp_path / "exp", tmp_path)
    daemon = _daemon(exp, retry_s=1)
    try:
        _all_started(tmp_path)
        with refused.read_only(exp / ".spearmint" / "results"):
            (tmp_path / "go").touch()
            assert daemon.wait(timeout=120) == 0, (exp / "console.txt").read_text()
    finally:
        daemon.kill()
    jobs = _recorded_once(exp, tmp_path)
    assert {job["result_kept_in"] for job in jobs.values()} == {
        f".spearmint/checkpoints/{job_id:06d}/spearmint-nn-result.json" for job_id in jobs}
    console = (exp / "console.txt").read_text()
    assert console.count("could not write the result file") == BUDGET, console
    assert "budget reached: 3 finished" in console


@pytest.mark.slow
def test_a_results_folder_read_only_for_seconds_is_written_once_it_takes_writes_again(tmp_path):
    refused.need_root()
    exp = _experiment(tmp_path / "exp", tmp_path)
    daemon = _daemon(exp, retry_s=60)
    try:
        _all_started(tmp_path)
        with refused.read_only(exp / ".spearmint" / "results"):
            (tmp_path / "go").touch()
            _all_returned(tmp_path)
            time.sleep(2)  # the runners retry meanwhile
        assert daemon.wait(timeout=120) == 0, (exp / "console.txt").read_text()
    finally:
        daemon.kill()
    jobs = _recorded_once(exp, tmp_path)
    assert not any("result_kept_in" in job for job in jobs.values())  # the result files, as usual
    assert all((exp / ".spearmint" / "results" / f"{job_id:06d}.json").exists() for job_id in jobs)


@pytest.mark.slow
def test_a_disk_that_fills_up_while_the_jobs_run_still_takes_their_results(tmp_path):
    """The space of each result file is reserved before its wrapper starts: the disk filled
    to its last page when the wrappers return takes every result all the same."""
    refused.need_root()
    with refused.small_disk(tmp_path / "disk") as disk:
        exp = _experiment(disk / "exp", tmp_path)
        daemon = _daemon(exp, retry_s=0)
        try:
            _all_started(tmp_path)
            filler = refused.fill(disk)
            (tmp_path / "go").touch()
            _all_returned(tmp_path)
            results = exp / ".spearmint" / "results"
            wait_for(lambda: len(list(results.glob("*.json"))) == BUDGET, 60, "the result files")
            filler.unlink()  # the daemon, which may have stopped on the full disk, can go on
            console = _finish(daemon, exp)
        finally:
            daemon.kill()
        jobs = _recorded_once(exp, tmp_path)
    assert not any("result_kept_in" in job for job in jobs.values())
    assert "budget reached" in console


@pytest.mark.slow
def test_results_and_checkpoint_folders_read_only_keep_the_values_on_the_jobs_output(tmp_path):
    refused.need_root()
    exp = _experiment(tmp_path / "exp", tmp_path)
    daemon = _daemon(exp, retry_s=0)
    state = exp / ".spearmint"
    try:
        _all_started(tmp_path)
        with refused.read_only(state / "results"), refused.read_only(state / "checkpoints"):
            (tmp_path / "go").touch()
            assert daemon.wait(timeout=120) == 0, (exp / "console.txt").read_text()
    finally:
        daemon.kill()
    jobs = _recorded_once(exp, tmp_path)
    assert {job["result_kept_in"] for job in jobs.values()} == {
        f".spearmint/output/{job_id:06d}.out" for job_id in jobs}


@pytest.mark.slow
def test_a_result_refused_everywhere_is_run_again_never_a_failure_of_its_point(tmp_path):
    """Results and checkpoint folders read-only, the job's output thrown away: the runner keeps
    the value nowhere and exits 75; the daemon runs the job again as its next attempt
    ("unwritten"), which completes once the folder takes writes again. The budget counts the
    job once."""
    refused.need_root()
    exp = _experiment(tmp_path / "exp", tmp_path, discard_output=True, **{"max-finished-jobs": 1, "max-concurrent": 1})
    daemon = _daemon(exp, retry_s=0)
    state = exp / ".spearmint"
    try:
        wait_for(lambda: refused.ledger(tmp_path / "ledger")[0] == [1], 60, "job 1's wrapper to start")
        with refused.read_only(state / "results"), refused.read_only(state / "checkpoints"):
            (tmp_path / "go").touch()
            wait_for(lambda: 1 in refused.ledger(tmp_path / "ledger")[1], 60, "job 1's wrapper to return")
            (tmp_path / "go").unlink()  # the second attempt waits until the folder takes writes again
            wait_for(lambda: refused.recorded(exp)[1][1].get("attempt") == 2, 60, "job 1's second attempt")
        (tmp_path / "go").touch()
        assert daemon.wait(timeout=120) == 0, (exp / "console.txt").read_text()
    finally:
        daemon.kill()
    job = refused.recorded(exp)[1][1]
    assert refused.recorded(exp)[1][0] == "complete" and "failure" not in job
    assert [a["outcome"] for a in job["attempts"]] == ["unwritten", "ok"]
    values = refused.ledger(tmp_path / "ledger")[1][1]
    assert len(values) == 2 and job["value"] == values[-1]  # computed again: the first value was lost
