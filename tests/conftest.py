"""Shared test setup: one torch thread (the machine is shared) and experiment-folder helpers."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

from helpers.experiments import BRANIN_WRAPPER, quick_config, write_experiment

os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # torch is a dependency, but the non-model tests do not need it
    pass

@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the tests' ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``-n 3 --dist loadgroup`` (what CI runs) the tests of each real scheduler run one
    after another in one process: they share its one controller, and some restart it or change
    its limits and partitions for a while (SLURM's and Grid Engine's are independent). Other
    tests go by module, so a module's fixtures (a fitted model, a finished search) are made once."""
    for item in items:
        scheduler = next((name for name in ("slurm", "sge") if item.get_closest_marker(name)), None)
        item.add_marker(pytest.mark.xdist_group(scheduler or item.nodeid.split("::")[0]))


@pytest.fixture(autouse=True)
def _package_logger_restored():
    """A daemon EventLog made in-process takes over the ``spearmint_nn`` logger; a test that
    does not close it must not hide later tests' log records from ``caplog``."""
    import logging

    logger = logging.getLogger("spearmint_nn")
    saved = (logger.level, logger.propagate, list(logger.handlers))
    yield
    logger.level, logger.propagate = saved[0], saved[1]
    logger.handlers[:] = saved[2]


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


