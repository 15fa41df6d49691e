"""The job-array benchmark, run small on the real SLURM: arrays take fewer sbatch calls and queue entries."""
import json
import shutil

import pytest

from experiments.benchmarks.arrays import main
from helpers.batch_scenarios import require_scheduler

pytestmark = [pytest.mark.slow, pytest.mark.slurm]


def test_arrays_against_one_submission_per_job(tmp_path, capsys):
    require_scheduler("slurm", "SLURM", None if shutil.which("sbatch") else "no sbatch on PATH")
    out = tmp_path / "arrays.json"
    assert main(["--jobs", "6", "--array-size", "4", "--workdir", str(tmp_path), "--json", str(out)]) == 0
    arrays, single = json.loads(out.read_text())["runs"]
    assert (arrays["sbatch_calls"], arrays["queue_entries"]) == (2, 2)  # arrays of 4 and 2
    assert (single["sbatch_calls"], single["queue_entries"]) == (6, 6)
    assert arrays["poll_calls"] == single["poll_calls"] == 1 and arrays["polled_queued"] == 6
    assert "| sbatch calls | 2 | 6 |" in capsys.readouterr().out
