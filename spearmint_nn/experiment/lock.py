"""The experiment's lock: one writer at a time (the daemon, or a CLI command while none runs),
across the hosts that share the folder.

Two guards, because a shared filesystem may honour only the first on one host:

- ``daemon.lock``, locked with ``flock(LOCK_EX | LOCK_NB)`` (this module's own call, never a
  marker-file fallback). The kernel drops the lock when its holder dies, so the lock file a
  killed daemon leaves behind never blocks a restart, and the file is never deleted (deleting a
  lock file lets two processes lock two different files of the same name). Where the
  filesystem cannot lock at all (``flock`` fails with ENOLCK, EOPNOTSUPP or ENOSYS: NFS without
  its lock manager, Lustre mounted without ``flock`` or ``localflock``) nothing starts:
  :class:`LockUnsupported` says what to do. Where locks exist but only on one host (Lustre's
  ``localflock``, NFS's ``local_lock=flock`` or ``=all``, ``nolock``), a daemon on another host
  is granted the lock all the same; the record below is what stops it.
- ``daemon.json``, the record of the holder: ``host``, ``pid``, ``start_ticks`` (its process
  start, field 22 of /proc/<pid>/stat), ``started`` (unix time it took the folder), ``command``
  (``run``, ``cancel``, ``add``), ``argv``, and for a daemon ``heartbeat`` (unix time, rewritten
  atomically every poll period by a thread of the daemon) and ``stale_after_s`` (how old its
  heartbeat may get before others take it for dead: :func:`stale_after`); ``stopped`` (unix
  time) once it exited normally. A process that is granted the lock still refuses the folder
  (:class:`DaemonBusy`) while the record names a live daemon other than itself: on another host,
  one whose heartbeat is younger than its ``stale_after_s``; on this host, one whose process
  still runs. A daemon whose heartbeat went stale is taken for dead: the next one starts with a
  warning (:attr:`FolderLock.took_over`).

A running daemon checks at every poll and wake (:meth:`FolderLock.problem`) that the lock file
is still the inode it locked and that the record still names it (host, pid, start); if not,
another daemon took the folder over or the state folder was deleted or replaced, and it stops at
once without writing anything more (exit status :data:`LOST_EXIT`).

Residual risk, where locks are host-local: two daemons started on two hosts within the same
instant both see no live record; each writes its own, and the one whose record was overwritten
stops at its first check, before its loop writes anything of its own.
"""
from __future__ import annotations

import errno
import fcntl
import os
import socket
import sys
import threading
import time
from typing import Any, Callable

from ..processes import process_stat
from ..errors import DaemonError
from ..files import atomic_write_json, read_json
from .layout import ExperimentPaths

# flock's answers that mean "this filesystem cannot lock", not "someone holds it".
NO_LOCKS_ERRNOS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})
# A daemon's heartbeat is taken for dead after max(STALE_FLOOR_S, STALE_POLLS * polling-time)
# without a refresh. The floor: an NFS client may show another host a copy of daemon.json up to
# 60 s old (the default acregmax and acdirmax of its attribute and lookup caches), and a
# heartbeat write may wait on a busy file server; 90 s covers both with a margin, so a live
# daemon is never taken for dead from another host. The multiple: a daemon polls (and beats) every
# polling-time seconds, 30-60 s on a busy cluster, and five missed beats in a row mean it is gone.
STALE_FLOOR_S = 90.0
STALE_POLLS = 5
# The heartbeat is rewritten every polling-time seconds, but at most once a second (a test's
# polling-time of 0.2 s would fsync five times a second) and at least three times per window.
MIN_BEAT_S = 1.0
# Exit status of a daemon that found the folder taken over under it (see the module docstring).
LOST_EXIT = 3


class DaemonBusy(RuntimeError):
    """Another process holds the experiment's lock, or a live daemon on another host holds the folder."""


class LockUnsupported(DaemonError):
    """The filesystem of the experiment folder cannot lock files: no daemon may start there."""


def stale_after(polling_time: float, configured: float | None = None) -> float:
    """Seconds without a heartbeat after which a daemon is taken for dead: ``daemon-heartbeat-timeout``
    when set, else ``max(STALE_FLOOR_S, STALE_POLLS * polling_time)``."""
    return configured if configured is not None else max(STALE_FLOOR_S, STALE_POLLS * polling_time)


