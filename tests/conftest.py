"""Shared test setup: one torch thread (the machine is shared) and experiment-folder helpers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # torch is a dependency, but the non-model tests do not need it
    pass

@pytest.fixture(autouse=True)
def _package_logger_restored():
    """A daemon Reporter made in-process takes over the ``spearmint_nn`` logger; a test that
    does not close it must not hide later tests' log records from ``caplog``."""
    import logging

    logger = logging.getLogger("spearmint_nn")
    saved = (logger.level, logger.propagate, list(logger.handlers))
    yield
    logger.level, logger.propagate = saved[0], saved[1]
    logger.handlers[:] = saved[2]


BRANIN_VARIABLES = {
    "x": {"type": "FLOAT", "size": 1, "min": -5, "max": 10},
    "y": {"type": "FLOAT", "size": 1, "min": 0, "max": 15},
}

BRANIN_WRAPPER = """
import math

def main(job_id, params):
    x, y = float(params["x"][0]), float(params["y"][0])
    return ((y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)
"""


def write_experiment(folder: Path, config: dict[str, Any], files: dict[str, str] | None = None) -> Path:
    """Create an experiment folder with ``config.json`` and the given files (dedented text)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    for name, text in (files or {}).items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder


def quick_config(**overrides: Any) -> dict[str, Any]:
    """A Branin config on the Sobol chooser (no model fits), polling often."""
    config = {"language": "PYTHON", "main-file": "wrapper.py", "variables": BRANIN_VARIABLES,
              "model": "sobol", "seed": 1, "max-concurrent": 2, "max-finished-jobs": 5, "polling-time": 0.5}
    config.update(overrides)
    return config


@pytest.fixture
def make_experiment(tmp_path: Path) -> Callable[..., Path]:
    """``make_experiment(config=None, files=None, name="exp")``: a folder under tmp_path.

    Defaults: :func:`quick_config` and the Branin wrapper as ``wrapper.py``.
    """
    def factory(config: dict[str, Any] | None = None, files: dict[str, str] | None = None,
                name: str = "exp") -> Path:
        return write_experiment(tmp_path / name, quick_config() if config is None else config,
                                {"wrapper.py": BRANIN_WRAPPER} if files is None else files)
    return factory


def cli(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run ``python -m spearmint_nn ARGS`` as a real process; text output captured."""
    return subprocess.run([sys.executable, "-m", "spearmint_nn", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def start_daemon(experiment: Path, *extra: str) -> subprocess.Popen:
    """``spearmint-nn run`` in the background; its console lines go to ``<experiment>/console.txt``."""
    log = open(experiment / "console.txt", "ab")
    return subprocess.Popen([sys.executable, "-m", "spearmint_nn", "run", str(experiment), *extra],
                            stdout=log, stderr=subprocess.STDOUT)


def all_jobs(experiment: Path) -> dict[int, tuple[str, dict[str, Any]]]:
    """job id -> (state folder, parsed job file); asserts each id is in one folder only."""
    found: dict[int, tuple[str, dict[str, Any]]] = {}
    for state in ("pending", "running", "complete", "failed"):
        for path in sorted((experiment / ".spearmint" / "jobs" / state).glob("*.json")):
            job = json.loads(path.read_text())
            assert job["id"] not in found, f"job {job['id']} in {found[job['id']][0]} and {state}"
            assert job["state"] == state and path.name == f"{job['id']:06d}.json"
            found[job["id"]] = (state, job)
    return dict(sorted(found.items()))
