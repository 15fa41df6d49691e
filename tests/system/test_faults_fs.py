"""The filesystem misbehaves: the disk fills up, a result shows up seconds after its job ended
(as on NFS), even after the daemon recorded the job failed for want of it, the state folder
turns read-only. Clear errors, nothing corrupted, and a restart
after the problem is fixed finishes the run with every invariant intact.

The disk tests mount a small tmpfs of their own, which needs root; without it they skip.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.experiments import cli, quick_config, write_experiment
from helpers.fake_scheduler import faulty_driver as _driver, jobs_by_id as _jobs, run_daemon, run_daemon_keeping
from helpers.invariant_checks import assert_folder_ok, counting_wrapper
from spearmint_nn import cli as cli_module
from spearmint_nn.daemon.loop import Daemon
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
    # Fill the disk to the last block, and keep it full: a job that ends gives back the space it
    # reserved for its result (spearmint_nn.experiment.spare_results), which the filler takes.
    with open(small_disk / "filler", "wb", buffering=0) as filler:
        while daemon.poll() is None and time.monotonic() < deadline + 120:
            for chunk in (65536, 4096):
                try:
                    while True:
                        filler.write(b"\0" * chunk)
                except OSError:
                    pass
            time.sleep(0.02)
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


# Job 1 is reported ended at once (FaultyLocalDriver.ended_early) while it still runs for 2 s:
# its result file shows up 2 s after the scheduler said it ended, as a file written on a compute
# node shows up late on the login node's NFS mount. It is the best point by far. The other jobs
# end only once job 1 is recorded complete (or after 20 s), so the daemon is still running when
# the late file appears, whatever the load. While a file "hold" is in the folder, job 1 waits
# for the test to remove it before it returns (a result that appears once the daemon has stopped).
LATE_WRAPPER = """
import math
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))

def main(job_id, params):
    with open(os.path.join(HERE, "runs.txt"), "a") as log:
        log.write(f"{job_id}\\n")
    if job_id == 1:
        time.sleep(2.0)
        deadline = time.time() + 60
        while os.path.exists(os.path.join(HERE, "hold")) and time.time() < deadline:
            time.sleep(0.05)
        return -100.0
    recorded = os.path.join(HERE, ".spearmint", "jobs", "complete", "000001.json")
    deadline = time.time() + {wait}
    while not os.path.exists(recorded) and time.time() < deadline:
        time.sleep(0.05)
    x, y = float(params["x"][0]), float(params["y"][0])
    return (y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10
"""


def _late_experiment(folder: Path, wait: float) -> Path:
    config = quick_config(**{"max-finished-jobs": 3, "max-concurrent": 2, "polling-time": 0.2})
    return write_experiment(folder, config, {"wrapper.py": LATE_WRAPPER.replace("{wait}", str(wait))})


def _assert_the_model_saw_job_1s_value(daemon: Daemon) -> None:
    """Three observations, none a failure, the best of them job 1's -100 (not a NaN beside it)."""
    optimizer = daemon.optimizer
    assert optimizer.n_observed == 3
    assert optimizer.feasible_mask().all()
    assert optimizer.incumbent[1] == -100.0


@pytest.mark.parametrize("grace", [10.0, 0.3])
def test_a_result_shown_after_the_scheduler_said_ended_is_recorded_whenever_it_appears(tmp_path, grace):
    """As on NFS: the scheduler reports the job ended 2 s before its result file shows up. Within
    the grace period the result is recorded as it comes; after it the job fails no_result, and
    when the file appears the daemon records the job complete in its place, once, says so once,
    shows the model the value instead of the failure, and counts the job once in the budget."""
    folder = _late_experiment(tmp_path / "exp", wait=20)
    driver = _driver(folder, result_grace_s=grace)
    driver.ended_early = {1}
    code, log, daemon = run_daemon_keeping(folder, driver)
    assert code == 0, log
    job = _jobs(folder)[1]
    assert (job["state"], job["value"]) == ("complete", -100.0), log
    assert "failure" not in job
    assert log.count("finished  job 1 value=-100 ") == 1
    late = [line for line in log.splitlines() if " late " in line]
    if grace > 2.0:
        assert late == [] and "failed    job 1" not in log and "late_result" not in job
    else:
        assert log.count("failed    job 1 no_result: no result file within result-grace (0.3 s) after the job "
                         "ended (") == 1, log
        assert len(late) == 1, log
        assert re.search(r"late      job 1: its result arrived \d+ s after the scheduler said it ended "
                         r"\(a shared filesystem showing it late\); recorded in place of the failure no_result$",
                         late[0]), late
        assert log.index("failed    job 1") < log.index("late      job 1") < log.index("finished  job 1")
        assert job["late_result"]["failure"] == "no_result"
        assert 1.5 <= job["finished"] - job["late_result"]["ended"] < 60
    assert "budget reached: 3 finished" in log
    assert [j["state"] for j in _jobs(folder).values()] == ["complete"] * 3  # the budget counted job 1 once
    _assert_the_model_saw_job_1s_value(daemon)
    assert_folder_ok(folder, folder / "runs.txt")


def test_a_result_that_appears_while_no_daemon_runs_is_recorded_by_the_next_one(tmp_path):
    """The daemon stops (budget reached, job 1 counted as failed no_result) before job 1's late
    result appears; the next daemon records it at its first poll, in place of the failure the
    model was shown when the finished jobs were replayed to it, and stops again at the budget."""
    folder = _late_experiment(tmp_path / "exp", wait=0)
    (folder / "hold").touch()
    driver = _driver(folder, result_grace_s=0.3)
    driver.ended_early = {1}
    code, log = run_daemon(folder, driver)
    assert code == 0
    assert (_jobs(folder)[1]["state"], _jobs(folder)[1]["failure"]) == ("failed", "no_result")
    (folder / "hold").unlink()
    result = folder / ".spearmint" / "results" / "000001.json"
    deadline = time.monotonic() + 30
    while not result.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert result.exists()
    code, log, daemon = run_daemon_keeping(folder)
    assert code == 0, log
    job = _jobs(folder)[1]
    assert (job["state"], job["value"], job["late_result"]["failure"]) == ("complete", -100.0, "no_result")
    assert re.search(r"late      job 1: its result was found \d+ s after the scheduler said it ended", log), log
    assert log.count("late      job 1") == 1 and log.count("finished  job 1 value=-100 ") == 1
    assert "budget reached: 3 finished" in log and "submitted" not in log
    _assert_the_model_saw_job_1s_value(daemon)
    assert_folder_ok(folder, folder / "runs.txt")
