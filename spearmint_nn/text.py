"""Text from users, jobs and schedulers made safe to print: the control characters, named once.

A job's output or a user's key may hold anything; printed as they are, control characters
garble a terminal, split a log line in two or hide text. C0 (below space), DEL and C1
(0x80-0x9f, which some terminals obey as well) are treated alike everywhere. Parameters are
printed here too, short enough for a person to read.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The same without tab and newline, for text whose lines and indentation are worth keeping.
CONTROL_IN_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# ANSI sequences (colours, cursor moves) of a job's output, dropped with their arguments.
TERMINAL_SEQUENCES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")


def plain(text: Any) -> str:
    """One line (line breaks become spaces) with every other control character shown as "?"."""
    return CONTROL_IN_LINES.sub("?", " ".join(str(text).splitlines()))


def escaped(text: str) -> str:
    """``text`` with its control characters written as Python escapes (``\\n``, ``\\x1b``)."""
    return CONTROL.sub(lambda match: repr(match.group())[1:-1], text)


# Significant digits of a parameter printed for a person (status, logs): a proposal's 17 digits
# hide which parameter changed. results.csv, best.json and the job files keep every digit.
PARAM_DIGITS = 6


def params_text(params: Mapping[str, Any]) -> str:
    """``lr=0.000316228 layers=3 act=relu w=[0.5, -0.25]``: params (JSON form) on one line."""
    def one(values: Any) -> str:
        values = values if isinstance(values, list) else [values]
        shown = [f"{v:.{PARAM_DIGITS}g}" if isinstance(v, float) else plain(v) for v in values]
        return shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
    return " ".join(f"{plain(name)}={one(value)}" for name, value in params.items())


# Runs of job ids shown before the list is cut: a group of a thousand failures reads as its first
# runs, its last one and its count.
JOB_RUNS_SHOWN = 6


def jobs_text(ids: Sequence[int]) -> str:
    """Job ids exactly, runs of consecutive ones joined: ``job 4``, ``jobs 1, 13``, ``jobs 10..13``,
    ``jobs 1..3, 7``; past :data:`JOB_RUNS_SHOWN` runs the first ones, the last and the count
    (``jobs 1, 3, 5, 7, 9, ..., 41 (21 jobs)``)."""
    ordered = sorted(set(ids))
    runs: list[list[int]] = []
    for job_id in ordered:
        if runs and job_id == runs[-1][1] + 1:
            runs[-1][1] = job_id
        else:
            runs.append([job_id, job_id])
    shown = [str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}..{b}" for a, b in runs]
    if len(shown) > JOB_RUNS_SHOWN:
        shown = shown[:JOB_RUNS_SHOWN - 1] + ["...", shown[-1] + f" ({len(ordered)} jobs)"]
    return ("job " if len(ordered) == 1 else "jobs ") + ", ".join(shown)
