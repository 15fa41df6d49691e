"""experiments/from_spearmint: a Spearmint folder as users have it (resources section, task-level
main-file, a wrapper calling float() and '%f' on its numpy arrays) runs unchanged."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.experiments import all_jobs, cli

EXAMPLE = Path(__file__).resolve().parents[2] / "experiments" / "from_spearmint"


def test_the_spearmint_example_runs_as_it_is(tmp_path):
    folder = shutil.copytree(EXAMPLE, tmp_path / "from_spearmint")
    config = json.loads((folder / "config.json").read_text())
    config["resources"]["my-machine"]["max-finished-jobs"] = 6  # the example's budget, made quick
    config["seed"] = 3
    (folder / "config.json").write_text(json.dumps(config))
    result = cli("run", folder, timeout=300)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    assert [state for state, _ in jobs.values()] == ["complete"] * 6
    assert all(job["driver"] == "local" for _, job in jobs.values())
    output = (folder / ".spearmint" / "output" / "000001.out").read_text()
    assert "Result = " in output and "output file of job #1" in output
    value = next(iter(jobs.values()))[1]["value"]
    assert f"Result = {value:f}" in output


def test_spearmint_database_and_chooser_settings_are_accepted_and_unused(tmp_path):
    from spearmint_nn.experiment.config import load_config

    folder = shutil.copytree(EXAMPLE, tmp_path / "from_spearmint")
    config = json.loads((folder / "config.json").read_text())
    config.update(database={"name": "spearmint", "address": "localhost"}, chooser="default_chooser")
    (folder / "config.json").write_text(json.dumps(config))
    loaded = load_config(folder)
    assert (loaded.driver_name, loaded.max_concurrent, loaded.max_finished_jobs) == ("local", 2, 30)
    assert not (folder / ".spearmint").exists()
