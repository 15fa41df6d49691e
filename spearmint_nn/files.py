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
RESERVED_SUFFIX = ".reserved" + TMP_SUFFIX


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


def reserve_space(path: Path, size: int) -> Path | None:
    """A temporary file of ``size`` bytes beside ``path``, written and fsynced now, for
    :func:`create_json_once` to write ``path`` into later without asking the disk for new space:
    a disk that fills up meanwhile (a quota, scratch space) still takes the file. None when the
    space cannot be had now (the later write then asks the disk as usual). Filesystems that copy
    on write (btrfs, ZFS) allocate anew even then: there it only helps when space came back."""
    path = Path(path)
    reserved = path.parent / f".{path.name}.{os.getpid()}{RESERVED_SUFFIX}"
    try:
        with open(reserved, "wb") as handle:
            handle.write(b" " * size)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError:
        reserved.unlink(missing_ok=True)
        return None
    return reserved


def create_json_once(path: Path, obj: Any, reserved: Path | None = None) -> bool:
    """Create ``path`` holding ``obj`` as JSON unless it exists; whether this call created it.

    The whole file is written and fsynced under a temporary name and then hard-linked into
    place: a link fails if the name exists, so of several processes racing for the same path
    exactly one wins, and a reader never sees a half-written file. ``reserved``, a file of
    :func:`reserve_space`, is that temporary file, overwritten in place (and cut to its length).

    A failed link is not always a lost race. Over NFSv3 (UDP, or TCP after a reconnect) the
    client retransmits a LINK whose reply was lost; if the server's duplicate request cache
    has forgotten the first one, the retransmission finds the name it just created and answers
    EEXIST although this call made it. The temporary file's link count tells: 2 means the
    link exists, so this call created ``path`` (the check ``open(2)`` recommends for
    ``O_EXCL`` emulation on NFS).
    """
    path = Path(path)
    in_place = reserved is not None and reserved.exists()
    tmp = reserved if in_place else path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}{TMP_SUFFIX}"
    try:
        with open(tmp, "r+b" if in_place else "wb") as handle:
            handle.write(json.dumps(obj).encode("utf-8"))
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
            created = True
        except FileExistsError:
            created = _linked(tmp)
    except BaseException as exc:
        if not (in_place and isinstance(exc, OSError)):  # a reserved file stays for the next try
            tmp.unlink(missing_ok=True)
        raise
    tmp.unlink(missing_ok=True)
    if created:
        fsync_dir(path.parent)
    return created


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
