"""A one-file filesystem without locks, as a site's NFS without its lock manager or a Lustre
mounted without ``flock`` is: ``flock`` on it fails with ENOLCK (``No locks available``).

It is a FUSE filesystem spoken over ``/dev/fuse`` directly (no libfuse needed), whose root is
one empty regular file mounted over an existing file, so the rest of the folder stays an
ordinary one. The error is ENOLCK unless another errno name is given (ENOSYS: what Lustre
mounted without ``flock`` or ``localflock`` answers)::

    python tests/helpers/lockless_fs.py EXPERIMENT/.spearmint/daemon.lock [ENOSYS]  # "mounted"
    ...                                                                      # flock -> ENOLCK
    umount -l EXPERIMENT/.spearmint/daemon.lock                              # and it exits

It answers what opening, stat-ing and locking the file need (INIT announces FUSE_FLOCK_LOCKS,
so the kernel hands every flock to it instead of locking locally) and ENOSYS to anything else.
Needs root (mount).
"""
from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import sys
import time

IN_HEADER = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, padding
OUT_HEADER = struct.Struct("<IiQ")  # len, error, unique
LOOKUP, FORGET, GETATTR, SETATTR, OPEN, STATFS, RELEASE = 1, 2, 3, 4, 14, 17, 18
FLUSH, INIT, GETLK, SETLK, SETLKW, ACCESS, INTERRUPT, DESTROY, BATCH_FORGET = 25, 26, 31, 32, 33, 34, 36, 38, 42
FUSE_FLOCK_LOCKS = 1 << 10
NO_REPLY = (FORGET, INTERRUPT, BATCH_FORGET)


def _attr_out() -> bytes:
    """fuse_attr_out of the one file: empty, 0644, owned by root."""
    now = int(time.time())
    attr = struct.pack("<QQQQQQIIIIIIIII", 1, 0, 0, now, now, now, 0, 0, 0, stat.S_IFREG | 0o644, 1, 0, 0, 0,
                       4096) + b"\0" * 4  # + flags
    return struct.pack("<QII", 1, 0, 0) + attr


def _answer(opcode: int, body: bytes, lock_error: int = errno.ENOLCK) -> tuple[int, bytes]:
    """(negative errno or 0, reply body) for one request."""
    if opcode == INIT:
        major, minor, readahead, _flags = struct.unpack_from("<IIII", body)
        # fuse_init_out (64 bytes): major, minor, max_readahead, flags, max_background,
        # congestion_threshold, max_write, time_gran, max_pages, map_alignment, flags2, ...
        out = struct.pack("<IIIIHHIIHHI", 7, min(minor, 31), readahead, FUSE_FLOCK_LOCKS, 16, 12, 65536, 1, 0, 0, 0)
        return 0, out + b"\0" * (64 - len(out))
    if opcode in (GETATTR, SETATTR):
        return 0, _attr_out()
    if opcode == OPEN:
        return 0, struct.pack("<QIi", 1, 0, 0)
    if opcode in (RELEASE, FLUSH, ACCESS, DESTROY):
        return 0, b""
    if opcode == STATFS:
        return 0, struct.pack("<QQQQQIIII", 1, 1, 1, 1, 1, 4096, 255, 4096, 0) + b"\0" * 24
    if opcode in (GETLK, SETLK, SETLKW):
        return -lock_error, b""
    if opcode == LOOKUP:
        return -errno.ENOENT, b""
    return -errno.ENOSYS, b""


def serve(target: str, lock_error: int = errno.ENOLCK) -> None:
    fd = os.open("/dev/fuse", os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"fd={fd},rootmode={stat.S_IFREG:o},user_id=0,group_id=0".encode()
    if libc.mount(b"lockless", target.encode(), b"fuse.lockless", 0, options) != 0:
        code = ctypes.get_errno()
        sys.exit(f"mount {target}: {os.strerror(code)}")
    print("mounted", flush=True)
    while True:
        try:
            request = os.read(fd, (1 << 20) + 4096)
        except OSError as exc:
            if exc.errno == errno.EINTR or exc.errno == errno.ENOENT:  # ENOENT: an interrupted request
                continue
            return  # ENODEV: unmounted
        _length, opcode, unique, *_ = IN_HEADER.unpack_from(request)
        if opcode in NO_REPLY:
            continue
        error, body = _answer(opcode, request[IN_HEADER.size:], lock_error)
        try:
            os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + len(body), error, unique) + body)
        except OSError:
            pass  # the request was interrupted meanwhile
        if opcode == DESTROY:
            return


if __name__ == "__main__":
    serve(sys.argv[1], getattr(errno, sys.argv[2]) if len(sys.argv) > 2 else errno.ENOLCK)
