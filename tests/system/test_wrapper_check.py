"""A PYTHON wrapper that cannot run at any point stops ``run`` before anything is submitted or
written (exit 2, the message a job would have recorded); with a batch driver a failed import is a
warning, since the job's setup lines may provide the module. Real runs, real processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.experiments import BRANIN_WRAPPER, all_jobs, cli, quick_config
from helpers.fake_scheduler import install_fake_slurm

CANNOT_RUN = {
    "syntax error": ("def main(job_id, params)\n    return 1.0\n",
                     "(bad_wrapper): SyntaxError: expected ':' (wrapper.py, line 1) at wrapper.py:1"),
    "missing import": ("import numpy\nimport no_such_module_here\n\ndef main(job_id, params):\n    return 1.0\n",
                       "(bad_wrapper): ModuleNotFoundError: No module named 'no_such_module_here' at wrapper.py:2"),
    "no main": ("def evaluate(job_id, params):\n    return 1.0\n",
                "(bad_wrapper): wrapper.py has no function main(job_id, params)"),
    "main of one argument": ("def main(params):\n    return 1.0\n",
                             "(bad_wrapper): wrapper.py: main(params) cannot be called as main(job_id, params): "
                             "too many positional arguments at wrapper.py:1"),
}


@pytest.mark.parametrize("case", [case if case == "syntax error" else pytest.param(case, marks=pytest.mark.slow)
                                  for case in sorted(CANNOT_RUN)])
def test_a_wrapper_that_cannot_run_stops_run_before_anything_is_submitted(make_experiment, case):
    text, message = CANNOT_RUN[case]
    folder = make_experiment(quick_config(), files={"wrapper.py": text})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (f"spearmint-nn: main-file: wrapper.py cannot run, so no job was submitted "
                                     f"{message}. Fix it and run again")
    assert not (folder / ".spearmint").exists()  # no job file, no log, no lock: nothing written

    (folder / "wrapper.py").write_text(BRANIN_WRAPPER)
    assert cli("run", folder, timeout=120).returncode == 0
    assert sum(state == "complete" for state, _ in all_jobs(folder).values()) == 5


def test_what_the_wrapper_prints_while_imported_does_not_hide_the_check(make_experiment):
    wrapper = "import os\nprint('loading data')\nos.write(1, b'{\"status\": \"ok\"}\\n')\n\ndef main(job_id):\n    return 1.0\n"
    folder = make_experiment(quick_config(), files={"wrapper.py": wrapper})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 2 and "main(job_id) cannot be called as main(job_id, params)" in result.stderr


@pytest.fixture
def fake_slurm(tmp_path):
    env = install_fake_slurm(tmp_path / "bin", tmp_path / "slurm")
    return env, tmp_path / "slurm"


def test_with_a_batch_driver_an_import_the_setup_lines_provide_is_a_warning(make_experiment, tmp_path, fake_slurm):
    env, _ = fake_slurm
    # A module that exists only once the job script's setup lines have run, as after `module load`.
    (tmp_path / "node_only").mkdir()
    (tmp_path / "node_only" / "node_lib.py").write_text("OFFSET = 0.0\n")
    wrapper = "import node_lib\n" + BRANIN_WRAPPER.replace("return ((", "return node_lib.OFFSET + ((")
    config = quick_config(**{"max-finished-jobs": 2, "driver": {
        "name": "slurm", "setup": [f"export PYTHONPATH={tmp_path / 'node_only'}"]}})
    folder = make_experiment(config, files={"wrapper.py": wrapper})
    result = cli("run", folder, timeout=180, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    assert ("wrapper.py does not import here (bad_wrapper): ModuleNotFoundError: No module named 'node_lib' "
            "at wrapper.py:1; submitting anyway, since the slurm jobs may find it after the driver's setup lines"
            in result.stderr)
    assert sum(state == "complete" for state, _ in all_jobs(folder).values()) == 2


def test_with_a_batch_driver_a_syntax_error_still_stops_run(make_experiment, fake_slurm):
    env, slurm_state = fake_slurm
    folder = make_experiment(quick_config(driver="slurm"), files={"wrapper.py": "def main(job_id, params)\n    return 1\n"})
    result = cli("run", folder, timeout=120, env={**os.environ, **env})
    assert result.returncode == 2 and "SyntaxError" in result.stderr
    assert not (slurm_state / "sbatch_calls.jsonl").exists() and not (folder / ".spearmint").exists()


def test_the_check_answers_as_a_job_would_record_it(make_experiment):
    folder = make_experiment(quick_config(), files={"wrapper.py": "import json\nx = undefined_name\n"})
    done = subprocess.run([sys.executable, "-m", "spearmint_nn.runner", "--check", str(folder)], cwd=folder,
                          capture_output=True, text=True, timeout=60)
    result = json.loads(done.stdout)
    assert done.returncode == 1
    assert (result["failure"], result["error"], result["location"]) == (
        "bad_wrapper", "NameError: name 'undefined_name' is not defined", "wrapper.py:2")
    assert result["depends_on_environment"] is False
