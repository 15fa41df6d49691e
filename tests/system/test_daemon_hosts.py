"""One daemon per folder, across hosts (spearmint_nn.experiment.lock), with real daemon processes.

"Another host" is a daemon run inside ``unshare --uts --mount`` with its own host name, whose
``.spearmint/daemon.lock`` is bind-mounted over by a file of its own, in its own mount namespace
only. Its flock then locks another inode than the first daemon's and is granted, which is what
a host-local lock does on a shared folder (Lustre's ``localflock``, NFS's ``local_lock``): each
host keeps its own lock table for the same file name. Everything else of the folder is shared.
The filesystem without locks is a real FUSE mount (tests/helpers/lockless_fs.py) whose flock
answers ENOLCK, as NFS without its lock manager does, or ENOSYS, as Lustre without ``flock``.

Both need root (unshare, mount); without it these tests skip.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.experiments import cli, quick_config, start_daemon, wait_for, write_experiment
from helpers.invariant_checks import assert_folder_ok, counting_wrapper, logged_runs
from spearmint_nn.experiment.lock import LOST_EXIT

OTHER_HOST = "other-login"
HELPERS = Path(__file__).resolve().parents[1] / "helpers"
# Jobs wait for a file "go" beside the wrapper: the test decides when they finish.
WAIT_FOR_GO = "while not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'go')): time.sleep(0.05)"


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (unshare --uts --mount, mount)")
    probe = subprocess.run(["unshare", "--uts", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make namespaces here: {probe.stderr.strip()}")


def _experiment(folder: Path, **config) -> Path:
    settings = {"max-finished-jobs": 6, "max-concurrent": 2, "polling-time": 0.3, "daemon-heartbeat-timeout": 4,
                **config}
    return write_experiment(folder, quick_config(**settings), {"wrapper.py": counting_wrapper(WAIT_FOR_GO)})


def _on_other_host(folder: Path, *args: str) -> list[str]:
    """``python -m spearmint_nn ARGS`` on "another host": its own host name, and its own lock
    file over the shared one's name (its host-local lock), in namespaces of its own."""
    lock = folder.resolve() / ".spearmint" / "daemon.lock"
    own_lock = folder.parent / f"{OTHER_HOST}.lock"
    own_lock.touch()
    script = 'hostname "$1" && mount --bind "$2" "$3" && shift 3 && exec "$@"'
    return ["unshare", "--uts", "--mount", "sh", "-c", script, "sh", OTHER_HOST, str(own_lock), str(lock),
            sys.executable, "-m", "spearmint_nn", *args]


def _record(folder: Path) -> dict:
    return json.loads((folder / ".spearmint" / "daemon.json").read_text())


def _running(folder: Path) -> int:
    return len(list((folder / ".spearmint" / "jobs" / "running").glob("*.json")))


def _beating(folder: Path) -> bool:
    try:
        record = _record(folder)
    except (OSError, ValueError):
        return False
    return record.get("heartbeat", 0) > record.get("started", 0)


@pytest.mark.slow
def test_a_daemon_on_another_host_refuses_a_live_one_and_takes_over_a_dead_one(tmp_path):
    _needs_root()
    folder = _experiment(tmp_path / "exp")
    first = start_daemon(folder)
    try:
        wait_for(lambda: _running(folder) == 2 and _beating(folder), 120, "2 running jobs and a heartbeat")
        here = socket.gethostname()
        # Its flock is granted (host-local), but the record names a daemon with a fresh heartbeat.
        refused = subprocess.run(_on_other_host(folder, "run", str(folder)), capture_output=True, text=True,
                                 timeout=120)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert (f"spearmint-nn: {folder.resolve()} is in use: 'spearmint-nn run' on host {here} pid {first.pid} "
                f"runs on this folder, its last heartbeat ") in refused.stderr
        assert "(a daemon is taken for dead 4 s after its last heartbeat); stop it there first" in refused.stderr
        assert first.poll() is None and _record(folder)["pid"] == first.pid  # untouched
        seen = subprocess.run(_on_other_host(folder, "status", str(folder), "--json"), capture_output=True,
                              text=True, timeout=120)
        daemon = json.loads(seen.stdout)["daemon"]  # running, as told by the heartbeat (not "unknown")
        assert daemon["running"] is True and daemon["host"] == here and daemon["heartbeat_age_s"] < 4
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    killed_at = time.time()
    wait_for(lambda: time.time() - _record(folder)["heartbeat"] > 4.5, 120, "the dead daemon's heartbeat to go stale")
    gone = subprocess.run(_on_other_host(folder, "status", str(folder)), capture_output=True, text=True, timeout=120)
    assert f"daemon not running (last heartbeat from host {here} pid {first.pid}, " in gone.stdout
    (folder / "go").touch()  # the jobs the killed daemon left running may finish now
    took = subprocess.run(_on_other_host(folder, "run", str(folder)), capture_output=True, text=True, timeout=300)
    assert took.returncode == 0, took.stdout + took.stderr
    console = took.stdout + took.stderr
    assert (f"warning   taking the folder over from the daemon on host {here} pid {first.pid}, whose last heartbeat "
            f"is ") in console
    assert "s old (more than 4 s: taken for dead)" in console and "budget reached: 6 finished" in console
    record = _record(folder)
    assert record["host"] == OTHER_HOST and record["started"] > killed_at and record["stopped"] >= record["started"]
    assert_folder_ok(folder, folder / "runs.txt")  # the two jobs left running are recorded, none ran twice
    assert len(logged_runs(folder / "runs.txt")) == 6


