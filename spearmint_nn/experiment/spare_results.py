"""A job's result when its result file cannot be written: a full disk, an exhausted quota, a
folder gone read-only. What the wrapper computed must not be lost, nor counted as a failure of
its point.

Before the wrapper starts, the runner reserves the result file's space
(:func:`reserved_space`: a file written now, overwritten in place at the end), so that a disk
that fills up while the job runs still takes its result. The runner (:func:`deliver`) retries
the result file for ``SPEARMINT_RESULT_RETRY`` seconds (default :data:`RETRY_SECONDS`: a quota
freed, a filesystem remounted), then keeps the result wherever it still can, and exits with
:data:`UNWRITTEN_EXIT`:

1. ``<checkpoint folder>/``:data:`SPARE_NAME`, in the job's own checkpoint folder (another
   folder than ``results/``, and often another filesystem's quota when a site links it to
   scratch space);
2. one line on the job's stdout, ``spearmint-nn result <id>: <the result file's JSON>``: the
   scheduler writes it to the job's output file, which on a full disk often still has room in
   its last block, and which a site may keep on another filesystem.

For a job that ended without a result file, the daemon looks there (:func:`find_spare`) and
records what it finds as the job's result, once. When neither place holds it, the evaluation is
lost to the disk: the daemon runs the job again as its next attempt (outcome
:data:`UNWRITTEN`, like a node failure), never a failure of its point, never counted against the
budget. A wrapper whose own write fails for the same reasons (``OSError`` ENOSPC, EDQUOT, EROFS:
:func:`is_storage_error`) fails its job as :data:`STORAGE_FAILURE`, a kind that says nothing
about the point (not shown to the model, not counted against the budget) and that stops the
daemon after 3 in a row (spearmint_nn.experiment.failures): a full disk fails every job.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from ..files import RESERVED_SUFFIX, atomic_write_json, reserve_space
from .layout import ExperimentPaths
from .results import JobResult

# The runner's exit code when the job's result could not be written (sysexits' EX_TEMPFAIL:
# "a temporary failure; the user is invited to retry").
UNWRITTEN_EXIT = 75
# The outcome of such an attempt, in the job's ``attempts``.
UNWRITTEN = "unwritten"
# The failure kind of a job whose wrapper's own write the disk refused.
STORAGE_FAILURE = "storage"
RETRY_VARIABLE = "SPEARMINT_RESULT_RETRY"
RETRY_SECONDS = 60.0
SPARE_NAME = "spearmint-nn-result.json"
# Bytes reserved for a result file: a result with an error message and its traceback takes a
# few kilobytes.
RESERVED_BYTES = 64 * 1024
# Errors that say the storage refused the write, not that the code or the point is wrong.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
_LINE = re.compile(r"^spearmint-nn result (\d+): (\{.*\})\s*$", re.MULTILINE)
# How far back in the job's stdout the daemon looks for the line: the runner writes it last, and
# a result with an error message takes a few hundred bytes.
_STDOUT_TAIL_BYTES = 16_000


def is_storage_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the filesystem refusing a write: full, over quota, or read-only."""
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def retry_seconds() -> float:
    """How long the runner retries the result file (``SPEARMINT_RESULT_RETRY``, seconds)."""
    try:
        return max(0.0, float(os.environ.get(RETRY_VARIABLE, RETRY_SECONDS)))
    except ValueError:
        return RETRY_SECONDS


def _retried(write: Callable[[], bool], patience: float) -> bool:
    """``write()``'s answer, tried again after each OSError with growing pauses for ``patience``
    seconds; the last error is raised."""
    deadline, pause = time.monotonic() + patience, 1.0
    while True:
        try:
            return write()
        except OSError:
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(2 * pause, 15.0)


@contextlib.contextmanager
def reserved_space(paths: ExperimentPaths, job_id: int) -> Iterator[Path | None]:
    """The space of job ``job_id``'s result file, reserved while the block runs (None when the
    disk has none to give now). Space an earlier attempt kept when it was killed is given back first."""
    result_file = paths.result_file(job_id)
    for stale in result_file.parent.glob(f".{result_file.name}.*{RESERVED_SUFFIX}"):
        stale.unlink(missing_ok=True)
    reserved = reserve_space(result_file, RESERVED_BYTES)
    try:
        yield reserved
    finally:
        if reserved is not None:
            reserved.unlink(missing_ok=True)


def deliver(paths: ExperimentPaths, result: JobResult, reserved: Path | None = None) -> bool | None:
    """Create the job's result file (in the ``reserved`` space), retrying for
    :func:`retry_seconds`: True when this call created it, False when another attempt's result
    was there first, None when it could not be written (the result was then kept in the spare
    places, as far as they took it)."""
    try:
        return _retried(lambda: result.write_once(paths.result_file(result.id), reserved), retry_seconds())
    except OSError as exc:
        print(f"spearmint-nn runner: job {result.id}: cannot write its result file ({exc}); keeping the "
              f"result in its checkpoint folder and on this job's output", file=sys.stderr, flush=True)
    spare = {key: value for key, value in result.to_json().items() if key != "traceback"}
    try:
        atomic_write_json(paths.checkpoint_dir(result.id) / SPARE_NAME, spare)
    except (OSError, ValueError):  # (ValueError: a NaN in an error result's fields cannot be strict JSON)
        pass
    try:
        print(f"spearmint-nn result {result.id}: {json.dumps(spare)}", flush=True)
    except OSError:
        pass
    return None


def find_spare(paths: ExperimentPaths, job_id: int) -> tuple[JobResult, str] | None:
    """The result a runner kept for ``job_id`` when it could not write the result file, and
    where it was found (relative to the experiment folder); None when there is none."""
    spare = paths.checkpoint_dir(job_id) / SPARE_NAME
    try:
        result = JobResult.from_json(json.loads(spare.read_text(encoding="utf-8")), job_id)
    except (OSError, ValueError):
        result = None
    if result is not None:
        return result, str(spare.relative_to(paths.experiment))
    stdout = paths.stdout_file(job_id)
    try:
        with open(stdout, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - _STDOUT_TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    for found in reversed(_LINE.findall(text)):
        try:
            result = JobResult.from_json(json.loads(found[1]), job_id) if int(found[0]) == job_id else None
        except ValueError:
            continue
        if result is not None:
            return result, str(stdout.relative_to(paths.experiment))
    return None

