"""Jobs that die, hang, flood their output or leave a broken result: each ends as one failed
job with a reason, the daemon goes on, and a job started twice is evaluated once."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from helpers.experiments import quick_config, write_experiment
from helpers.fake_scheduler import run_daemon
from helpers.invariant_checks import assert_folder_ok, counting_wrapper, logged_runs
from spearmint_nn.experiment.claims import SCHEDULER_ID_VARIABLE, SGE_RESTARTED, SLURM_RESTARTS
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.results import JobResult
from spearmint_nn.runner import command_for
from spearmint_nn.files import atomic_write_json
from spearmint_nn.views import plots
from spearmint_nn.views.status import take_snapshot

FAULTS = """
import os, signal, sys, time
result = os.path.join(".spearmint", "results", f"{job_id:06d}.json")
if job_id == 1:                      # killed by SIGKILL
    os.kill(os.getpid(), signal.SIGKILL)
if job_id == 2:                      # ignores SIGTERM and hangs past the time limit
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)
if job_id == 3:                      # megabytes of garbage on both streams, then an error
    junk = bytes(range(256)) * 12000
    sys.stdout.buffer.write(junk); sys.stderr.buffer.write(junk + b"\\nlast words\\n")
    sys.stdout.flush(); sys.stderr.flush()
    raise ValueError("after the flood")
if job_id == 4:                      # a truncated result file, then gone without the runner's
    with open(result, "w") as handle:
        handle.write('{"id": 4, "status": "ok", "values": {"main": 1.')
    os._exit(0)
if job_id == 5:                      # no result file at all (removed, or never written)
    os._exit(0)
if job_id == 6:                      # bytes that are not UTF-8 in place of the result
    with open(result, "wb") as handle:
        handle.write(b"\\xff\\xfe\\x00garbage")
    os._exit(0)
if job_id == 7:                      # the garbage flood again, but with a valid value
    sys.stdout.buffer.write(bytes(range(256)) * 8000)
