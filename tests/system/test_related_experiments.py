"""``related-experiments`` end to end: a real daemon learns from another experiment folder,
never changes it (every file's content hash), says how the two correlate in status, and refuses
a folder whose variables do not match before writing anything."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from helpers.experiments import cli, quick_config

LINE_WRAPPER = """
def main(job_id, params):
    x = float(params["x"][0])
    return (x - 0.3) ** 2
"""


def _config(**overrides):
    return quick_config(**{"variables": {"x": {"type": "FLOAT", "min": 0.0, "max": 1.0}}, "model": "gp",
                           "max-concurrent": 1, "initial-design": 2, "polling-time": 0.2, **overrides})


def _hashes(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def earlier(tmp_path_factory) -> Path:
    """A finished search on the same problem over a wider range: the related folder."""
    folder = tmp_path_factory.mktemp("related") / "earlier"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_config(**{
        "model": "sobol", "max-finished-jobs": 12, "variables": {"x": {"type": "FLOAT", "min": -0.5, "max": 1.5}}})))
    (folder / "wrapper.py").write_text(LINE_WRAPPER)
    result = cli("run", folder, timeout=300)
    assert result.returncode == 0, result.stderr
    return folder


@pytest.mark.slow
def test_a_related_folder_is_read_never_written_and_its_correlation_is_reported(earlier, make_experiment):
    before = _hashes(earlier)
    folder = make_experiment(_config(**{"max-finished-jobs": 6, "related-experiments": [f"../{earlier.name}"]}),
                             {"wrapper.py": LINE_WRAPPER}, name="now")
    (folder.parent / earlier.name).symlink_to(earlier)  # the relative path, as a user writes it
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    assert _hashes(earlier) == before

    summary = json.loads(cli("status", folder, "--json").stdout)
    (related,) = summary["related"]
    assert related["name"] == f"../{earlier.name}" and related["observations"] == related["used"] == 12
    mean, sd = related["correlation"]
    assert mean > 0.3, related  # the same function: the tasks correlate
    text = cli("status", folder).stdout
    assert f"../{earlier.name}: 12 finished jobs; correlation +" in text
    assert "related experiment" in cli("report", folder, "--html", folder / "r.html").stdout + (
        folder / "r.html").read_text()


@pytest.mark.slow
def test_mismatched_variables_are_named_and_nothing_is_written(earlier, make_experiment):
    before = _hashes(earlier)
    folder = make_experiment(_config(**{"variables": {"x": {"type": "INT", "min": 0, "max": 9}},
                                        "related-experiments": [str(earlier)]}), {"wrapper.py": LINE_WRAPPER})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 2
    assert "related-experiments[0].variables.x.type: is 'FLOAT' in the related experiment, 'INT' here" in result.stderr
    assert not (folder / ".spearmint").exists()
    assert _hashes(earlier) == before
