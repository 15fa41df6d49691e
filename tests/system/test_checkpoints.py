"""Jobs warned before their time limit (config.json's ``resume``), on the local driver with real
processes: a wrapper that saves a checkpoint and asks to be resumed ends its attempt without a
result, the next attempt (``--attempt N``, as the daemon starts it) resumes from the checkpoint
and gets the value it would have had uninterrupted, and one that ignores the warning is killed
at the limit as before."""
from __future__ import annotations

import json
import time

import pytest

from helpers.experiments import cli, quick_config, write_experiment
from spearmint_nn.daemon.build import make_driver
from spearmint_nn.daemon.submitter import job_spec
from spearmint_nn.drivers.base import SchedulerState
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.results import JobResult
from spearmint_nn.experiment.store import Store
from spearmint_nn.files import atomic_write_json, read_json

STEPS, STEP_S, X = 60, 0.1, 1.5
# Limit and warning leave about 3 s of work per attempt after the runner's start-up on a loaded
# two-core machine: the 6 s of steps take at least two attempts.
LIMIT_S, WARNING_S = 6, 3
UNINTERRUPTED = sum(i * X for i in range(STEPS))

PYTHON_WRAPPER = f"""
import json, time
from spearmint_nn import job

def main(job_id, params):
    state = job.checkpoint_dir() / "state.json"
    saved = json.loads(state.read_text()) if state.exists() else {{"step": 0, "total": 0.0, "attempts": []}}
    saved["attempts"].append(job.attempt())
    step, total = saved["step"], saved["total"]
    while step < {STEPS}:
        total += step * float(params["x"][0])
        step += 1
        time.sleep({STEP_S})
        if job.should_checkpoint():
            state.write_text(json.dumps({{"step": step, "total": total, "attempts": saved["attempts"]}}))
            try:
                job.resume_later()
            except Exception:  # the user's own handler must not swallow it
                raise AssertionError("resume_later was caught by except Exception")
    state.write_text(json.dumps({{"step": step, "total": total, "attempts": saved["attempts"]}}))
    return total
"""

SHELL_WRAPPER = f"""
#!/bin/bash
# a step counter in the checkpoint folder; on the warning: save, exit 99 (resume me)
state="$SPEARMINT_CHECKPOINT_DIR/state"
step=0; total=0
[ -f "$state" ] && read step total < "$state"
echo "$SPEARMINT_ATTEMPT" >> "$SPEARMINT_CHECKPOINT_DIR/attempts"
warned=0
trap 'warned=1; echo warned >> "$SPEARMINT_CHECKPOINT_DIR/signals"' USR1
while [ "$step" -lt {STEPS} ]; do
    total=$((total + step * 3)); step=$((step + 1))
    sleep {STEP_S}
    if [ "$warned" = 1 ]; then echo "$step $total" > "$state"; exit 99; fi
done
echo "$total"
"""


def _folder(tmp_path, **config):
    config = quick_config(**{"driver": {"name": "local", "time-limit": LIMIT_S},
                             "resume": {"warning": WARNING_S}, **config})
    files = {"wrapper.py": PYTHON_WRAPPER, "run.sh": SHELL_WRAPPER.lstrip()}
    folder = write_experiment(tmp_path / "exp", config, files)
    paths = ExperimentPaths(folder)
    for folder in (paths.inputs, paths.output, paths.results):  # what the daemon's store creates
        folder.mkdir(parents=True)
    atomic_write_json(paths.input_file(1), {"x": [X], "y": [2.0]})
    return paths


def _run_attempt(paths: ExperimentPaths, attempt: int) -> SchedulerState:
    """One attempt of job 1 through the local driver, warning included, as the daemon submits it."""
    config = load_config(paths.experiment)
    driver = make_driver(config)
    assert driver.warning == WARNING_S
    sid = driver.submit(job_spec(config, driver, 1, attempt))  # as the daemon submits the next attempt
    deadline = time.monotonic() + LIMIT_S + 60
    while time.monotonic() < deadline:
        status = driver.poll([sid])[sid]
        if status.state.finished:
            return status.state
        time.sleep(0.1)
    raise AssertionError("the attempt never ended")


def _resume_until_done(paths: ExperimentPaths) -> list[int]:
    """Attempts until the job has its result; the attempts that checkpointed."""
    checkpointed = []
    for attempt in range(1, 8):
        state = _run_attempt(paths, attempt)
        assert state is SchedulerState.COMPLETED  # the runner exits 0 either way, never 99
        if paths.result_file(1).exists():
            return checkpointed
        record = read_json(paths.attempt_file(1, attempt))
        assert record["outcome"] == "checkpointed" and record["attempt"] == attempt
        assert isinstance(record["warned"], float) and record["started"] < record["warned"] < record["ended"]
        assert paths.warning_file(1, attempt).exists()
        checkpointed.append(attempt)
    raise AssertionError("no result after 7 attempts")


def _check_result(paths: ExperimentPaths, checkpointed: list[int], value: float) -> JobResult:
    result = JobResult.read(paths.result_file(1), 1)
    assert result is not None and result.ok, result
    assert result.values == {"main": value}
    outcomes = [(a["attempt"], a["outcome"]) for a in result.attempts]
    assert outcomes == [(n, "checkpointed") for n in checkpointed] + [(len(checkpointed) + 1, "ok")]
    ends = [a["ended"] for a in result.attempts]
    assert all(e is not None for e in ends) and ends == sorted(ends)
    # the job's compute is every attempt's, not the last one's alone
    earlier = sum(a["ended"] - a["started"] for a in result.attempts[:-1])
    assert result.duration == pytest.approx(result.ended - result.started + earlier)
    assert result.duration > result.ended - result.started or not checkpointed
    return result