"""


@pytest.mark.slow
def test_each_broken_job_fails_once_with_its_reason(tmp_path):
    body = "exec(compile(FAULTS, 'faults', 'exec'))"
    wrapper = counting_wrapper(body).replace("import math", "import math\nFAULTS = " + repr(FAULTS), 1)
    folder = write_experiment(tmp_path / "exp", quick_config(**{
        "max-finished-jobs": 8, "max-concurrent": 3, "polling-time": 0.2,
        # 6 s, not less: jobs 3 and 7 write megabytes and must finish inside the limit on a
        # loaded two-core machine (at 2 s job 7 was once killed in a full test run)
        "driver": {"name": "local", "time-limit": 6}}), {"wrapper.py": wrapper})
    code, log = run_daemon(folder, timeout_s=240)
    assert code == 0
    paths = ExperimentPaths(folder)
    jobs = {i: json.loads(p.read_text()) for i in range(1, 9)
            for p in paths.jobs.glob(f"*/{i:06d}.json")}
    outcome = {i: (j["state"], j.get("failure"), j.get("reason")) for i, j in jobs.items()}
    assert outcome[1] == ("failed", "exit_code", "killed by signal SIGKILL")
    assert outcome[2] == ("failed", "timeout", "killed after the time limit of 6 s")
    assert outcome[3] == ("failed", "exception", "ValueError: after the flood")
    assert outcome[4] == ("failed", "bad_result", "unreadable result file (local: completed, exit code 0)")
    # what went wrong, not the scheduler's word "completed"
    assert outcome[5] == ("failed", "no_result", "no result file after the job ended (local: completed, exit code 0)")
    assert outcome[6] == ("failed", "bad_result", "unreadable result file (local: completed, exit code 0)")
    assert outcome[7][0] == outcome[8][0] == "complete"
    assert (paths.output / "000003.out").stat().st_size > 3_000_000
    tail = jobs[3]["stderr_tail"]
    assert len(tail) < 5000 and "last words" in tail and not any(ch in tail for ch in "\x00\x1b\x07")
    for job_id in range(1, 7):
        assert log.count(f"failed    job {job_id} ") == 1
    assert "\x00" not in (paths.log.read_text()) and "\x1b" not in log
    assert_folder_ok(folder, folder / "runs.txt")

    # the report's failures section: every failed job in a group, each with its last line of output
    snap = take_snapshot(folder)
    ax = plots.section_figure(next(s for s in plots.sections(snap) if s.key == "failures")).axes[0]
    assert sum(p.get_width() for p in ax.patches) == 6 == sum(g.count for g in snap.failure_groups)
    texts = sorted(t.get_text() for t in ax.texts)
    expected = sorted(f"{g.kind}: {g.reason}" for g in snap.failure_groups)
    assert [t.split(" at ")[0].split("\n")[0] for t in texts] == expected, texts
    flood = next(t for t in texts if t.startswith("exception: ValueError: after the flood"))
    group = next(g for g in snap.failure_groups if g.kind == "exception")
    assert f"output: {group.output_tail.strip().splitlines()[-1]}" in flood and " at " in flood  # with its place


def test_a_job_started_twice_is_evaluated_once(tmp_path):
    """Two runners of one job at once (a resubmission after a daemon crash): one evaluates, the
    other waits for it and exits with its result; the wrapper ran once."""
    paths, _ = _napping_job_5(tmp_path)
    folder = paths.experiment
    runners = [subprocess.Popen(command_for(paths.experiment, 5), cwd=folder, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "NAP": "1.0"}) for _ in range(3)]
    outputs = [r.communicate(timeout=60)[1] for r in runners]
    assert [r.returncode for r in runners] == [0, 0, 0]
    assert logged_runs(folder / "runs.txt") == [5]
    assert sum("is already claimed by host" in err for err in outputs) == 2
    result = json.loads(paths.result_file(5).read_text())
    claim = json.loads(paths.claim_file(5).read_text())
    assert result["status"] == "ok" and claim["pid"] in [r.pid for r in runners]
    # a claim left by a runner that died before writing a result: the next runner exits at once
    claim["pid"] = 2 ** 22 + 1  # no such process
    paths.claim_file(6).write_text(json.dumps(claim))
    atomic_write_json(paths.input_file(6), {"x": [1.0], "y": [2.0]})
    late = subprocess.run(command_for(paths.experiment, 6), cwd=folder, capture_output=True, text=True, timeout=60)
    assert late.returncode == 1 and not paths.result_file(6).exists()
    assert logged_runs(folder / "runs.txt") == [5]


@pytest.fixture
def runner():
    """Start a runner of a job in the environment a scheduler would give it (and no other's);
    any still running at the end of the test are killed."""
    started: list[subprocess.Popen] = []

    def start(paths: ExperimentPaths, job_id: int, attempt: int = 1, **scheduler_env: str) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items()
               if not SCHEDULER_ID_VARIABLE.search(k) and k not in (SLURM_RESTARTS, SGE_RESTARTED)}
        started.append(subprocess.Popen(command_for(paths.experiment, job_id, attempt), cwd=paths.experiment,
                                        env={**env, **scheduler_env}, stderr=subprocess.PIPE, text=True))
        return started[-1]

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_for_run(runs_file: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(logged_runs(runs_file)) < count:
        assert time.monotonic() < deadline, "the wrapper never started"
        time.sleep(0.1)


def _napping_job_5(tmp_path: Path) -> tuple[ExperimentPaths, Path]:
    """Job 5 of a folder whose wrapper sleeps $NAP seconds; its paths and the wrapper's run log."""
    folder = write_experiment(tmp_path / "exp", quick_config(),
                              {"wrapper.py": counting_wrapper("time.sleep(float(os.environ.get('NAP', 0)))")})
    paths = ExperimentPaths(folder)
    for sub in (paths.inputs, paths.results):
        sub.mkdir(parents=True)
    atomic_write_json(paths.input_file(5), {"x": [1.0], "y": [2.0]})
    return paths, folder / "runs.txt"


@pytest.mark.parametrize("first, again", [
    ({"SLURM_JOB_ID": "77"}, {"SLURM_JOB_ID": "77", "SLURM_RESTART_COUNT": "1"}),
    ({"JOB_ID": "9", "RESTARTED": "0"}, {"JOB_ID": "9", "RESTARTED": "1"}),
], ids=["slurm", "sge"])
def test_another_attempt_of_a_scheduler_job_evaluates_it_and_a_second_copy_does_not(tmp_path, runner, first, again):
    """The scheduler kills a running job and runs it again (SLURM's requeue, Grid Engine's
    reschedule): the new attempt evaluates the job, which gets one result listing both
    attempts. A second copy of the running attempt, or another scheduler job (a resubmission),
    evaluates nothing."""
    paths, runs_file = _napping_job_5(tmp_path)
    holder = runner(paths, 5, NAP="600", **first)
    _wait_for_run(runs_file, 1)
    # a second copy of the running attempt, and another scheduler job restarted: both refused
    copy = runner(paths, 5, **first)
    other = runner(paths, 5, **{**again, **{k: "78" for k in first if k.endswith("JOB_ID")}})
    # the restarted attempt, started while the scheduler still stops the first: it waits for that
    restarted = runner(paths, 5, **again)
    time.sleep(2)
    assert restarted.poll() is None and logged_runs(runs_file) == [5]
    holder.kill()
    holder.communicate()
    assert restarted.wait(timeout=60) == 0, restarted.communicate()[1]
    # refused: each exits when its holder is gone, 1 if it saw no result then, 0 if the restarted
    # attempt's result was already there (a race of two 0.5 s polls): either way it evaluated nothing
    assert copy.wait(timeout=60) in (0, 1) and other.wait(timeout=60) in (0, 1)
    assert "is already claimed by host" in copy.communicate()[1] + other.communicate()[1]
    assert logged_runs(runs_file) == [5, 5]
    result = JobResult.read(paths.result_file(5), 5)
    assert result.ok and [(a["attempt"], a["outcome"]) for a in result.attempts] == [(1, "requeued"), (2, "ok")]
    assert result.attempts[0]["ended"] is None and result.attempts[1]["ended"] == result.ended
    assert [a["restarts"] for a in result.attempts] == [
        {k: v for k, v in env.items() if k in (SLURM_RESTARTS, SGE_RESTARTED)} for env in (first, again)]
    assert json.loads(paths.claim_file(5, 2).read_text())["attempt"] == 2
    # the scheduler runs it yet again after the result was written: one result, no evaluation
    late = runner(paths, 5, **{**again, SLURM_RESTARTS: "2"} if SLURM_RESTARTS in again else again)
    assert late.wait(timeout=60) == 0 and "already has its result" in late.communicate()[1]
    assert logged_runs(runs_file) == [5, 5] and not paths.claim_file(5, 3).exists()


def test_an_attempt_on_another_host_is_taken_over_only_when_the_scheduler_restarted_it(tmp_path, runner):
    """A holder on another host cannot be seen: the scheduler's restart is what says it is gone."""
    folder = write_experiment(tmp_path / "exp", quick_config(), {"wrapper.py": counting_wrapper()})
    paths, runs_file = ExperimentPaths(folder), folder / "runs.txt"
    for sub in (paths.inputs, paths.results, paths.claims):
        sub.mkdir(parents=True)
    elsewhere = {"attempt": 1, "host": "node-b", "pid": 1234, "start_ticks": 1, "claimed": time.time(),
                 "scheduler_ids": {"SLURM_JOB_ID": "77"}, "restarts": {}}
    for job_id in (5, 6):
        atomic_write_json(paths.input_file(job_id), {"x": [1.0], "y": [2.0]})
        atomic_write_json(paths.claim_file(job_id), elsewhere)
    restarted = runner(paths, 5, SLURM_JOB_ID="77", SLURM_RESTART_COUNT="1")
    assert restarted.wait(timeout=60) == 0 and logged_runs(runs_file) == [5]
    assert [a["host"] for a in JobResult.read(paths.result_file(5), 5).attempts] == ["node-b", socket.gethostname()]
    resubmitted = runner(paths, 6, SLURM_JOB_ID="78", SLURM_RESTART_COUNT="1")
    time.sleep(2)
    assert resubmitted.poll() is None  # waits for node-b's result
    JobResult(id=6, status="ok", values={"main": 1.0}).write(paths.result_file(6))
    assert resubmitted.wait(timeout=60) == 0 and logged_runs(runs_file) == [5]


def test_an_attempt_the_daemon_submitted_again_evaluates_the_job_and_a_second_copy_does_not(tmp_path, runner):
    """The scheduler dropped attempt 1 (preempted, no requeue) and the daemon submitted the job
    again for attempt 2, a new scheduler job: it evaluates the job; a second copy of that
    submission, and a late copy of attempt 1, evaluate nothing."""
    paths, runs_file = _napping_job_5(tmp_path)
    dropped = runner(paths, 5, NAP="600", SLURM_JOB_ID="77")
    _wait_for_run(runs_file, 1)
    dropped.kill()
    dropped.communicate()
    second = runner(paths, 5, attempt=2, NAP="2", SLURM_JOB_ID="78")
    _wait_for_run(runs_file, 2)
    copy = runner(paths, 5, attempt=2, SLURM_JOB_ID="79")
    late = runner(paths, 5, SLURM_JOB_ID="77")
    assert second.wait(timeout=60) == 0, second.communicate()[1]
    assert (copy.wait(timeout=60), late.wait(timeout=60)) == (0, 0)  # both waited for the result
    assert logged_runs(runs_file) == [5, 5]
    result = JobResult.read(paths.result_file(5), 5)
    assert [(a["attempt"], a["scheduler_ids"]) for a in result.attempts] == [
        (1, {"SLURM_JOB_ID": "77"}), (2, {"SLURM_JOB_ID": "78"})]
    assert not paths.claim_file(5, 3).exists()
    # submitted again once more after the result (a daemon that had not seen it yet): no evaluation
    third = runner(paths, 5, attempt=3, SLURM_JOB_ID="80")
    assert third.wait(timeout=60) == 0 and "already has its result" in third.communicate()[1]
    assert logged_runs(runs_file) == [5, 5]
