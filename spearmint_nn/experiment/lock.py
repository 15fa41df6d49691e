"""The experiment's lock: one writer at a time (the daemon, or a CLI command while none runs).

filelock uses ``flock`` here: the kernel drops the lock when its holder dies, so the lock file a
killed daemon leaves behind never blocks a restart. ``daemon.json`` beside it says who holds it,
for the messages of the processes that find it taken and for ``status``.
"""
from __future__ import annotations

import os
import socket
import time
from typing import Any

from filelock import FileLock, Timeout

from ..files import atomic_write_json, read_json
from .layout import ExperimentPaths


class DaemonBusy(RuntimeError):
    """Another process holds the experiment's lock."""


def acquire_lock(paths: ExperimentPaths, command: str) -> FileLock:
    """Take the experiment's lock at once or raise :class:`DaemonBusy` naming the holder."""
    lock = FileLock(str(paths.lock), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise DaemonBusy(f"{paths.experiment} is in use: {holder_description(paths)}") from None
    atomic_write_json(paths.daemon_info, {"host": socket.gethostname(), "pid": os.getpid(),
                                          "started": time.time(), "command": command})
    return lock


def holder_description(paths: ExperimentPaths) -> str:
    info = read_json(paths.daemon_info)
    if not isinstance(info, dict):
        return f"another process holds {paths.lock}"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return (f"'spearmint-nn {info.get('command', 'run')}' on host {info.get('host')} "
            f"pid {info.get('pid')} holds {paths.lock} (since {since})")


def daemon_state(paths: ExperimentPaths) -> dict[str, Any]:
    """What daemon.json says, with ``running`` true/false (null when it ran on another host)."""
    info = read_json(paths.daemon_info)
    if not isinstance(info, dict) or info.get("command") != "run":
        return {"running": False}
    running: bool | None = None
    if info.get("host") == socket.gethostname() and isinstance(info.get("pid"), int):
        try:
            os.kill(info["pid"], 0)
            running = True
        except ProcessLookupError:
            running = False
        except PermissionError:
            running = True
    return {"running": running, "host": info.get("host"), "pid": info.get("pid"), "started": info.get("started")}
