"""Checking the state-folder invariants of :mod:`helpers.invariants` after a test.

Any test that ran a daemon can end with::

    from invariant_helpers import assert_folder_ok
    assert_folder_ok(folder, runs_file=folder / "runs.txt")

or take the ``folder_invariants`` fixture (not autouse) and call it the same way.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from .invariants import assert_invariants

# A wrapper that logs every call (one job id per line, appended) so that "evaluated exactly
# once" is checked against what really ran. ``{body}`` runs before the value is returned.
COUNTING_WRAPPER = """
import math
import os
import time

def main(job_id, params):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.txt"), "a") as log:
        log.write(f"{{job_id}}\\n")
    {body}
    x, y = float(params["x"][0]), float(params["y"][0])
    return ((y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)
"""


def counting_wrapper(body: str = "pass") -> str:
    """:data:`COUNTING_WRAPPER` with ``body`` (one line of Python, e.g. ``time.sleep(0.3)``)."""
    return COUNTING_WRAPPER.format(body=body)


def logged_runs(runs_file: Path) -> list[int]:
    """Job ids a counting wrapper logged, one per evaluation (empty if it never ran)."""
    return [int(line) for line in runs_file.read_text().split()] if runs_file.exists() else []


def assert_folder_ok(folder: Path, runs_file: Path | None = None, settled: bool = True) -> None:
    """Assert every invariant of ``folder``; with ``runs_file``, also that each job ran once."""
    assert_invariants(folder, settled=settled,
                      evaluations=None if runs_file is None else logged_runs(runs_file))


@pytest.fixture
def folder_invariants() -> Callable[..., None]:
    """:func:`assert_folder_ok` as a fixture."""
    return assert_folder_ok