def acquire_lock(paths: ExperimentPaths, command: str, stale_after_s: float | None = None) -> "FolderLock":
    """Take the experiment's lock at once, or raise :class:`DaemonBusy` naming the holder, or
    :class:`LockUnsupported` where the filesystem cannot lock. ``stale_after_s`` (a daemon's):
    what its record tells others (:func:`stale_after`)."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder = read_json(paths.daemon_info)
        live = _live_daemon(holder if isinstance(holder, dict) else {})
        if live is not None:
            raise DaemonBusy(f"{paths.experiment} is in use: {live}")
    except BlockingIOError:
        os.close(fd)
        raise DaemonBusy(f"{paths.experiment} is in use: {holder_description(paths)}") from None
    except OSError as exc:
        os.close(fd)
        if exc.errno in NO_LOCKS_ERRNOS:
            raise LockUnsupported(no_locks_message(paths, exc)) from None
        raise OSError(exc.errno, exc.strerror, str(paths.lock)) from None
    except BaseException:
        os.close(fd)
        raise
    return FolderLock(paths, fd, command, holder if isinstance(holder, dict) else None, stale_after_s)


def hold_for_daemon(paths: ExperimentPaths, settings: Callable[[], tuple[float, float | None]],
                    on_lost: Callable[[], None]) -> "FolderLock":
    """:func:`acquire_lock` for ``run``, its heartbeat thread started. ``settings()`` gives
    (polling-time, daemon-heartbeat-timeout), read at every beat: polling-time may be edited live."""
    def window() -> float:
        return stale_after(*settings())

    lock = acquire_lock(paths, "run", window())
    lock.start_heartbeat(lambda: settings()[0], window, on_lost)
    return lock


def lost_line(paths: ExperimentPaths, problem: str) -> str:
    """The console line of a daemon that stops because the folder is no longer its own."""
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S')} stopped   at once, writing nothing more to {paths.experiment}: "
            f"{problem} (exit status {LOST_EXIT}; the jobs and results are left to the daemon that holds it now)")


def no_locks_message(paths: ExperimentPaths, exc: OSError) -> str:
    """Why no daemon starts where flock fails, and what to do about it."""
    return (f"cannot lock {paths.lock} ({exc.strerror}): the filesystem of {paths.experiment} has no file "
            f"locks, and without them nothing keeps a second daemon from running on this experiment and "
            f"corrupting it, so none starts. Put the experiment folder on a filesystem with locks (a local "
            f"disk; NFS with its lock manager, not mounted with nolock; Lustre mounted with -o flock), or ask "
            f"the site to enable them. Lustre's localflock and NFS's local_lock=flock lock on one node only: "
            f"that is enough, the heartbeat in daemon.json keeps daemons on other nodes away")


class FolderLock:
    """The lock and record of the process holding an experiment (see the module docstring)."""

    def __init__(self, paths: ExperimentPaths, fd: int, command: str, previous: dict[str, Any] | None,
                 stale_after_s: float | None):
        self.paths, self._fd = paths, fd
        st = os.fstat(fd)
        self._inode = (st.st_dev, st.st_ino)
        stat = process_stat(os.getpid())
        now = time.time()
        self.record: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid(),
                                       "start_ticks": stat[1] if stat else None, "started": now,
                                       "command": command, "argv": sys.argv}
        if stale_after_s is not None:
            self.record.update(heartbeat=now, stale_after_s=stale_after_s)
        self.took_over = _takeover_line(previous, now)
        self.lost: str | None = None  # why the folder is no longer ours, once found
        self._beats: threading.Thread | None = None
        self._stop = threading.Event()
        self._writing = threading.Lock()  # a heartbeat write and release() never interleave
        try:
            atomic_write_json(paths.daemon_info, self.record)
        except BaseException:
            os.close(fd)
            raise

    def problem(self) -> str | None:
        """None while the lock file and the record are still this process's, else why not."""
        if self.lost is not None:
            return self.lost
        try:
            st = os.stat(self.paths.lock)
        except FileNotFoundError:
            return f"its lock file {self.paths.lock} is gone (the state folder was deleted or moved)"
        if (st.st_dev, st.st_ino) != self._inode:
            return f"its lock file {self.paths.lock} was replaced (the state folder was deleted or recreated)"
        info = read_json(self.paths.daemon_info)
        if not isinstance(info, dict):
            if self.paths.daemon_info.exists():
                return None  # unreadable for a moment (a file server hiccup): checked again next time
            return f"{self.paths.daemon_info} is gone (the state folder was emptied)"
        if any(info.get(key) != self.record[key] for key in ("host", "pid", "start_ticks", "started")):
            return (f"{self.paths.daemon_info} now names 'spearmint-nn {info.get('command')}' on host "
                    f"{info.get('host')} pid {info.get('pid')}: another process took the folder over")
        return None

    def beat(self, stale_after_s: float | None = None) -> bool:
        """Refresh the heartbeat if the folder is still ours; False (and :attr:`lost` set) if not."""
        with self._writing:
            problem = self.problem()
            if problem is not None:
                self.lost = problem
                return False
            self.record["heartbeat"] = time.time()
            if stale_after_s is not None:
                self.record["stale_after_s"] = stale_after_s
            try:
                atomic_write_json(self.paths.daemon_info, self.record)
            except OSError:
                pass  # a full disk or a file server hiccup: the next beat tries again
            return True

    def start_heartbeat(self, polling_time: Callable[[], float], stale_after_s: Callable[[], float],
                        on_lost: Callable[[], None]) -> None:
        """Beat every polling period (re-read each time: polling-time may be edited live) in a
        thread of its own, so that a poll or a submission waiting on a slow scheduler does not
        age the heartbeat; call ``on_lost`` once the folder is found not to be ours any more."""
        def beats() -> None:
            while True:
                window = stale_after_s()
                if self._stop.wait(min(max(MIN_BEAT_S, polling_time()), window / 3)):
                    return
                if not self.beat(window):
                    on_lost()
                    return

        self._beats = threading.Thread(target=beats, name="heartbeat", daemon=True)
        self._beats.start()

    def release(self) -> None:
        """Stop the heartbeat, mark the record stopped (if still ours) and unlock."""
        self._stop.set()
        if self._beats is not None:
            self._beats.join()
        try:
            with self._writing:
                if "heartbeat" in self.record and self.problem() is None:
                    atomic_write_json(self.paths.daemon_info, {**self.record, "stopped": time.time()})
        finally:
            os.close(self._fd)  # closing the last descriptor of the file drops the flock


