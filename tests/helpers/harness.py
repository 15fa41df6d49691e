"""Starting the benchmark harness in a process of its own.

The harness (``experiments/benchmarks``) lives in the repository, not in the installed package:
a process started outside the repository root finds it only with the root on its path.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

ROOT = Path(__file__).resolve().parents[2]


def harness_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment by default) with the repository root first on
    ``PYTHONPATH``, so ``python -m experiments.benchmarks.<name>`` runs from any folder."""
    environment = dict(os.environ if base is None else base)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    return environment