@pytest.mark.slow
def test_a_python_job_checkpoints_on_the_warning_and_resumes_to_its_uninterrupted_value(tmp_path):
    paths = _folder(tmp_path)
    checkpointed = _resume_until_done(paths)
    assert checkpointed[:1] == [1], "the first attempt was not warned"
    _check_result(paths, checkpointed, UNINTERRUPTED)
    saved = json.loads((paths.checkpoint_dir(1) / "state.json").read_text())
    assert saved["step"] == STEPS and saved["attempts"] == list(range(1, len(checkpointed) + 2))


@pytest.mark.slow
def test_a_shell_job_gets_one_sigusr1_and_exits_99_to_be_resumed(tmp_path):
    paths = _folder(tmp_path, **{"language": "SHELL", "main-file": None, "command": ["bash", "run.sh"]})
    checkpointed = _resume_until_done(paths)
    assert checkpointed, "the job was never warned"
    _check_result(paths, checkpointed, float(sum(i * 3 for i in range(STEPS))))
    signals = (paths.checkpoint_dir(1) / "signals").read_text().split()
    assert signals == ["warned"] * len(checkpointed)  # exactly one warning per warned attempt
    attempts = (paths.checkpoint_dir(1) / "attempts").read_text().split()
    assert attempts == [str(n) for n in range(1, len(checkpointed) + 2)]


def test_without_the_resume_key_asking_to_be_resumed_is_a_failure(tmp_path):
    paths = _folder(tmp_path, resume=None, driver={"name": "local", "time-limit": 60})
    (paths.experiment / "wrapper.py").write_text("from spearmint_nn import job\n\ndef main(job_id, params):\n"
                                                 "    job.resume_later()\n")
    assert _run_attempt_without_warning(paths) is SchedulerState.FAILED
    result = JobResult.read(paths.result_file(1), 1)
    assert result.failure == "exit_code" and "\"resume\" key" in result.error
    assert not paths.attempt_file(1, 1).exists()


def _run_attempt_without_warning(paths: ExperimentPaths) -> SchedulerState:
    config = load_config(paths.experiment)
    driver = make_driver(config)
    assert driver.warning is None
    sid = driver.submit(job_spec(config, driver, 1))
    while not (status := driver.poll([sid])[sid]).state.finished:
        time.sleep(0.1)
    return status.state


@pytest.mark.slow
def test_a_job_that_ignores_the_warning_is_killed_at_the_limit_and_fails_timeout(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(**{
        "driver": {"name": "local", "time-limit": 4}, "resume": {"warning": 2}, "max-finished-jobs": 1,
        "max-concurrent": 1, "polling-time": 0.2}),
        {"wrapper.py": "import time\n\ndef main(job_id, params):\n    time.sleep(120)\n    return 1.0\n"})
    done = cli("run", folder, timeout=120)
    assert done.returncode == 0, done.stderr
    jobs = Store(ExperimentPaths(folder)).load_all().jobs()
    assert [job.failure for job in jobs] == ["timeout"]
    paths = ExperimentPaths(folder)
    assert paths.warning_file(1, 1).exists()  # it was warned, and went on
    assert not paths.attempt_file(1, 1).exists()


def _daemon_folder(tmp_path, **config):
    return write_experiment(tmp_path / "exp", quick_config(**{
        "driver": {"name": "local", "time-limit": LIMIT_S}, "resume": {"warning": WARNING_S},
        "max-finished-jobs": 2, "max-concurrent": 2, "polling-time": 0.2, **config}), {"wrapper.py": PYTHON_WRAPPER})


@pytest.mark.slow
def test_the_daemon_submits_a_checkpointed_job_again_until_it_finishes_with_its_uninterrupted_value(tmp_path):
    folder = _daemon_folder(tmp_path)
    done = cli("run", folder, timeout=300)
    assert done.returncode == 0, done.stderr
    paths = ExperimentPaths(folder)
    jobs = Store(paths).load_all().jobs()
    assert [job.state.value for job in jobs] == ["complete", "complete"]
    for job in jobs:
        assert job.value == pytest.approx(sum(i * job.params["x"][0] for i in range(STEPS)))
        outcomes = [a["outcome"] for a in job.fields["attempts"]]
        assert len(outcomes) >= 2 and outcomes == ["checkpointed"] * (len(outcomes) - 1) + ["ok"], outcomes
        assert job.fields["attempts"][-1]["attempt"] == len(outcomes)
    assert "checkpointed (" in done.stdout + done.stderr and "submitting it again as attempt 2" in done.stdout + done.stderr


@pytest.mark.slow
def test_a_job_resumed_past_max_total_time_fails_timeout(tmp_path):
    folder = _daemon_folder(tmp_path, resume={"warning": WARNING_S, "max-total-time": LIMIT_S},
                            **{"max-finished-jobs": 1, "max-concurrent": 1})
    (folder / "wrapper.py").write_text("import time\nfrom spearmint_nn import job\n\ndef main(job_id, params):\n"
                                       "    while not job.should_checkpoint():\n        time.sleep(0.1)\n"
                                       "    job.resume_later()\n")  # never done: checkpoints at every warning
    done = cli("run", folder, timeout=300)
    assert done.returncode == 0, done.stderr
    [job] = Store(ExperimentPaths(folder)).load_all().jobs()
    assert (job.state.value, job.failure) == ("failed", "timeout")
    assert "used up resume.max-total-time (6 s) without finishing" in job.reason
    outcomes = [a["outcome"] for a in job.fields["attempts"]]
    assert len(outcomes) >= 2 and set(outcomes) == {"checkpointed"}, outcomes
