"""SIGKILL the daemon at many moments of a local run, restart it each time, and check that
nothing was lost or evaluated twice (helpers.invariants, plus the wrapper's own log of
every call).

Three kinds of moments: exact ones (inside a submission, before and after the job started and
after it claimed itself; halfway through writing a state file), and random ones during a busy
run (fast jobs: mostly file writes and submissions; the DNGO model: mostly model fits).
Every test here is slow (58 kills: 2 + 1 + 3 + 3 + 1 + 13 + 20 + 15, all run in CI) but the one that
kills a daemon holding a ready point; the quick loop keeps that one and test_daemon's mid-run kill.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.experiments import all_jobs, cli, quick_config, start_daemon, write_experiment
from helpers.invariant_checks import assert_folder_ok, counting_wrapper, logged_runs

FAKE_SCHEDULER = Path(__file__).parents[1] / "helpers" / "fake_scheduler.py"


def _experiment(tmp_path: Path, body: str = "pass", **config) -> Path:
    settings = {"max-finished-jobs": 10, "max-concurrent": 3, "polling-time": 0.3, **config}
    return write_experiment(tmp_path / "exp", quick_config(**settings), {"wrapper.py": counting_wrapper(body)})


def _finish(folder: Path) -> None:
    """Restart once more and run to the budget, then check everything."""
    done = cli("run", folder, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "budget reached" in (folder / ".spearmint" / "daemon.log").read_text()
    assert_folder_ok(folder, folder / "runs.txt")
    complete = list((folder / ".spearmint" / "jobs" / "complete").glob("*.json"))
    assert len(complete) == json.loads((folder / "config.json").read_text())["max-finished-jobs"]


def _lives(folder: Path) -> list[str]:
    """The daemon log split into one part per daemon start."""
    return (folder / ".spearmint" / "daemon.log").read_text().split(" started ")[1:]


def _log_size(folder: Path) -> int:
    log = folder / ".spearmint" / "daemon.log"
    return log.stat().st_size if log.exists() else 0


def _set_budget(folder: Path, max_finished_jobs: int) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max-finished-jobs": max_finished_jobs}))


def _kill_randomly(folder: Path, kills: int, seed: int, window_s: float, then: int = 10) -> None:
    """Start the daemon and SIGKILL it ``kills`` times, each at a random moment within
    ``window_s`` seconds after it has loaded the state (the "state" log line); asserts that
    every kill hit a daemon at work. The budget is out of reach meanwhile (however fast the
    machine, no daemon stops of itself) and is then set to ``then`` jobs beyond those complete."""
    _set_budget(folder, 10 ** 6)
    rng = random.Random(seed)
    for _ in range(kills):
        before = _log_size(folder)
        daemon = start_daemon(folder)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and daemon.poll() is None:
            log = folder / ".spearmint" / "daemon.log"
            if log.exists() and " state " in log.read_bytes()[before:].decode("utf-8", "replace"):
                break
            time.sleep(0.02)
        time.sleep(rng.uniform(0, window_s))
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        assert daemon.returncode == -signal.SIGKILL and " stopped " not in _lives(folder)[-1]
    _set_budget(folder, len(list((folder / ".spearmint" / "jobs" / "complete").glob("*.json"))) + then)


def _run_fake(*args: str) -> int:
    return subprocess.run([sys.executable, str(FAKE_SCHEDULER), *args], timeout=300,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


@pytest.mark.slow
@pytest.mark.parametrize("when", ["before", "after", "after-claim"])
def test_killed_inside_a_submission_the_job_runs_once(tmp_path, when):
    folder = _experiment(tmp_path, body="time.sleep(8.0 if job_id == 2 else 0.2)")  # 2 outlives the restart
    assert _run_fake("kill-in-submit", str(folder), "2", when) == -signal.SIGKILL
    state = folder / ".spearmint"
    job = next((state / "jobs" / "running").glob("000002.json"))
    assert '"scheduler_id": null' in job.read_text() and '"submitting"' in job.read_text()
    if when == "after-claim":
        assert (state / "claims" / "000002.json").exists()
    _finish(folder)
    assert logged_runs(folder / "runs.txt").count(2) == 1
    log = (state / "daemon.log").read_text()
    adopted = "adopted   job 2 running as local" in log and "(found by its claim)" in log
    resubmitted = "job 2 was being submitted when the previous daemon stopped; submitting it again" in log
    if when == "before":
        assert resubmitted and not adopted
    elif when == "after-claim":  # a claimed job is adopted through its claim, never resubmitted
        assert not resubmitted  # (not adopted either when it finished during a slow restart)
        assert adopted or "adopted   job 2 " not in log  # (job 1 may be adopted on a loaded machine)
    else:  # claimed, or even finished, before the restart: a race; either way it ran once
        assert not (adopted and resubmitted)


@pytest.mark.slow
def test_job_left_submitting_is_cancelled_through_its_claim(tmp_path):
    """No daemon running, a job left 'submitting' by a killed one: cancel finds its process."""
    folder = _experiment(tmp_path, body="time.sleep(60 if job_id == 2 else 0.2)")
    assert _run_fake("kill-in-submit", str(folder), "2", "after-claim") == -signal.SIGKILL
    claim = json.loads((folder / ".spearmint" / "claims" / "000002.json").read_text())
    done = cli("cancel", folder, "2")
    assert done.returncode == 0 and "cancelled 1 job(s)" in done.stdout
    job = json.loads((folder / ".spearmint" / "jobs" / "failed" / "000002.json").read_text())
    assert job["failure"] == "cancelled"
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{claim['pid']}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{claim['pid']}") or "Z" in Path(f"/proc/{claim['pid']}/stat").read_text().split(")")[-1][:3]


def _wait_in_log(folder: Path, pattern: str, since: int = 0, timeout: float = 60.0) -> re.Match:
    """The first match of ``pattern`` in the daemon log after byte ``since``, waiting for it."""
    log = folder / ".spearmint" / "daemon.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text()[since:]) if log.exists() else None
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"no {pattern!r} in the daemon log within {timeout:g} s")


def test_killed_holding_a_ready_point_after_a_user_point_loses_and_repeats_nothing(tmp_path):
    """A point kept ready for the next free slot is in memory only: a user's point dropped
    meanwhile takes the next slot before it, and a daemon killed while holding one leaves no
    trace of it (the next run proposes afresh)."""
    folder = _experiment(tmp_path, body="time.sleep(0.4 if job_id == 1 else 1.0)", **{"max-concurrent": 2})
    daemon = start_daemon(folder)
    try:
        # a proposal made with both slots busy: its point waits for the next free slot
        held = _wait_in_log(folder, r"model +suggested 1 point\(s\) .*\(2 pending\)")
        (folder / ".spearmint" / "jobs" / "pending" / "mine.json").write_text('{"x": [1.0], "y": [2.0]}')
        accepted = _wait_in_log(folder, r"job (\d+) \(accepted\)", held.end())
        first_submitted = _wait_in_log(folder, r"submitted job (\d+) ", held.end() + accepted.end())
        assert first_submitted.group(1) == accepted.group(1)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    log = (folder / ".spearmint" / "daemon.log").read_text()
    assert len(all_jobs(folder)) == log.count(" proposed ")  # the ready point was never written
    assert_folder_ok(folder, folder / "runs.txt", settled=False)
    _finish(folder)


@pytest.mark.slow
@pytest.mark.parametrize("writes", [[4, 9, 15]], ids=["3-kills"])
def test_killed_halfway_through_state_file_writes(tmp_path, writes):
    folder = _experiment(tmp_path)
    for n in writes:
        assert _run_fake("kill-at-write", str(folder), str(n)) == -signal.SIGKILL
    _finish(folder)


@pytest.mark.slow
def test_killed_at_random_moments_quick(tmp_path):
    folder = _experiment(tmp_path, body="time.sleep(0.2)")
    _kill_randomly(folder, kills=3, seed=11, window_s=1.0)
    _finish(folder)


@pytest.mark.slow
def test_killed_at_many_exact_write_points(tmp_path):
    folder = _experiment(tmp_path, **{"max-finished-jobs": 40})
    for n in range(3, 42, 3):  # 13 kills at the 3rd, 6th, ... 39th write of a daemon's life
        assert _run_fake("kill-at-write", str(folder), str(n)) == -signal.SIGKILL
    assert " stopped " not in "".join(_lives(folder))
    _finish(folder)


@pytest.mark.slow
def test_killed_at_twenty_random_moments_of_fast_jobs(tmp_path):
    """Jobs that return at once: the daemon spends its time writing files and submitting."""
    folder = _experiment(tmp_path)
    _kill_randomly(folder, kills=20, seed=1, window_s=1.5)
    _finish(folder)


@pytest.mark.slow
def test_killed_at_random_moments_during_model_fits(tmp_path):
    """The DNGO model refits after every result from the third on: most kills land in a fit."""
    folder = _experiment(tmp_path, body="time.sleep(0.3)",
                         **{"model": "dngo", "initial-design": 3, "max-concurrent": 2})
    _kill_randomly(folder, kills=15, seed=2, window_s=4.0)
    assert sum(map(_killed_in_a_fit, _lives(folder))) >= 3
    _finish(folder)


def _killed_in_a_fit(life: str) -> bool:
    """Whether one daemon's log (from its start to its kill) ends with a model fit under way:
    enough results for the model (3) and one arrived after the last proposal, or none yet."""
    lines = life.splitlines()
    state = next((line for line in lines if " state " in line), "")
    complete = int(state.split(" complete")[0].rsplit(" ", 1)[-1]) if " complete" in state else 0
    last = {kind: max((i for i, line in enumerate(lines) if f" {kind} " in line), default=-1)
            for kind in ("model", "finished")}
    return complete + sum(" finished " in line for line in lines) >= 3 and last["finished"] >= last["model"]