def test_a_daemon_whose_record_is_replaced_stops_at_once_and_loses_nothing(tmp_path):
    folder = _experiment(tmp_path / "exp")
    daemon = start_daemon(folder)
    try:
        wait_for(lambda: _running(folder) == 2 and _beating(folder), 120, "2 running jobs and a heartbeat")
        jobs = folder / ".spearmint" / "jobs"
        before = {p.relative_to(jobs): p.read_bytes() for p in jobs.rglob("*.json")}
        # What a second daemon on another host writes when it takes the folder over.
        other = {"host": OTHER_HOST, "pid": 4242, "start_ticks": 7, "started": time.time(), "command": "run",
                 "argv": ["spearmint-nn", "run", str(folder)], "heartbeat": time.time(), "stale_after_s": 2}
        record = folder / ".spearmint" / "daemon.json"
        (folder / ".spearmint" / ".daemon.json.test.tmp").write_text(json.dumps(other))
        os.replace(folder / ".spearmint" / ".daemon.json.test.tmp", record)
        replaced = time.monotonic()
        assert daemon.wait(timeout=60) == LOST_EXIT
        assert time.monotonic() - replaced < 5  # the next poll or heartbeat, not the end of the run
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert json.loads(record.read_text()) == other  # not overwritten, not marked stopped
    assert {p.relative_to(jobs): p.read_bytes() for p in jobs.rglob("*.json")} == before  # no job touched
    console = (folder / "console.txt").read_text()
    last = console.strip().splitlines()[-1]
    assert last.endswith(f"stopped   at once, writing nothing more to {folder.resolve()}: {record} now names "
                         f"'spearmint-nn run' on host {OTHER_HOST} pid 4242: another process took the folder over "
                         f"(exit status {LOST_EXIT}; the jobs and results are left to the daemon that holds it now)")
    assert "budget reached" not in console and "stopped   " not in (folder / ".spearmint" / "daemon.log").read_text()
    # Nothing lost: once the other "daemon" is stale, a new run collects the jobs left running.
    (folder / "go").touch()
    wait_for(lambda: time.time() - other["heartbeat"] > 2.5, 120, "the other record to go stale")
    done = cli("run", folder, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "taking the folder over from the daemon on host other-login pid 4242" in done.stderr
    assert_folder_ok(folder, folder / "runs.txt")
    assert len(logged_runs(folder / "runs.txt")) == 6


# ENOLCK: NFS without its lock manager; ENOSYS: Lustre mounted without flock or localflock, where
# filelock's FileLock, used before, fell back to a marker file without a word.
@pytest.mark.parametrize("error,text", [("ENOLCK", "No locks available"), ("ENOSYS", "Function not implemented")])
def test_a_filesystem_without_locks_refuses_the_daemon_and_says_what_to_do(tmp_path, error, text):
    _needs_root()
    folder = _experiment(tmp_path / "exp")
    lock = folder.resolve() / ".spearmint" / "daemon.lock"
    lock.parent.mkdir()
    lock.touch()
    server = subprocess.Popen([sys.executable, str(HELPERS / "lockless_fs.py"), str(lock), error],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        if line.strip() != "mounted":
            pytest.skip(f"cannot mount a FUSE filesystem here: {server.stderr.read().strip()}")
        for command in ("run", "cancel"):
            done = cli(command, folder)
            assert done.returncode == 1, done.stdout + done.stderr
            assert done.stderr == (
                f"spearmint-nn: cannot lock {lock} ({text}): the filesystem of {folder.resolve()} has "
                f"no file locks, and without them nothing keeps a second daemon from running on this experiment "
                f"and corrupting it, so none starts. Put the experiment folder on a filesystem with locks (a local "
                f"disk; NFS with its lock manager, not mounted with nolock; Lustre mounted with -o flock), or ask "
                f"the site to enable them. Lustre's localflock and NFS's local_lock=flock lock on one node only: "
                f"that is enough, the heartbeat in daemon.json keeps daemons on other nodes away\n")
        assert sorted(p.name for p in lock.parent.iterdir()) == ["daemon.lock"]  # nothing else written
        assert not (folder / "runs.txt").exists()
    finally:
        subprocess.run(["umount", "-l", str(lock)], capture_output=True)
        server.wait(timeout=30)
