"""End-to-end scenarios of ``spearmint-nn run`` on a real batch scheduler (SLURM or Grid Engine).

``tests/cluster/test_slurm.py`` and ``tests/cluster/test_sge.py`` run each scenario of :data:`SCENARIOS` against
their scheduler, described by a :class:`Cluster` (started by ``tests/cluster/<driver>-up.sh``,
which keeps it in ``$<DRIVER>_STATE_DIR``, default ``/var/tmp/spearmint-<driver>``). Every
scenario is a real daemon process, real jobs on the scheduler and real files; the wrapper
appends its job id to ``runs.log`` each time it runs, so "nothing lost or run twice" is checked
against what actually ran.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from spearmint_nn.drivers.base import JobSpec, driver_class

from .experiments import BRANIN_VARIABLES, all_jobs, start_daemon, wait_for, write_experiment

WRAPPER = """
import math, os, time

def main(job_id, params):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.log"), "a") as log:
        log.write(f"{{job_id}}\\n")
    time.sleep({sleep})
    {body}
    x, y = float(params["x"][0]), float(params["y"][0])
    return ((y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)
"""


CLUSTER_DIR = Path(__file__).parents[1] / "cluster"


@dataclass
class Cluster:
    """One running scheduler, as the scenarios need it."""

    driver: str                              # the driver's name; tests/cluster/<driver>-up.sh starts it
    title: str                               # the scheduler's name in messages
    cancel: Callable[[str], None]            # cancel a job from outside, by scheduler id
    requeue: Callable[[str], None]           # make the scheduler stop a running job and run it again
    time_limit: float                        # the shortest limit the scheduler enforces
    limit_wait_s: float                      # how long a job may outlive it before it is killed
    controller_pid: str                      # the controller's pid file, relative to state_dir
    restarted: dict[str, str]                # what the scheduler sets in a restarted job's environment

    @property
    def state_variable(self) -> str:
        return f"{self.driver.upper()}_STATE_DIR"

    @property
    def state_dir(self) -> Path:
        return Path(os.environ.get(self.state_variable, f"/var/tmp/spearmint-{self.driver}"))

    @property
    def up_script(self) -> Path:
        return CLUSTER_DIR / f"{self.driver}-up.sh"

    def stop_controller(self) -> None:
        stop_pid_file(self.state_dir / self.controller_pid)

    def start_controller(self) -> None:
        run_script(self.up_script, {self.state_variable: str(self.state_dir)})


def usable(cluster: Cluster, problem: str | None) -> Cluster:
    """``cluster``, unless ``problem`` says why it cannot be used: then the test is skipped (a
    failure with ``SPEARMINT_REQUIRE_CLUSTERS=1``, as in CI)."""
    require_scheduler(cluster.driver, cluster.title, problem)
    return cluster


def require_scheduler(driver: str, title: str, problem: str | None) -> None:
    """Skip the test when ``problem`` says why the scheduler cannot be used (a failure with
    ``SPEARMINT_REQUIRE_CLUSTERS=1``, as in CI)."""
    if problem:
        message = f"no usable {title}: {problem}; start one as root with: bash tests/cluster/{driver}-up.sh"
        if os.environ.get("SPEARMINT_REQUIRE_CLUSTERS") == "1":
            pytest.fail(message)
        pytest.skip(message)


def pid_alive(pid: int) -> bool:
    """True for a live process that is not a zombie (stopped daemons may never be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def stop_pid_file(pid_file: Path, timeout_s: float = 60) -> None:
    """SIGTERM the daemon named in ``pid_file`` and wait until it is gone."""
    pid = int(pid_file.read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not pid_alive(pid), timeout_s, f"pid {pid} from {pid_file} to stop")


def run_script(script: Path, env: Mapping[str, str] | None = None) -> None:
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, f"{script.name} failed:\n{done.stderr[-3000:]}"


def make_experiment(folder: Path, cluster: Cluster, *, sleep: float, budget: int, concurrent: int,
                    body: str = "pass", wrapper: str | None = None, **driver: Any) -> Path:
    """A Branin experiment on ``cluster``'s driver; the wrapper :data:`WRAPPER` (its job sleeps
    ``sleep`` s, then runs ``body``), or the source ``wrapper`` given."""
    config = {"language": "PYTHON", "main-file": "wrapper.py", "experiment-name": f"e2e-{cluster.driver}",
              "variables": BRANIN_VARIABLES, "model": "sobol", "seed": 3, "max-concurrent": concurrent,
              "max-finished-jobs": budget, "polling-time": 1,
              "driver": {"name": cluster.driver, "name-prefix": "sm-", "result-grace": 3,
                         "setup": ["echo setup-line-ran"], **driver}}
    return write_experiment(folder, config, {"wrapper.py": wrapper or WRAPPER.format(sleep=sleep, body=body)})


def run_to_end(experiment: Path, timeout_s: float) -> str:
    """``spearmint-nn run`` in the foreground; returns its console output (asserts exit 0)."""
    done = subprocess.run([sys.executable, "-m", "spearmint_nn", "run", str(experiment)],
                          capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def runs(experiment: Path) -> list[int]:
    log = experiment / "runs.log"
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def by_state(experiment: Path, state: str) -> dict[int, dict[str, Any]]:
    """Job files in one state folder; safe while a daemon moves files (use all_jobs after it)."""
    jobs = {}
    for path in sorted((experiment / ".spearmint" / "jobs" / state).glob("*.json")):
        try:
            job = json.loads(path.read_text())
        except FileNotFoundError:
            continue  # moved on to the next state while we looked
        jobs[job["id"]] = job
    return jobs


def submitted(experiment: Path) -> dict[int, dict[str, Any]]:
    """Running jobs whose scheduler id is recorded (the daemon notes the intent to submit first)."""
    return {i: job for i, job in by_state(experiment, "running").items() if job.get("scheduler_id")}


def assert_each_job_ran_once(experiment: Path, budget: int) -> None:
    jobs = all_jobs(experiment)  # also checks that every job is in exactly one state folder
    complete = {i: job for i, (state, job) in jobs.items() if state == "complete"}
    assert len(complete) == budget == len(jobs), jobs
    ran = runs(experiment)
    assert sorted(ran) == sorted(complete), f"runs.log {sorted(ran)} vs complete {sorted(complete)}"
    # Distinct scheduler jobs: the ids each job ran under (its runner's record). A job whose
    # array the killed daemon submitted without recording its ids may be found finished by the
    # next daemon before it adopts it: complete, with no scheduler_id of the daemon's own.
    ran_under = [tuple(sorted(job["attempts"][-1]["scheduler_ids"].items())) for job in complete.values()]
    assert len(set(ran_under)) == len(ran_under), ran_under
    sids = [job["scheduler_id"] for job in complete.values() if job["scheduler_id"] is not None]
    assert len(set(sids)) == len(sids), sids


def stop_daemon(daemon: subprocess.Popen) -> None:
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=120)


# ---- the scenarios -------------------------------------------------------------------------

def twelve_jobs_three_at_a_time(tmp_path: Path, cluster: Cluster) -> None:
    exp = make_experiment(tmp_path / "exp", cluster, sleep=2, budget=12, concurrent=3)
    run_to_end(exp, 600)
    assert_each_job_ran_once(exp, 12)
    complete = by_state(exp, "complete")
    assert all(job["driver"] == cluster.driver for job in complete.values())
    # never more than 3 wrappers at once, and the scheduler did run them side by side
    events = sorted([(j["started"], 1) for j in complete.values()] + [(j["ended"], -1) for j in complete.values()])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert 2 <= peak <= 3
    state = exp / ".spearmint"
    script = (state / "scripts" / "000001.sh").read_text()
    assert "echo setup-line-ran" in script and "spearmint_nn.runner" in script and "sm-" in script
    assert "setup-line-ran" in (state / "output" / "000001.out").read_text()


def failing_wrapper(tmp_path: Path, cluster: Cluster) -> None:
    # The same error in every job and no success: a wrapper bug, which stops the daemon (exit 1)
    # after 3 jobs that cost no budget.
    exp = make_experiment(tmp_path / "exp", cluster, sleep=0, budget=2, concurrent=2,
                          body='raise RuntimeError("the wrapper broke")')
    done = subprocess.run([sys.executable, "-m", "spearmint_nn", "run", str(exp)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and "a bug in the wrapper" in done.stderr, done.stderr[-3000:]
    failed = by_state(exp, "failed")
    assert len(failed) >= 3 and not by_state(exp, "complete")
    for job in failed.values():
        assert (job["failure"], job["reclassified_from"]) == ("bad_wrapper", "exception")
        assert "the wrapper broke" in job["reason"] and "RuntimeError" in job["stderr_tail"]


def killed_by_time_limit(tmp_path: Path, cluster: Cluster) -> None:
    exp = make_experiment(tmp_path / "exp", cluster, sleep=600, budget=1, concurrent=1,
                          **{"time-limit": cluster.time_limit})
    started = time.monotonic()
    run_to_end(exp, cluster.time_limit + cluster.limit_wait_s + 120)
    failed = by_state(exp, "failed")
    assert [job["failure"] for job in failed.values()] == ["timeout"], failed
    assert time.monotonic() - started >= cluster.time_limit
    assert runs(exp) == list(failed)


# Seconds within which a job cancelled from outside is recorded: a poll (polling-time 1 s) and
# the scheduler's own delay in reporting the end. Far below the experiments' result-grace of
# KILLED_GRACE, which a killed job must not wait for: nothing of it can write a result any more.
KILLED_RECORDED_WITHIN_S = 30
KILLED_GRACE = {"result-grace": 600}


def cancelled_from_outside(tmp_path: Path, cluster: Cluster) -> None:
    exp = make_experiment(tmp_path / "exp", cluster, sleep=600, budget=5, concurrent=1, **KILLED_GRACE)
    daemon = start_daemon(exp, "--cancel-on-exit")
    try:
        first = wait_for(lambda: submitted(exp).get(1), 120, "job 1 to be submitted")
        wait_for(lambda: 1 in runs(exp), 60, "job 1's wrapper to start")
        cluster.cancel(first["scheduler_id"])
        job = wait_for(lambda: by_state(exp, "failed").get(1), KILLED_RECORDED_WITHIN_S,
                       "the daemon to record the cancellation (without waiting result-grace)")
        assert job["failure"] == "cancelled", job
        assert job["scheduler_id"] == first["scheduler_id"]
        # a cancelled job says nothing about its point: the daemon goes on with another job
        wait_for(lambda: by_state(exp, "running"), 120, "the next job to be submitted")
    finally:
        stop_daemon(daemon)
    assert daemon.returncode == 0
    left = all_jobs(exp)
    assert not [i for i, (s, _) in left.items() if s in ("pending", "running")]
    assert all(job["failure"] == "cancelled" for _, job in left.values())
    # --cancel-on-exit: the scheduler really stops the job the daemon had running
    sids = [job["scheduler_id"] for _, job in left.values() if job.get("scheduler_id")]
    assert len(sids) >= 2
    driver = driver_class(cluster.driver)({}, exp / ".spearmint")
    wait_for(lambda: all(s.state.finished for s in driver.poll(sids).values()), 120,
             "the scheduler to end the jobs cancelled at exit")


def three_running(tmp_path: Path, cluster: Cluster, *, sleep: float, budget: int) -> tuple[Path, subprocess.Popen]:
    """A daemon started on a new experiment, once one job is done and three are running; it is
    killed if that never happens."""
    exp = make_experiment(tmp_path / "exp", cluster, sleep=sleep, budget=budget, concurrent=3)
    daemon = start_daemon(exp)
    try:
        wait_for(lambda: by_state(exp, "complete") and len(by_state(exp, "running")) == 3, 180,
                 "one job done and three running")
    except BaseException:
        daemon.kill()
        daemon.wait()
        raise
    return exp, daemon


def daemon_killed_and_restarted(tmp_path: Path, cluster: Cluster) -> None:
    budget = 9
    exp, daemon = three_running(tmp_path, cluster, sleep=4, budget=budget)
    daemon.kill()
    daemon.wait()
    in_flight = {i: job["scheduler_id"] for i, job in submitted(exp).items()}
    assert in_flight
    time.sleep(2)  # the jobs go on without a daemon
    run_to_end(exp, 600)
    assert_each_job_ran_once(exp, budget)
    complete = by_state(exp, "complete")
    for job_id, sid in in_flight.items():
        assert complete[job_id]["scheduler_id"] == sid  # adopted, not submitted again


def controller_restarted(tmp_path: Path, cluster: Cluster) -> None:
    if not (cluster.state_dir / cluster.controller_pid).exists() or os.geteuid() != 0:
        require_scheduler(cluster.driver, cluster.title, f"restarting its controller needs root and the cluster of "
                                                         f"tests/cluster/{cluster.up_script.name} in {cluster.state_dir}")
    budget = 9
    exp, daemon = three_running(tmp_path, cluster, sleep=3, budget=budget)
    console = exp / "console.txt"
    try:
        cluster.stop_controller()
        try:
            # The controller stays away until a poll or a submission has failed: a fixed outage
            # can end inside the client's own retries (SLURM's squeue keeps reconnecting for its
            # MessageTimeout), and then there is nothing to notice. Jobs finish meanwhile.
            wait_for(lambda: "trying again" in console.read_text() or "retrying in" in console.read_text(), 180,
                     "the daemon to notice that the controller is away")
            assert daemon.poll() is None, "the daemon died while the controller was down"
        finally:
            cluster.start_controller()
        daemon.wait(timeout=600)
    finally:
        stop_daemon(daemon)
    assert daemon.returncode == 0
    assert_each_job_ran_once(exp, budget)


# Seconds within which a result on disk is recorded while the controller is down: a poll
# (polling-time 1 s) and a loaded machine's slack, far below the ~10 s a scheduler command
# takes to give up on an absent controller.
RESULT_RECORDED_WITHIN_S = 4


def results_recorded_while_the_controller_is_down(tmp_path: Path, cluster: Cluster) -> None:
    """The controller stopped for 40 s while three jobs run and end 4 s apart: each result on
    disk is recorded within a poll, whatever the hanging scheduler commands do; once the
    controller is back the search goes on, nothing lost or run twice."""
    if not (cluster.state_dir / cluster.controller_pid).exists() or os.geteuid() != 0:
        require_scheduler(cluster.driver, cluster.title, f"stopping its controller needs root and the cluster of "
                                                         f"tests/cluster/{cluster.up_script.name} in {cluster.state_dir}")
    budget = 6
    exp = make_experiment(tmp_path / "exp", cluster, sleep=6, budget=budget, concurrent=3,
                          body="time.sleep(4 * (job_id % 3))")
    daemon = start_daemon(exp)
    try:
        wait_for(lambda: len(runs(exp)) == 3, 180, "three jobs to start")
        cluster.stop_controller()
        stopped = time.monotonic()
        try:
            results = exp / ".spearmint" / "results"
            for job_id in (3, 1, 2):  # in the order they end
                result = results / f"{job_id:06d}.json"
                wait_for(result.exists, 60, f"job {job_id}'s result file")
                job = wait_for(lambda: by_state(exp, "complete").get(job_id), 30, f"job {job_id} recorded")
                late = job["finished"] - result.stat().st_mtime
                assert late < RESULT_RECORDED_WITHIN_S, f"job {job_id} recorded {late:.1f} s after its result"
            assert daemon.poll() is None, "the daemon died while the controller was down"
            time.sleep(max(0.0, 40 - (time.monotonic() - stopped)))
        finally:
            cluster.start_controller()
        assert daemon.wait(timeout=600) == 0, (exp / "console.txt").read_text()[-3000:]
    finally:
        stop_daemon(daemon)
    assert_each_job_ran_once(exp, budget)


def requeued(tmp_path: Path, cluster: Cluster, *, daemon_down: bool) -> None:
    """Job 1 requeued by the scheduler while its wrapper runs (with the daemon running, or killed
    before and started again after): recorded once, complete, with both attempts."""
    # job 1 long enough for Grid Engine, which stops a job some 20 s after qmod -rj
    exp = make_experiment(tmp_path / "exp", cluster, sleep=2, budget=3, concurrent=2,
                          body="time.sleep(45 if job_id == 1 else 0)")
    daemon = start_daemon(exp)
    try:
        first = wait_for(lambda: submitted(exp).get(1), 120, "job 1 to be submitted")
        wait_for(lambda: 1 in runs(exp), 120, "job 1's wrapper to start")
        if daemon_down:
            daemon.kill()
            daemon.wait()
        cluster.requeue(first["scheduler_id"])
        wait_for(lambda: runs(exp).count(1) == 2, 180, "job 1's second attempt to start")
        if daemon_down:
            run_to_end(exp, 600)
        else:
            daemon.wait(timeout=600)
    finally:
        stop_daemon(daemon)
    assert daemon.returncode == (-signal.SIGKILL if daemon_down else 0)
    jobs = all_jobs(exp)
    assert {i: state for i, (state, _) in jobs.items()} == {1: "complete", 2: "complete", 3: "complete"}
    assert sorted(runs(exp)) == [1, 1, 2, 3]  # the wrapper's own log: job 1 ran in two attempts
    job = jobs[1][1]
    assert job["scheduler_id"] == first["scheduler_id"]  # the same scheduler job, followed (or adopted)
    attempts = job["attempts"]
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "requeued"), (2, "ok")], attempts
    assert attempts[1]["restarts"] == cluster.restarted and attempts[1]["started"] > attempts[0]["started"]
    assert all(len(j["attempts"]) == 1 for i, (_, j) in jobs.items() if i != 1)
    with open(exp / ".spearmint" / "results.csv", newline="") as handle:
        table = {row["id"]: row for row in csv.DictReader(handle)}
    assert {i: row["attempts"] for i, row in table.items()} == {"1": "2", "2": "1", "3": "1"}
    assert float(table["1"]["value"]) == job["value"]
    status = subprocess.run([sys.executable, "-m", "spearmint_nn", "status", str(exp), "--json"],
                            capture_output=True, text=True, timeout=120)
    assert json.loads(status.stdout)["attempts"] == {"total": 4, "interrupted_jobs": 1, "resumed_jobs": 0}, status.stderr


def requeued_while_running(tmp_path: Path, cluster: Cluster) -> None:
    requeued(tmp_path, cluster, daemon_down=False)


def requeued_while_the_daemon_is_down(tmp_path: Path, cluster: Cluster) -> None:
    requeued(tmp_path, cluster, daemon_down=True)


def found_by_name_and_folder(tmp_path: Path, cluster: Cluster) -> None:
    """What the daemon asks after a submission failed ambiguously: the scheduler lists the queued
    or running job of that name in that folder, and nothing for another folder or once it ended."""
    driver = driver_class(cluster.driver)({"name-prefix": "sm-find-"}, tmp_path)

    def spec(folder: Path) -> JobSpec:
        folder.mkdir(exist_ok=True)
        return JobSpec(job_id=1, command=["sleep", "8"], workdir=folder, stdout=folder / "o", stderr=folder / "e",
                       script_path=folder / "s.sh", name="one")
    sid = driver.submit(spec(tmp_path / "a"))
    assert driver.find_submitted(spec(tmp_path / "a")) == sid
    assert driver.find_submitted(spec(tmp_path / "b")) is None
    wait_for(lambda: driver.poll([sid])[sid].state.finished, 120, "the job to end")
    assert driver.find_submitted(spec(tmp_path / "a")) is None
def _arrays(experiment: Path) -> dict[str, list[int]]:
    """The job arrays the daemon submitted: the base name of each array's files -> its jobs in task order."""
    return {path.stem: json.loads(path.read_text())["jobs"]
            for path in (experiment / ".spearmint" / "scripts").glob("array-*.json")}


def _assert_tasks(experiment: Path, cluster: Cluster, arrays: Mapping[str, list[int]]) -> None:
    """Each job of an array is recorded as its task (12345_3, 12345.3): one array id per array."""
    driver = driver_class(cluster.driver)({}, experiment / ".spearmint")
    jobs = {i: job for i, (_, job) in all_jobs(experiment).items()}
    for base, members in arrays.items():
        sids = [jobs[job_id]["scheduler_id"] for job_id in members]
        array_id = sids[0].partition(driver.task_separator)[0]
        assert sids == [driver.task_id(array_id, driver.task_first + i) for i in range(len(members))], (base, sids)


def twelve_jobs_four_at_a_time_as_arrays(tmp_path: Path, cluster: Cluster) -> None:
    """Jobs of equal length, 4 at a time: the jobs the daemon submits in one wake go as one job
    array, the first four at once; each job runs once as its task, the array's output reaches
    each job's own files, and there are fewer submissions than jobs."""
    exp = make_experiment(tmp_path / "exp", cluster, sleep=3, budget=12, concurrent=4)
    console = run_to_end(exp, 900)
    assert_each_job_ran_once(exp, 12)
    arrays = _arrays(exp)
    scripts = exp / ".spearmint" / "scripts"
    singles = [path for path in scripts.glob("0*.sh") if not path.is_symlink()]
    assert arrays["array-000001"] == [1, 2, 3, 4]
    assert len(arrays) + len(singles) < 12, (arrays, singles)  # one sbatch/qsub per array
    assert console.count("in one submission to the") == len(arrays)
    _assert_tasks(exp, cluster, arrays)
    complete = by_state(exp, "complete")
    events = sorted([(j["started"], 1) for j in complete.values()] + [(j["ended"], -1) for j in complete.values()])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert peak <= 4  # max-concurrent holds with arrays
    for job_id in arrays["array-000001"]:
        assert "setup-line-ran" in (exp / ".spearmint" / "output" / f"{job_id:06d}.out").read_text()


def a_cancelled_task_leaves_its_siblings_running(tmp_path: Path, cluster: Cluster) -> None:
    exp = make_experiment(tmp_path / "exp", cluster, sleep=600, budget=4, concurrent=2, **KILLED_GRACE)
    daemon = start_daemon(exp, "--cancel-on-exit")
    driver = driver_class(cluster.driver)({}, exp / ".spearmint")
    try:
        jobs = wait_for(lambda: len(s := submitted(exp)) == 2 and s, 120, "jobs 1 and 2 to be submitted")
        assert _arrays(exp) == {"array-000001": [1, 2]}
        wait_for(lambda: {1, 2} <= set(runs(exp)), 180, "both tasks' wrappers to start")
        cluster.cancel(jobs[2]["scheduler_id"])  # the task alone, from outside
        job = wait_for(lambda: by_state(exp, "failed").get(2), KILLED_RECORDED_WITHIN_S,
                       "the daemon to record the cancellation (without waiting result-grace)")
        assert job["failure"] == "cancelled", job
        sibling = jobs[1]["scheduler_id"]
        assert driver.poll([sibling])[sibling].state.value == "running"
        assert 1 in by_state(exp, "running")
    finally:
        stop_daemon(daemon)
    assert daemon.returncode == 0
    assert runs(exp).count(1) == 1  # never started again


def killed_between_an_array_and_its_ids(tmp_path: Path, cluster: Cluster) -> None:
    """The daemon killed right after the scheduler took a job array, before it wrote the tasks'
    ids: the next daemon adopts each task, by the task's claim (SLURM_ARRAY_JOB_ID and
    SLURM_ARRAY_TASK_ID, JOB_ID and SGE_TASK_ID) or, not started yet, by the array's name and
    the task's index; nothing is submitted again or run twice."""
    exp = make_experiment(tmp_path / "exp", cluster, sleep=8, budget=4, concurrent=4)
    killer = subprocess.run([sys.executable, str(Path(__file__).parent / "fake_scheduler.py"), "kill-after-array",
                             str(exp)], capture_output=True, text=True, timeout=300)
    assert killer.returncode == -signal.SIGKILL, killer.stderr[-2000:]
    left = sorted(i for i, job in by_state(exp, "running").items() if job["scheduler_id"] is None)
    assert [left] == list(_arrays(exp).values()) and len(left) >= 2  # the array's jobs, half submitted
    run_to_end(exp, 600)
    assert_each_job_ran_once(exp, 4)
    _assert_tasks(exp, cluster, _arrays(exp))
    log = (exp / ".spearmint" / "daemon.log").read_text()
    assert "submitting it again" not in log
    # the one array is the killed daemon's (killed before it could log it): none submitted since
    assert len(_arrays(exp)) == 1 and "in one submission to the" not in log
    for job_id in left:
        assert f"adopted   job {job_id} running as {cluster.driver} " in log


# what a test module parametrises its one test over, each named after its function
SCENARIOS = [pytest.param(scenario, id=scenario.__name__) for scenario in (
    twelve_jobs_three_at_a_time, failing_wrapper, killed_by_time_limit, cancelled_from_outside,
    daemon_killed_and_restarted, controller_restarted, results_recorded_while_the_controller_is_down,
    requeued_while_running, requeued_while_the_daemon_is_down,
    twelve_jobs_four_at_a_time_as_arrays, a_cancelled_task_leaves_its_siblings_running,
    killed_between_an_array_and_its_ids)]