def _age(info: dict[str, Any], now: float) -> float | None:
    beat = info.get("heartbeat")
    return now - beat if isinstance(beat, (int, float)) and not isinstance(beat, bool) else None


def _stale_after_s(info: dict[str, Any]) -> float:
    window = info.get("stale_after_s")
    ok = isinstance(window, (int, float)) and not isinstance(window, bool) and window > 0
    return float(window) if ok else STALE_FLOOR_S


def _same_process(info: dict[str, Any]) -> bool | None:
    """Whether the record's process still runs: True/False on its own host (pid and start), None elsewhere."""
    if info.get("host") != socket.gethostname() or not isinstance(info.get("pid"), int):
        return None
    stat = process_stat(info["pid"])
    if stat is None or stat[0] in ("Z", "X"):
        return False
    return info.get("start_ticks") is None or stat[1] == info["start_ticks"]


def _live_daemon(info: dict[str, Any]) -> str | None:
    """Who holds the folder, when the record names a live daemon that is not this process."""
    me = info.get("pid") == os.getpid() and info.get("host") == socket.gethostname()
    if info.get("command") != "run" or info.get("stopped") is not None or me:
        return None
    now = time.time()
    age, window = _age(info, now), _stale_after_s(info)
    alive = _same_process(info)
    if alive is None:
        alive = age is not None and age < window
    if not alive:
        return None
    beat = "" if age is None else f", its last heartbeat {age:.0f} s ago"
    return (f"'spearmint-nn run' on host {info.get('host')} pid {info.get('pid')} runs on this folder{beat} "
            f"(a daemon is taken for dead {window:g} s after its last heartbeat); stop it there first")


def _takeover_line(previous: dict[str, Any] | None, now: float) -> str | None:
    """The warning of a daemon that starts over another host's daemon whose heartbeat went stale."""
    if previous is None or previous.get("command") != "run" or previous.get("stopped") is not None \
            or previous.get("host") == socket.gethostname():
        return None
    age = _age(previous, now)
    since = "without a heartbeat" if age is None else f"whose last heartbeat is {age:.0f} s old"
    return (f"taking the folder over from the daemon on host {previous.get('host')} pid {previous.get('pid')}, "
            f"{since} (more than {_stale_after_s(previous):g} s: taken for dead); if it still runs there, "
            f"stop it: it stops by itself at its next poll")


def holder_description(paths: ExperimentPaths) -> str:
    info = read_json(paths.daemon_info)
    if not isinstance(info, dict):
        return f"another process holds {paths.lock}"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return (f"'spearmint-nn {info.get('command', 'run')}' on host {info.get('host')} "
            f"pid {info.get('pid')} holds {paths.lock} (since {since})")


def daemon_state(paths: ExperimentPaths) -> dict[str, Any]:
    """What daemon.json says: ``running`` true/false, or null for a daemon on another host that
    wrote no heartbeat (an older version); ``heartbeat_age_s`` (null without one)."""
    info = read_json(paths.daemon_info)
    if not isinstance(info, dict) or info.get("command") != "run":
        return {"running": False}
    age = _age(info, time.time())
    running: bool | None = _same_process(info)
    if info.get("stopped") is not None:
        running = False
    elif running is None and age is not None:
        running = age < _stale_after_s(info)
    return {"running": running, "host": info.get("host"), "pid": info.get("pid"), "started": info.get("started"),
            "heartbeat_age_s": None if age is None else round(max(age, 0.0), 1)}
