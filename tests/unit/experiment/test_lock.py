"""The experiment's lock and its record (spearmint_nn.experiment.lock), on real files and flock.

The record of a daemon "on another host" is written here as that daemon would write it: the
whole point is that the flock granted to this process (as on Lustre with ``localflock``) does
not let it take a folder whose record names a live daemon elsewhere.
"""
from __future__ import annotations

import json
import os
import socket
import time

import pytest

from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.lock import (LOST_EXIT, STALE_FLOOR_S, DaemonBusy, acquire_lock, daemon_state,
                                          lost_line, stale_after)


@pytest.fixture
def paths(tmp_path) -> ExperimentPaths:
    paths = ExperimentPaths(tmp_path)
    paths.state.mkdir()
    return paths


def _elsewhere(paths: ExperimentPaths, beat_age: float | None, window: float = 30.0, **extra) -> dict:
    """daemon.json of a daemon on host other-login whose last heartbeat is ``beat_age`` s old."""
    record = {"host": "other-login", "pid": 4242, "start_ticks": 99, "started": time.time() - 100,
              "command": "run", "argv": ["spearmint-nn", "run", str(paths.experiment)],
              "stale_after_s": window, **extra}
    if beat_age is not None:
        record["heartbeat"] = time.time() - beat_age
    paths.daemon_info.write_text(json.dumps(record))
    return record


def test_the_window_has_a_floor_and_follows_the_polling_time():
    assert stale_after(3.0) == STALE_FLOOR_S == 90.0
    assert stale_after(60.0) == 300.0  # five polls of a polite daemon on a busy cluster
    assert stale_after(60.0, configured=4.0) == 4.0


def test_a_second_holder_on_this_host_is_refused_by_flock_and_told_who_holds_it(paths):
    first = acquire_lock(paths, "run", stale_after_s=90.0)
    try:
        with pytest.raises(DaemonBusy, match=rf"'spearmint-nn run' on host {socket.gethostname()} pid {os.getpid()} "
                                             rf"holds {paths.lock}"):
            acquire_lock(paths, "cancel")  # another open file description: flock refuses it
    finally:
        first.release()
    again = acquire_lock(paths, "cancel")  # released: free again
    again.release()


def test_a_live_daemon_on_another_host_keeps_the_folder_although_flock_was_granted(paths):
    _elsewhere(paths, beat_age=5.0)
    before = paths.daemon_info.read_bytes()
    for command in ("run", "cancel", "add"):
        with pytest.raises(DaemonBusy) as refused:
            acquire_lock(paths, command)
        assert (f"{paths.experiment} is in use: 'spearmint-nn run' on host other-login pid 4242 runs on this "
                f"folder, its last heartbeat 5 s ago (a daemon is taken for dead 30 s after its last heartbeat)"
                in str(refused.value))
    assert paths.daemon_info.read_bytes() == before  # its record untouched
    probe = os.open(paths.lock, os.O_RDWR)  # and the refused attempts left the flock free
    try:
        import fcntl
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(probe)


def test_a_stale_heartbeat_is_a_dead_daemon_taken_over_with_a_warning(paths):
    _elsewhere(paths, beat_age=31.0)
    lock = acquire_lock(paths, "run", stale_after_s=90.0)
    try:
        assert lock.took_over == ("taking the folder over from the daemon on host other-login pid 4242, whose last "
                                  "heartbeat is 31 s old (more than 30 s: taken for dead); if it still runs there, "
                                  "stop it: it stops by itself at its next poll")
        record = json.loads(paths.daemon_info.read_text())
        assert (record["host"], record["pid"], record["command"]) == (socket.gethostname(), os.getpid(), "run")
        assert record["stale_after_s"] == 90.0 and record["heartbeat"] >= record["started"]
    finally:
        lock.release()


