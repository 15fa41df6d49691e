"""Text from users, jobs and schedulers made safe to print: the control characters, named once.

A job's output or a user's key may hold anything; printed as they are, control characters
garble a terminal, split a log line in two or hide text. C0 (below space), DEL and C1
(0x80-0x9f, which some terminals obey as well) are treated alike everywhere.
"""
from __future__ import annotations

import re
from typing import Any

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
