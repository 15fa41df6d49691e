"""File primitives every writer uses: atomic durable writes and forgiving JSON reads.

A write goes to a temporary dotfile in the same folder (``os.replace`` is atomic only within one
filesystem), is flushed and fsynced, renamed over the target, and the folder is fsynced so the
rename survives a power cut. A reader therefore sees the old file or the new one, never half of
one; a write that fails (a full disk) removes its temporary file and leaves the old file whole.
Temporary names end in ``.tmp`` so that folder scans skip them.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

TMP_SUFFIX = ".tmp"


def fsync_dir(folder: Path) -> None:
    """Make a rename inside ``folder`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` by ``data`` atomically and durably; ``mode`` (e.g. 0o755) sets its permissions."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}{TMP_SUFFIX}"
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:  # e.g. a full disk: name the file the error is about
        tmp.unlink(missing_ok=True)
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def create_json_once(path: Path, obj: Any) -> bool:
    """Create ``path`` holding ``obj`` as JSON unless it exists; whether this call created it.

    The whole file is written and fsynced under a temporary name and then hard-linked into
    place: a link fails if the name exists, so of several processes racing for the same path
    exactly one wins, and a reader never sees a half-written file.

    A failed link is not always a lost race. Over NFSv3 (UDP, or TCP after a reconnect) the
    client retransmits a LINK whose reply was lost; if the server's duplicate request cache
    has forgotten the first one, the retransmission finds the name it just created and answers
    EEXIST although this call made it. The temporary file's link count tells: 2 means the
    link exists, so this call created ``path`` (the check ``open(2)`` recommends for
    ``O_EXCL`` emulation on NFS).
    """
    path = Path(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}{TMP_SUFFIX}"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(obj, handle)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            if not _linked(tmp):
                return False
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return True


def _linked(tmp: Path) -> bool:
    """Whether the temporary file of :func:`create_json_once` has its second name (the link
    that was answered EEXIST did succeed)."""
    try:
        return os.stat(tmp).st_nlink == 2
    except OSError:
        return False


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as strict JSON (no NaN/Infinity) atomically."""
    atomic_write_bytes(path, (json.dumps(obj, indent=1, allow_nan=False) + "\n").encode("utf-8"))


def read_json(path: Path) -> Any | None:
    """The parsed JSON of ``path``, or None if it is missing, unreadable, not UTF-8 or not JSON."""
    try:
        return json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
