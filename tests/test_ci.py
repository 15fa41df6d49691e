"""CI runs what the README tells a contributor to run."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readmes_test_command_exactly():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    developing = readme[readme.index("## Developing"):]
    command = next(line for block in re.findall(r"```bash\n(.*?)```", developing, re.S)
                   for line in block.splitlines() if "python -m pytest" in line)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci
    # PyTorch first, pinned, before anything that could pull another build of it
    assert command.startswith("pip install torch==2.13.0 && ")
    assert "pip install -r experiments/benchmarks/requirements.txt" in command
