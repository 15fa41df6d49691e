"""A disk that refuses the jobs' writes at the moment their wrappers return: a read-only bind
mount over a folder of the experiment, or a small tmpfs filled up. Real mounts, so root is
needed (the tests skip without it, and fail with SPEARMINT_REQUIRE_CLUSTERS=1, as in CI).

The wrapper keeps its own ledger outside the experiment folder: each job's value as computed,
written before it returns, against which what the daemon recorded is checked (every value
recorded once, none a failure, the budget intact).
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from .batch_scenarios import Cluster, make_experiment, start_daemon, stop_daemon, wait_for

WRAPPER = """
import math, os, time

LEDGER, GO = {ledger!r}, {go!r}


def main(job_id, params):
    x, y = float(params["x"][0]), float(params["y"][0])
    value = ((y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2
             + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)
    with open(LEDGER, "a") as ledger:
        ledger.write(f"started {{job_id}}\\n")
    while not os.path.exists(GO):
        time.sleep(0.1)
    with open(LEDGER, "a") as ledger:
        ledger.write(f"returned {{job_id}} {{value!r}}\\n")
    {before_return}
    return value
"""
# As a site that throws the jobs' output away (sbatch --output=/dev/null): the rest of the job
# writes to nowhere.
DISCARD_OUTPUT = "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)"


def need_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("SPEARMINT_REQUIRE_CLUSTERS") == "1":
            pytest.fail("these tests mount filesystems and need root")
        pytest.skip("needs root to mount filesystems")


def wrapper(ledger: Path, go: Path, discard_output: bool = False) -> str:
    """The wrapper's source: it waits for ``go`` to exist before it returns; ``discard_output``:
    and then sends the job's stdout to /dev/null."""
    return WRAPPER.format(ledger=str(ledger), go=str(go), before_return=DISCARD_OUTPUT if discard_output else "pass")


def ledger(path: Path) -> tuple[list[int], dict[int, list[float]]]:
    """(the jobs whose wrapper started, in order; each job's returned values)."""
    started, returned = [], {}
    for line in path.read_text().splitlines() if path.exists() else []:
        words = line.split()
        if words[0] == "started":
            started.append(int(words[1]))
        else:
            returned.setdefault(int(words[1]), []).append(float(words[2]))
    return started, returned


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` read-only (EROFS) while the block runs: a read-only bind mount over itself.
    (A bind mount of its own, so that files held open elsewhere in the experiment folder do not
    keep the remount from happening.)"""
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextlib.contextmanager
def small_disk(mount_point: Path, size: str = "8m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``mount_point`` while the block runs."""
    mount_point.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path) -> Path:
    """Fill the filesystem of ``disk`` to the last page; the filler file, to delete to free it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * chunk)
    finally:
        os.close(fd)
    return filler


def recorded(experiment: Path) -> dict[int, tuple[str, dict]]:
    """Every job file of the experiment: id -> (state, the job's fields)."""
    found = {}
    for path in (experiment / ".spearmint" / "jobs").glob("*/*.json"):
        found[int(path.stem)] = (path.parent.name, json.loads(path.read_text()))
    return found


def assert_each_value_recorded_once(experiment: Path, ledger_file: Path, budget: int) -> dict[int, dict]:
    """Every value a wrapper computed is its job's recorded value, each job complete once, none
    failed, the budget spent on exactly ``budget`` complete jobs; the complete jobs by id."""
    _, returned = ledger(ledger_file)
    jobs = recorded(experiment)
    states = {job_id: state for job_id, (state, _) in jobs.items()}
    assert sorted(states.values()) == ["complete"] * budget, states
    for job_id, (_, job) in jobs.items():
        assert returned.get(job_id), f"job {job_id} is complete but its wrapper never returned"
        assert job["value"] == returned[job_id][-1], (job_id, job["value"], returned[job_id])
        assert "failure" not in job
    return {job_id: job for job_id, (_, job) in jobs.items()}


# ---- the same on a real scheduler (tests/cluster/test_slurm.py and test_sge.py) ----------------

def _cluster_experiment(folder: Path, tmp_path: Path, cluster: Cluster, retry_s: float) -> Path:
    # Grid Engine's jobs do not get the daemon's environment: the job script sets the retry.
    return make_experiment(
        folder, cluster, sleep=0, budget=CLUSTER_BUDGET, concurrent=CLUSTER_BUDGET,
        wrapper=wrapper(tmp_path / "ledger", tmp_path / "go"),
        setup=["echo setup-line-ran", f"export SPEARMINT_RESULT_RETRY={retry_s:g}"])


CLUSTER_BUDGET = 3


def results_folder_read_only_when_the_wrappers_return(tmp_path: Path, cluster: Cluster) -> None:
    need_root()
    exp = _cluster_experiment(tmp_path / "exp", tmp_path, cluster, retry_s=1)
    daemon = start_daemon(exp)
    try:
        wait_for(lambda: len(set(ledger(tmp_path / "ledger")[0])) == CLUSTER_BUDGET, 180, "every wrapper to start")
        with read_only(exp / ".spearmint" / "results"):
            (tmp_path / "go").touch()
            assert daemon.wait(timeout=180) == 0, (exp / "console.txt").read_text()[-3000:]
    finally:
        stop_daemon(daemon)
    jobs = assert_each_value_recorded_once(exp, tmp_path / "ledger", CLUSTER_BUDGET)
    assert all(len(values) == 1 for values in ledger(tmp_path / "ledger")[1].values())  # none run again
    assert {job["result_kept_in"] for job in jobs.values()} == {
        f".spearmint/checkpoints/{job_id:06d}/spearmint-nn-result.json" for job_id in jobs}


def disk_full_when_the_wrappers_return(tmp_path: Path, cluster: Cluster) -> None:
    """The experiment on a small disk that the test fills to its last page, and keeps full,
    while the jobs run: each runner writes its result into the space it reserved; the daemon,
    stopped by the full disk (one line) or not, records every value once there is room again."""
    need_root()
    with small_disk(tmp_path / "disk", "16m") as disk:
        exp = _cluster_experiment(disk / "exp", tmp_path, cluster, retry_s=1)
        daemon = start_daemon(exp)
        try:
            wait_for(lambda: len(set(ledger(tmp_path / "ledger")[0])) == CLUSTER_BUDGET, 180,
                     "every wrapper to start")
            filler = fill(disk)
            (tmp_path / "go").touch()
            results = exp / ".spearmint" / "results"
            wait_for(lambda: len(list(results.glob("*.json"))) == CLUSTER_BUDGET, 120, "the result files")
            filler.unlink()
            code = daemon.wait(timeout=180)
        finally:
            stop_daemon(daemon)
        if code != 0:  # stopped by the full disk: run again, as its one line says
            again = subprocess.run([sys.executable, "-m", "spearmint_nn", "run", str(exp)], capture_output=True,
                                   text=True, timeout=300)
            assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        jobs = assert_each_value_recorded_once(exp, tmp_path / "ledger", CLUSTER_BUDGET)
    assert all(len(values) == 1 for values in ledger(tmp_path / "ledger")[1].values())
    assert not any("result_kept_in" in job for job in jobs.values())


SCENARIOS = [pytest.param(scenario, id=scenario.__name__) for scenario in (
    results_folder_read_only_when_the_wrappers_return, disk_full_when_the_wrappers_return)]
