"""Learning curves: the report files jobs append to, and the one parser the daemon and views share.

A job's reports (``.spearmint/reports/<id>.txt``, see :mod:`spearmint_nn.experiment.layout`)
are text lines appended as the job runs, by :func:`spearmint_nn.job.report` or by a SHELL
wrapper writing to ``$SPEARMINT_REPORT_FILE``::

    1 0.93
    2 0.71
    # attempt 2
    3 0.64

* ``<step> <value>``: two decimal numbers separated by white space (``3``, ``0.5``, ``-1e-3``),
  both finite; the step need not be an integer, and steps are expected, not required, to grow;
* ``# attempt <n>``: written by the runner before attempt n >= 2 of the job starts, so every
  report after it belongs to that attempt (attempt 1 has no mark); any other line starting with
  ``#`` is a comment, and empty lines are nothing;
* anything else (one number, three, ``nan``, ``inf``, text, undecodable bytes) is *garbage*:
  skipped, and counted so that the daemon can say so once per job.

Writers append whole lines, each in one write, so a line is data only once its newline is
there: a last line without one is a line being written (or one a killed writer left half done)
and is left unread, to be read whole from the same offset once its newline arrives. The daemon
keeps, per job, the offset after the last whole line it read and reads only the bytes beyond it
(:func:`read_since`); views read a whole file (:func:`read_curve`).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..stopping.curve import CurvePoint

# A step or a value: a plain decimal number. (float() would also take "nan", "inf", "1_000"
# and surrounding white space, none of which a report should be.)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_INTEGER = re.compile(r"[-+]?\d+")
_ATTEMPT_MARK = re.compile(r"#\s*attempt\s+(\d+)\s*")
# A line longer than this without its newline is no report being written but garbage (binary
# output sent to the file): it is skipped as one garbage line rather than re-read at every poll.
MAX_LINE_BYTES = 4096
# How much of a garbage line a warning quotes.
QUOTED_CHARS = 60


@dataclass
class Chunk:
    """What :func:`parse` found in some bytes of a report file.

    reports : the whole lines that were reports, in file order; consumed : the bytes of whole
    lines (where the next read starts); attempt : the attempt in force after them; garbage :
    the number of garbage lines; first_garbage : the first one, quoted, or None.
    """

    reports: list[CurvePoint] = field(default_factory=list)
    consumed: int = 0
    attempt: int = 1
    garbage: int = 0
    first_garbage: str | None = None


def parse_number(token: str) -> int | float | None:
    """A token of a report line as a finite number (an int when written as one), else None."""
    if not _NUMBER.fullmatch(token):
        return None
    if _INTEGER.fullmatch(token):
        return int(token)
    number = float(token)
    return number if math.isfinite(number) else None  # 1e999 overflows to inf


def parse_line(line: str) -> tuple[int | float, float] | None:
    """``(step, value)`` of a report line (without its newline), else None."""
    tokens = line.split()
    if len(tokens) != 2:
        return None
    step, value = parse_number(tokens[0]), parse_number(tokens[1])
    return None if step is None or value is None else (step, float(value))


def parse(data: bytes, attempt: int = 1) -> Chunk:
    """The reports in ``data``, bytes of a report file read from the start of a line;
    ``attempt``: the attempt in force there (the ``attempt`` of the chunk before)."""
    chunk = Chunk(attempt=attempt)
    end = data.rfind(b"\n") + 1
    if end == 0 and len(data) > MAX_LINE_BYTES:  # no newline in sight: see MAX_LINE_BYTES
        end = len(data)
    for raw in data[:end].splitlines():
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            line = None
        if line == "":
            continue
        if line is not None and line.startswith("#"):
            mark = _ATTEMPT_MARK.fullmatch(line)
            if mark:
                chunk.attempt = int(mark.group(1))
            continue
        parsed = None if line is None else parse_line(line)
        if parsed is None:
            chunk.garbage += 1
            if chunk.first_garbage is None:
                shown = raw.decode("utf-8", errors="replace").strip()
                shown = shown if len(shown) <= QUOTED_CHARS else shown[: QUOTED_CHARS - 3] + "..."
                chunk.first_garbage = repr(shown)
            continue
        chunk.reports.append(CurvePoint(parsed[0], parsed[1], chunk.attempt))
    chunk.consumed = end
    return chunk


def read_since(path: Path, offset: int = 0, attempt: int = 1) -> Chunk:
    """The whole lines of ``path`` beyond byte ``offset`` (one open, one read); an absent file
    is an empty chunk. ``consumed`` counts from ``offset``."""
    try:
        with open(path, "rb") as handle:
            if offset:
                handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return Chunk(attempt=attempt)
    except OSError:
        return Chunk(attempt=attempt)  # unreadable now (NFS trouble): read again at the next poll
    return parse(data, attempt)


def read_curve(path: Path) -> list[CurvePoint]:
    """Every report of a job's file, in file order (an absent file: none)."""
    return read_since(path).reports


def curve_summary(reports: list[CurvePoint]) -> dict[str, int | float]:
    """The fields a job record keeps of its curve: ``reports`` (how many), ``last_step`` and
    ``last_value`` (the last one written, which is the latest whether or not steps grew)."""
    if not reports:
        return {}
    last = reports[-1]
    return {"reports": len(reports), "last_step": last.step, "last_value": last.value}


def report_names(folder: Path) -> set[int]:
    """The job ids that have a report file in ``folder``: one listing (which also makes an NFS
    client ask the server afresh; see spearmint_nn.daemon.events.late_results)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return set()
    return {int(name[:-4]) for name in names if name.endswith(".txt") and name[:-4].isdigit()}
