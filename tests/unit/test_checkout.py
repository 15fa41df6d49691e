"""The checkout as a new user clones it: what git leaves alone and what the quick start asks of them."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
@pytest.mark.parametrize("path", ["experiments/branin/.spearmint/best.json",
                                  "experiments/conditional_mlp/.spearmint/jobs/complete/000001.json",
                                  "my-tuning/.spearmint/daemon.log", ".venv/bin/python",
                                  "experiments/benchmarks/results/parallel-async50.traces.json"])
def test_the_quick_start_and_an_experiment_run_inside_the_checkout_leave_git_status_clean(tmp_path, path):
    # a fresh clone of the .gitignore alone: this checkout's own excludes (info/exclude) do not count
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
    ignored = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "-q", path])
    assert ignored.returncode == 0, f"{path} is not ignored by .gitignore"


def test_the_quick_start_installs_torch_in_a_fresh_virtualenv():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme[readme.index("## Quick start"):readme.index("\n## ", readme.index("## Quick start"))]
    first_install = quick_start.index("\npip install torch==2.13.0")  # the first command that installs it
    before = quick_start[:first_install]
    assert "fresh virtualenv" in before
    assert re.search(r"python3? -m venv \S+ && (\.|source) \S+/bin/activate", before)


@pytest.mark.slow
def test_the_readme_ask_tell_example_runs_as_printed_and_finds_branins_minimum(tmp_path):
    """The README's Python example, run as a user pastes it: with the default model it ends within
    0.002 of Branin's minimum 0.397887 (Sobol's 40 points of the same seed end at 0.428)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Using the optimizer from Python"):]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr
    best = float(result.stdout.strip().rsplit(", ", 1)[1].rstrip(")"))
    assert best < 0.40, result.stdout
