"""``spearmint-nn init NAME``: the new folder validates, its wrapper runs, and the daemon runs it."""
from __future__ import annotations

import importlib.util
import json
import math

import pytest

from helpers.experiments import all_jobs, cli
from spearmint_nn.experiment.config import load_config
from spearmint_nn.scaffold import create_experiment


def test_new_experiment_validates_and_its_wrapper_runs(tmp_path):
    folder = tmp_path / "sub" / "my-tuning"
    written = create_experiment(folder)
    assert sorted(p.name for p in written) == ["config.json", "wrapper.py"]
    config = load_config(folder)  # with the driver check, as `run` does
    assert config.name == "my-tuning" and config.objective == "loss" and config.driver_name == "local"
    assert [v.scale for v in config.space.variables] == ["log", "linear", "linear"]
    written = json.loads((folder / "config.json").read_text())
    # the stand-in is deterministic, and the choice is in sight: the wrapper says when to pick GAUSSIAN
    assert written["tasks"]["loss"]["likelihood"] == "NOISELESS" and config.tasks.likelihoods["loss"] == "NOISELESS"
    wrapper_text = (folder / "wrapper.py").read_text()
    assert '"likelihood"' in wrapper_text and "GAUSSIAN" in wrapper_text and "NOISELESS" in wrapper_text

    spec = importlib.util.spec_from_file_location("wrapper", folder / "wrapper.py")
    wrapper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wrapper)
    points = config.space.decode(config.space.sobol(16, seed=0))
    losses = [wrapper.main(i, config.space.to_wrapper(p)) for i, p in enumerate(points)]
    assert all(isinstance(v, float) and math.isfinite(v) for v in losses) and len(set(losses)) > 8


def test_the_wrapper_runs_by_hand_as_its_docstring_says(tmp_path):
    """Plain values become the params a job gets (size-1 values act as numbers), where a numpy
    array of the user's own fails in the template's float(...); a wrong value names its variable."""
    import subprocess
    import sys

    import numpy as np

    from spearmint_nn.errors import ConfigError
    from spearmint_nn.runner import wrapper_params

    folder = tmp_path / "tuning"
    create_experiment(folder)
    docstring = (folder / "wrapper.py").read_text().split('"""')[1]
    snippet = "\n".join(line.strip() for line in docstring.splitlines() if line.startswith("    "))
    done = subprocess.run([sys.executable, "-c", snippet], cwd=folder, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and math.isfinite(float(done.stdout.splitlines()[-1])), done.stderr
    params = wrapper_params(folder, learning_rate=0.01, layers=3, activation="relu")
    assert float(params["learning_rate"]) == 0.01 and params["activation"] == ["relu"]
    assert isinstance(params["layers"], np.ndarray) and int(params["layers"][0]) == 3
    with pytest.raises(ConfigError, match="layers"):
        wrapper_params(folder, learning_rate=0.01, layers=99, activation="relu")


def test_an_existing_folder_is_never_overwritten(tmp_path):
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    result = cli("init", folder)
    assert result.returncode == 2 and "already exists" in result.stderr
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("init", empty)
    assert result.returncode == 0, result.stderr
    assert "spearmint-nn run" in result.stdout and (empty / "config.json").is_file()


def test_init_then_run_reaches_the_budget(tmp_path):
    folder = tmp_path / "quick"
    assert cli("init", folder).returncode == 0
    config = json.loads((folder / "config.json").read_text())
    config["max-finished-jobs"] = 3  # fewer than the initial design: no model fit, a quick run
    (folder / "config.json").write_text(json.dumps(config))
    result = cli("run", folder, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = all_jobs(folder)
    assert sorted(state for state, _ in jobs.values()) == ["complete"] * 3


@pytest.mark.slow
def test_the_new_experiment_runs_as_it_is(tmp_path):
    folder = tmp_path / "as-is"
    assert cli("init", folder).returncode == 0
    result = cli("run", folder, timeout=1800)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    jobs = all_jobs(folder)
    complete = [job for state, job in jobs.values() if state == "complete"]
    assert len(complete) == 30
    assert min(job["value"] for job in complete) < 1.0  # the stand-in's minimum is 0
