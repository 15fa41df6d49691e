"""What the driver tests without a scheduler share: captured scheduler output, stand-in clients.

``tests/fixtures/`` holds output captured from a real Slurm and a real Grid Engine (see the
docstrings of ``tests/unit/drivers/test_slurm_parse.py`` and ``tests/unit/drivers/test_sge_parse.py``). A stand-in client
is a small bash script put first on PATH under the real command's name, so the drivers run real
processes and parse what they print.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures"


def read_fixture(name: str) -> str:
    """The text of one captured output file in ``tests/fixtures/``."""
    return (FIXTURES / name).read_text()


def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new ``tmp_path/bin`` folder, put first on PATH for this test."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def fake_client(directory: Path, name: str, body: str) -> None:
    """An executable bash script ``directory/name`` running ``body``."""
    path = directory / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
