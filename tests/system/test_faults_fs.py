"""The filesystem misbehaves: the disk fills up, a result shows up seconds after its job ended
(as on NFS), the state folder turns read-only. Clear errors, nothing corrupted, and a restart
after the problem is fixed finishes the run with every invariant intact.

The disk tests mount a small tmpfs of their own, which needs root; without it they skip.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.experiments import cli, quick_config, write_experiment
from helpers.fake_scheduler import faulty_driver as _driver, jobs_by_id as _jobs, run_daemon
from helpers.invariant_checks import assert_folder_ok, counting_wrapper
from spearmint_nn import cli as cli_module
from helpers.invariants import check_invariants


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs mounted at tmp_path/disk (unmounted afterwards)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (mount -t tmpfs -o size=2m)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _experiment(folder: Path, body: str = "pass", **config) -> Path:
    settings = {"max-finished-jobs": 8, "max-concurrent": 2, "polling-time": 0.2, **config}
    return write_experiment(folder, quick_config(**settings), {"wrapper.py": counting_wrapper(body)})


def _complete(folder: Path) -> int:
    return len(list((folder / ".spearmint" / "jobs" / "complete").glob("*.json")))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_full_disk_stops_the_daemon_with_one_clear_line_and_corrupts_nothing(tmp_path, small_disk):
    folder = _experiment(small_disk / "exp", body="time.sleep(0.3)")
    console = open(tmp_path / "console.txt", "w+")
    daemon = subprocess.Popen([sys.executable, "-m", "spearmint_nn", "run", str(folder)],
                              stdout=console, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _complete(folder) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(small_disk / "filler", "wb") as filler:  # fill the disk to the last block
        try:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        except OSError:
            pass
    stderr = daemon.communicate(timeout=120)[1]
    assert daemon.returncode == 1
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("spearmint-nn: cannot go on: No space left on device: ")
    assert last.split(": ")[-1].startswith(str(folder.resolve() / ".spearmint"))
    assert check_invariants(folder, settled=False) == []  # every state file whole, nothing lost
    (small_disk / "filler").unlink()
    done = cli("run", folder, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _complete(folder) == 8 or "budget reached: 8 finished" in done.stdout + done.stderr
    assert_folder_ok(folder, folder / "runs.txt")


def test_read_only_state_folder_clear_errors_nothing_changed(tmp_path, small_disk, capsys):
    folder = _experiment(small_disk / "exp", **{"max-finished-jobs": 3})
    assert run_daemon(folder)[0] == 0
    before = _snapshot(folder)
    deadline = time.monotonic() + 10
    while subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, "cannot remount the tmpfs read-only"
        time.sleep(0.2)  # busy while the last job processes close their files
    try:
        lock = folder.resolve() / ".spearmint" / "daemon.lock"
        capsys.readouterr()
        for command in ("run", "cancel"):
            assert cli_module.main([command, str(folder)]) == 1
            assert capsys.readouterr().err == f"spearmint-nn: cannot go on: Read-only file system: {lock}\n"
        assert cli_module.main(["status", str(folder), "--json"]) == 0  # readers never write
        assert json.loads(capsys.readouterr().out)["counts"]["complete"] == 3
        assert cli_module.main(["report", str(folder)]) == 0
        assert capsys.readouterr().out.count("\n") == 4
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert _snapshot(folder) == before
    assert_folder_ok(folder, folder / "runs.txt")


@pytest.mark.parametrize("grace,outcome", [(4.0, "complete"), (0.3, "failed")])
def test_result_visible_after_the_scheduler_said_ended(tmp_path, grace, outcome):
    """As on NFS: the scheduler reports the job ended ~2 s before its result file shows up.
    Within the grace period the result is recorded; after it the job fails, once, and the late
    result is not recorded a second time."""
    folder = _experiment(tmp_path / "exp", body="time.sleep(2.0 if job_id == 1 else 0)", **{"max-finished-jobs": 3})
    driver = _driver(folder, result_grace_s=grace)
    driver.ended_early = {1}
    code, log = run_daemon(folder, driver)
    assert code == 0
    job = _jobs(folder)[1]
    assert job["state"] == outcome
    if outcome == "failed":
        assert (job["failure"], job["reason"]) == ("no_result", "completed")
        deadline = time.monotonic() + 10
        while not (folder / ".spearmint" / "results" / "000001.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert log.count("finished  job 1 ") + log.count("failed    job 1 ") == 1  # one outcome, once
    assert_folder_ok(folder, folder / "runs.txt")