@pytest.mark.parametrize("record", [{"stopped": 1.0}, {"command": "cancel"}])
def test_a_stopped_daemon_or_a_finished_command_elsewhere_is_no_holder(paths, record):
    _elsewhere(paths, beat_age=1.0, **record)
    lock = acquire_lock(paths, "run", stale_after_s=90.0)
    assert lock.took_over is None
    lock.release()


def test_the_holder_notices_a_record_or_lock_file_that_is_not_its_own(paths):
    lock = acquire_lock(paths, "run", stale_after_s=90.0)
    try:
        assert lock.problem() is None and lock.beat(90.0)
        mine = paths.daemon_info.read_text()
        _elsewhere(paths, beat_age=0.0)  # a daemon on another host took the folder over
        assert lock.problem() == (f"{paths.daemon_info} now names 'spearmint-nn run' on host other-login pid 4242: "
                                  f"another process took the folder over")
        assert not lock.beat(90.0) and lock.lost is not None
        assert json.loads(paths.daemon_info.read_text())["host"] == "other-login"  # the beat wrote nothing
        paths.daemon_info.write_text(mine)
        assert lock.problem() is not None  # once lost, lost for good
    finally:
        lock.release()
    assert json.loads(paths.daemon_info.read_text()).get("stopped") is None  # a lost holder marks nothing


def test_a_replaced_or_deleted_lock_file_is_noticed(paths):
    lock = acquire_lock(paths, "run", stale_after_s=90.0)
    try:
        paths.lock.unlink()
        assert lock.problem() == f"its lock file {paths.lock} is gone (the state folder was deleted or moved)"
        paths.lock.write_text("")  # recreated, as by a daemon that made the state folder anew
        assert lock.problem() == (f"its lock file {paths.lock} was replaced (the state folder was deleted or "
                                  f"recreated)")
        line = lost_line(paths, lock.problem())
        assert f"stopped   at once, writing nothing more to {paths.experiment}: its lock file" in line
        assert line.endswith(f"(exit status {LOST_EXIT}; the jobs and results are left to the daemon that holds it now)")
    finally:
        lock.release()


def test_the_heartbeat_thread_beats_and_reports_a_takeover(paths):
    lock = acquire_lock(paths, "run", stale_after_s=3.0)
    lost = []
    lock.start_heartbeat(lambda: 0.01, lambda: 3.0, lambda: lost.append(True))
    try:
        first = json.loads(paths.daemon_info.read_text())["heartbeat"]
        deadline = time.monotonic() + 10
        while json.loads(paths.daemon_info.read_text())["heartbeat"] == first:
            assert time.monotonic() < deadline, "no heartbeat within 10 s"
            time.sleep(0.05)
        _elsewhere(paths, beat_age=0.0)
        while not lost:
            assert time.monotonic() < deadline, "the takeover was not noticed"
            time.sleep(0.05)
    finally:
        lock.release()


def test_release_marks_a_daemon_stopped(paths):
    lock = acquire_lock(paths, "run", stale_after_s=90.0)
    lock.start_heartbeat(lambda: 3.0, lambda: 90.0, lambda: None)
    lock.release()
    assert json.loads(paths.daemon_info.read_text())["stopped"] > 0
    assert daemon_state(paths)["running"] is False


def test_status_judges_a_daemon_elsewhere_by_its_heartbeat(paths):
    _elsewhere(paths, beat_age=5.0)
    state = daemon_state(paths)
    assert state["running"] is True and state["host"] == "other-login" and 4.9 <= state["heartbeat_age_s"] <= 6
    _elsewhere(paths, beat_age=40.0)
    assert daemon_state(paths)["running"] is False
    _elsewhere(paths, beat_age=1.0, stopped=time.time())
    assert daemon_state(paths)["running"] is False
    _elsewhere(paths, beat_age=None)  # written by a version without heartbeats: cannot be told from here
    assert daemon_state(paths) == {"running": None, "host": "other-login", "pid": 4242,
                                   "started": json.loads(paths.daemon_info.read_text())["started"],
                                   "heartbeat_age_s": None}
