"""The job-side module (spearmint_nn.job), the "resume" key, and the drivers' warning flags."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers.experiments import quick_config, write_experiment, BRANIN_WRAPPER
from spearmint_nn import job
from spearmint_nn.drivers.base import JobSpec
from spearmint_nn.drivers.batch import render_job_script
from spearmint_nn.drivers.sge import SgeDriver
from spearmint_nn.drivers.slurm import SlurmDriver
from spearmint_nn.errors import ConfigError
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.results import JobResult
from spearmint_nn.files import atomic_write_json, read_json
from spearmint_nn.runner import run_job


def test_outside_a_job_checkpoint_dir_says_so_and_no_warning_is_seen(monkeypatch):
    for name in (job.CHECKPOINT_DIR_VARIABLE, job.ATTEMPT_VARIABLE, job.WARNING_FILE_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(job.NotInJob, match="SPEARMINT_CHECKPOINT_DIR"):
        job.checkpoint_dir()
    with pytest.raises(job.NotInJob):
        job.attempt()
    assert job.should_checkpoint() is False


def test_a_subprocess_sees_the_job_and_the_warning_through_the_environment(tmp_path):
    marker = tmp_path / "000001-2.warned"
    env = {**os.environ, job.CHECKPOINT_DIR_VARIABLE: str(tmp_path), job.ATTEMPT_VARIABLE: "2",
           job.WARNING_FILE_VARIABLE: str(marker)}
    code = "import sys\nfrom spearmint_nn import job\nprint(job.checkpoint_dir(), job.attempt(), job.should_checkpoint())"
    before = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    marker.touch()
    after = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert before.stdout.split() == [str(tmp_path), "2", "False"]
    assert after.stdout.split() == [str(tmp_path), "2", "True"]


def test_resume_later_is_not_swallowed_by_except_exception():
    with pytest.raises(job.ResumeLater):
        try:
            job.resume_later()
        except Exception:  # what a user's training loop may have
            pytest.fail("caught by except Exception")


def test_the_job_module_imports_nothing_heavy():
    code = "import sys\nimport spearmint_nn.job\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'torch', 'scipy'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _config(tmp_path, **overrides):
    folder = write_experiment(tmp_path / "exp", quick_config(**overrides), {"wrapper.py": BRANIN_WRAPPER})
    return load_config(folder)


def test_the_resume_key_defaults_and_its_total_time(tmp_path):
    assert _config(tmp_path).resume is None
    config = _config(tmp_path, driver={"name": "local", "time-limit": "01:00:00"}, resume={})
    assert (config.resume.warning, config.resume.max_total_time) == (120.0, 36000.0)
    config = _config(tmp_path, driver={"name": "slurm", "time-limit": 600}, resume={"warning": 45, "max-total-time": "2:00:00"})
    assert (config.resume.warning, config.resume.max_total_time) == (45.0, 7200.0)
    # the local driver's default limit (24 h) counts
    assert _config(tmp_path, resume={"warning": 60}).resume.max_total_time == 10 * 24 * 3600


@pytest.mark.parametrize("resume, driver, key", [
    ({"warning": 600}, {"name": "local", "time-limit": 600}, "resume.warning"),
    ({"warning": 0}, {"name": "local", "time-limit": 600}, "resume.warning"),
    ({"warning": "soon"}, {"name": "local", "time-limit": 600}, "resume.warning"),
    ({"warnings": 60}, {"name": "local", "time-limit": 600}, "resume.warnings"),
    ({"max-total-time": "1:00"}, {"name": "local", "time-limit": 600}, "resume.max-total-time"),
    ({}, {"name": "slurm"}, "resume"),   # no time limit to warn before
    ([60], {"name": "local"}, "resume"),
])
def test_bad_resume_values_are_config_errors_naming_the_key(tmp_path, resume, driver, key):
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, driver=driver, resume=resume)
    assert caught.value.path == key


def _spec(tmp_path):
    return JobSpec(job_id=3, command=["python", "-m", "spearmint_nn.runner", str(tmp_path), "3"], workdir=tmp_path,
                   stdout=tmp_path / "o", stderr=tmp_path / "e", script_path=tmp_path / "s.sh", name="exp-3")


def test_slurm_asks_for_the_warning_on_the_batch_shell(tmp_path):
    driver = SlurmDriver({"time-limit": "00:10:00"}, tmp_path)
    assert "--signal" not in driver.submit_argv(_spec(tmp_path), "x", driver.time_limit)
    driver = SlurmDriver({"time-limit": "00:10:00"}, tmp_path, warning=90.5)
    argv = driver.submit_argv(_spec(tmp_path), "x", driver.time_limit)
    assert argv[argv.index("--signal") + 1] == "B:USR1@91"
    assert argv[argv.index("--time") + 1] == "00:10:00"


def test_grid_engine_asks_for_a_soft_limit_before_the_hard_one(tmp_path):
    driver = SgeDriver({"time-limit": "01:00:00"}, tmp_path, warning=120)
    argv = driver.submit_argv(_spec(tmp_path), "x", driver.time_limit)
    limits = [argv[i + 1] for i, word in enumerate(argv) if word == "-l"]
    assert limits == ["h_rt=01:00:00", "s_rt=00:58:00"]


def test_a_job_script_ignores_the_warning_until_exec_and_says_how_it_came(tmp_path):
    text = render_job_script(_spec(tmp_path), ["sleep 0"], ["qsub"], SgeDriver.warning_env)
    assert text.index("trap '' USR1") < text.index("sleep 0") < text.index("exec ")
    assert "export SPEARMINT_WARNING_TO_GROUP=1" in text
    assert "trap" not in render_job_script(_spec(tmp_path), [], ["sbatch"])


@pytest.mark.parametrize("resume", [None, {"warning": 30}])
def test_resume_later_checkpoints_only_when_the_experiment_opted_in(tmp_path, resume):
    folder = write_experiment(tmp_path / "exp", quick_config(resume=resume, driver={"name": "local", "time-limit": 60}),
                              {"wrapper.py": "from spearmint_nn import job\n\ndef main(job_id, params):\n"
                                             "    (job.checkpoint_dir() / 'saved').write_text(str(job.attempt()))\n"
                                             "    job.resume_later()\n"})
    paths = ExperimentPaths(folder)
    paths.inputs.mkdir(parents=True)
    paths.results.mkdir()
    atomic_write_json(paths.input_file(5), {"x": [1.0], "y": [2.0]})
    code = run_job(folder, 5)
    assert (paths.checkpoint_dir(5) / "saved").read_text() == "1"
    assert job.CHECKPOINT_DIR_VARIABLE not in os.environ  # the caller's process is left as it was
    if resume is None:
        assert code == 1
        result = JobResult.read(paths.result_file(5), 5)
        assert result.failure == "exit_code" and "resume" in result.error
        assert not paths.attempt_file(5, 1).exists()
    else:
        assert code == 0 and not paths.result_file(5).exists()
        record = read_json(paths.attempt_file(5, 1))
        assert (record["attempt"], record["outcome"], record["warned"]) == (1, "checkpointed", None)
