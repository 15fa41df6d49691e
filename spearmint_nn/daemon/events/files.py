"""Waking the daemon's main loop when files change, instead of at the next poll only.

A result file, a new pending job (``spearmint-nn add``) or a request (``cancel``, ``stop``) wakes
the loop through inotify (watchdog). Temporary files of atomic writes (dot names) are skipped.
Where inotify is unavailable the loop still polls every ``polling-time`` seconds; on NFS,
inotify misses other machines' writes anyway, which is what the polls are for.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterable


def watch(folders: Iterable[Path], wake: threading.Event, warn: Callable[[str], None]) -> Any:
    """A started watchdog observer that sets ``wake`` on changes in ``folders``; None (after
    ``warn`` with the reason) when file events are unavailable."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    class WakeOnChange(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            name = os.path.basename(getattr(event, "dest_path", "") or event.src_path)
            if not name.startswith("."):  # skip temporary files of atomic writes
                wake.set()

    observer = Observer()
    try:
        for folder in folders:
            observer.schedule(WakeOnChange(), str(folder), recursive=False)
        observer.daemon = True
        observer.start()
    except OSError as exc:
        warn(f"file events unavailable ({exc})")
        return None
    return observer
