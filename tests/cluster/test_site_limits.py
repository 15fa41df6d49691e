"""A site's cap on a user's jobs, on the real schedulers: back-pressure, never a failure.

SLURM (tests/cluster/slurm-up.sh enforces association and QOS limits): the caps are set with
``sacctmgr`` on the association of root in the account "limits" (and on the QOS "limits"),
which only these tests use, so other tests' jobs (account root) are never capped; each cap is
removed again at the end. Grid Engine: ``max_u_jobs`` is a global setting (every user, every
test); the test sets it for its own run only, once no other job is queued, and restores it.
"""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from helpers import batch_scenarios as scenarios
from helpers.experiments import all_jobs
from spearmint_nn.drivers.base import JobSpec, SiteLimitError
from spearmint_nn.drivers.sge import SgeDriver
from spearmint_nn.drivers.slurm import SlurmDriver
from test_sge import sge_problem
from test_slurm import slurm_problem

pytestmark = [pytest.mark.slow]

CAP = 3
LIMITS_ASSOCIATION = ["where", "name=root", "account=limits", "cluster=spearmint"]


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)


# ---- SLURM -------------------------------------------------------------------------------------

def enforced() -> str:
    """SLURM's AccountingStorageEnforce as slurmctld has it."""
    config = run(["scontrol", "show", "config"]).stdout
    found = re.search(r"^AccountingStorageEnforce\s*=\s*(\S+)", config, re.MULTILINE)
    return found.group(1) if found else ""


@pytest.fixture
def slurm() -> scenarios.Cluster:
    cluster = scenarios.usable(scenarios.Cluster(
        driver="slurm", title="SLURM", cancel=lambda sid: run(["scancel", sid]), requeue=lambda sid: None,
        time_limit=60, limit_wait_s=60, controller_pid="run/slurmctld.pid",
        restarted={"SLURM_RESTART_COUNT": "1"}), slurm_problem())
    if "limits" not in enforced():  # a SLURM set up by an older slurm-up.sh: bring it up to this one
        scenarios.run_script(cluster.up_script, {cluster.state_variable: str(cluster.state_dir)})
        assert "limits" in enforced(), f"slurm-up.sh left AccountingStorageEnforce={enforced()}"
    # no cap from a run of these tests that was killed before it removed its own
    run(["sacctmgr", "-i", "modify", "user", *LIMITS_ASSOCIATION, "set", "MaxSubmitJobs=-1", "MaxJobs=-1"])
    run(["sacctmgr", "-i", "modify", "qos", "limits", "set", "MaxSubmitJobsPerUser=-1"])
    return cluster


@contextlib.contextmanager
def slurm_cap(kind: str, settings: dict[str, int]) -> Iterator[None]:
    """``sacctmgr`` limits on the association root/limits (``kind`` "user") or the QOS limits
    (``kind`` "qos") while the block runs; removed (-1) after it, whatever happened."""
    where = LIMITS_ASSOCIATION if kind == "user" else ["limits"]

    def apply(values: dict[str, int]) -> None:
        done = run(["sacctmgr", "-i", "modify", kind, *where, "set", *(f"{k}={v}" for k, v in values.items())])
        assert done.returncode == 0, done.stdout + done.stderr
    apply(settings)
    try:
        # slurmctld takes the change from slurmdbd within a moment: an association's limits
        # show in its assoc_mgr (as "MaxJobs=1(0)"), a QOS's per-user ones do not
        if kind == "user":
            shown = lambda: all(re.search(rf"\b{k}={v}\(", run(["scontrol", "show", "assoc_mgr", "flags=assoc",
                                                                 "users=root", "accounts=limits"]).stdout)
                                for k, v in settings.items())
            scenarios.wait_for(shown, 60, f"slurmctld to show {settings}")
        else:
            time.sleep(2)
        yield
    finally:
        apply({key: -1 for key in settings})


def spec(folder: Path, job_id: int, seconds: int = 20) -> JobSpec:
    folder.mkdir(parents=True, exist_ok=True)
    return JobSpec(job_id=job_id, command=["sleep", str(seconds)], workdir=folder, stdout=folder / f"{job_id}.out",
                   stderr=folder / f"{job_id}.err", script_path=folder / f"{job_id}.sh", name=f"limit-{job_id}")


@pytest.mark.slurm
def test_slurm_refusals_and_waits_for_a_cap_are_recognised(tmp_path, slurm):
    """The scheduler's own answers, as the driver reads them: sbatch over a QOS's per-user
    MaxSubmitJobs is a SiteLimitError; a job over the association's MaxJobs is queued, waiting
    for the site's limit (reason AssocMaxJobsLimit)."""
    driver = SlurmDriver({"account": "limits", "qos": "limits", "name-prefix": "sm-"}, tmp_path)
    ids = []
    try:
        with slurm_cap("qos", {"MaxSubmitJobsPerUser": 1}):
            ids.append(driver.submit(spec(tmp_path, 1)))
            with pytest.raises(SiteLimitError, match="QOSMaxSubmitJobPerUserLimit"):
                driver.submit(spec(tmp_path, 2))
        with slurm_cap("user", {"MaxJobs": 1}):
            ids.append(driver.submit(spec(tmp_path, 3)))
            statuses = scenarios.wait_for(
                lambda: (found := driver.poll(ids)) and any(s.site_limit for s in found.values()) and found,
                120, "a job queued for the association's MaxJobs")
            waiting = [s for s in statuses.values() if s.site_limit]
            assert len(waiting) == 1 and "AssocMaxJobsLimit" in waiting[0].reason
    finally:
        driver.cancel(ids)


@pytest.mark.slurm
def test_slurm_counts_each_task_of_an_array_against_max_submit_jobs(tmp_path, slurm):
    """Under MaxSubmitJobs=3 an array of 5 is refused for the site's limit (SLURM counts its
    tasks), while one of 3 is taken: why the daemon submits a refused array job by job."""
    driver = SlurmDriver({"account": "limits", "name-prefix": "sm-", "extra-args": ["--hold"]}, tmp_path)
    taken: list[str] = []
    try:
        with slurm_cap("user", {"MaxSubmitJobs": CAP}):
            answers = driver.submit_many([spec(tmp_path / "five", i) for i in range(1, 6)])
            assert all(isinstance(answer, SiteLimitError) for answer in answers), answers
            taken = driver.submit_many([spec(tmp_path / "three", i) for i in range(1, 4)])
            assert all(isinstance(answer, str) for answer in taken), taken
    finally:
        driver.cancel([answer for answer in taken if isinstance(answer, str)])


def status_json(exp: Path) -> dict:
    done = run([sys.executable, "-m", "spearmint_nn", "status", str(exp), "--json"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def most_in_flight(exp: Path) -> int:
    """The most of the experiment's jobs that were submitted and not yet recorded at once."""
    jobs = [job for _, job in all_jobs(exp).values() if job.get("submitted")]
    events = sorted([(job["submitted"], 1) for job in jobs] + [(job["finished"], -1) for job in jobs])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    return peak


def eight_jobs_under_a_cap(tmp_path: Path, cluster: scenarios.Cluster, queued: Callable[[], int],
                           refusal: str, **driver: object) -> None:
    """8 jobs at max-concurrent 6 under a cap of 3 submitted jobs: all complete, none failed,
    never more than 3 submitted at once, the limit said once on the console and shown by
    status while it holds (``queued()``: the scheduler's count of the experiment's jobs)."""
    exp = scenarios.make_experiment(tmp_path / "exp", cluster, sleep=4, budget=8, concurrent=6, **driver)
    most_queued, stop = [0], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            most_queued[0] = max(most_queued[0], queued())
            time.sleep(0.5)
    watcher = threading.Thread(target=watch, daemon=True)
    daemon = scenarios.start_daemon(exp)
    watcher.start()
    try:
        held = scenarios.wait_for(lambda: (status_json(exp).get("site_limit") or {}).get("held"), 300,
                                  "status to show the site's limit")
        text = run([sys.executable, "-m", "spearmint_nn", "status", str(exp)]).stdout
        assert daemon.wait(timeout=900) == 0
    finally:
        stop.set()
        scenarios.stop_daemon(daemon)
    watcher.join(timeout=30)
    assert 1 <= held["in_flight"] <= CAP and refusal in held["message"], held
    assert "site limit: the scheduler takes no more jobs" in text and refusal in text, text
    scenarios.assert_each_job_ran_once(exp, 8)  # all complete, nothing failed, each evaluated once
    assert most_in_flight(exp) <= CAP and most_queued[0] <= CAP
    console = (exp / "console.txt").read_text()
    lines = [line for line in console.splitlines() if " limit " in line and "refused job" in line]
    assert len(lines) == 1 and refusal in lines[0], console[-3000:]
    assert "submit_rejected" not in console and " warning " not in console, console[-3000:]
    assert status_json(exp)["site_limit"] is None  # the daemon has stopped: nothing holds now


@pytest.mark.slurm
def test_slurm_max_submit_jobs_of_3_holds_8_jobs_at_3_in_flight(tmp_path, slurm):
    def queued() -> int:  # only these tests submit to the account "limits"
        return len(run(["squeue", "-h", "-A", "limits", "-o", "%i"]).stdout.split())
    with slurm_cap("user", {"MaxSubmitJobs": CAP}):
        eight_jobs_under_a_cap(tmp_path, slurm, queued, "AssocMaxSubmitJobLimit", account="limits")


# ---- Grid Engine -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sge() -> scenarios.Cluster:
    return scenarios.usable(scenarios.Cluster(
        driver="sge", title="Grid Engine", cancel=lambda sid: run(["qdel", sid]), requeue=lambda sid: None,
        time_limit=5, limit_wait_s=30, controller_pid="spool/qmaster/qmaster.pid",
        restarted={"RESTARTED": "1"}), sge_problem())


def sge_jobs() -> list[str]:
    """Numbers of every job in Grid Engine's queue, of any user."""
    return re.findall(r"<JB_job_number>(\d+)</JB_job_number>", run(["qstat", "-xml", "-u", "*"]).stdout)


@contextlib.contextmanager
def sge_max_u_jobs(cap: int, folder: Path) -> Iterator[None]:
    """The global configuration's max_u_jobs while the block runs, restored after it. It caps
    every user, so it is set only once the queue is empty (other tests' jobs done)."""
    scenarios.wait_for(lambda: not sge_jobs(), 600, "Grid Engine's queue to be empty")
    folder.mkdir(parents=True, exist_ok=True)
    original = run(["qconf", "-sconf", "global"]).stdout
    assert re.search(r"^max_u_jobs\s+\d+", original, re.MULTILINE), original

    def apply(text: str) -> None:
        path = folder / "global"  # qconf -Mconf wants a file of that name
        path.write_text(text)
        done = run(["qconf", "-Mconf", str(path)])
        assert done.returncode == 0, done.stdout + done.stderr
    apply(re.sub(r"^max_u_jobs\s+\d+", f"max_u_jobs                   {cap}", original, flags=re.MULTILINE))
    try:
        yield
    finally:
        apply(original)


@pytest.mark.sge
def test_sge_max_u_jobs_of_3_holds_8_jobs_at_3_in_flight(tmp_path, sge):
    def queued() -> int:
        listing = run(["qstat", "-xml"]).stdout
        return len(re.findall(r"<JB_name>sm-e2e-sge-\d+</JB_name>", listing))
    with sge_max_u_jobs(CAP, tmp_path / "conf"):  # one job per submission: Grid Engine counts
        # a job array as one job against max_u_jobs, so the first 6 jobs as an array would not meet it
        eight_jobs_under_a_cap(tmp_path, sge, queued, "jobs are allowed per user", **{"array-size": 1})


@pytest.mark.sge
def test_sge_counts_an_array_once_against_max_u_jobs(tmp_path, sge):
    """Under max_u_jobs=3 an array of 5 jobs is one job: taken, and two single jobs beside it;
    the next single job is refused for the site's limit."""
    driver = SgeDriver({"name-prefix": "sm-", "extra-args": ["-h"]}, tmp_path)
    taken: list[str] = []
    with sge_max_u_jobs(CAP, tmp_path / "conf"):
        try:
            taken = driver.submit_many([spec(tmp_path / "array", i) for i in range(1, 6)])
            assert all(isinstance(answer, str) for answer in taken), taken
            taken += [driver.submit(spec(tmp_path / "single", i)) for i in (6, 7)]
            with pytest.raises(SiteLimitError, match="jobs are allowed per user"):
                driver.submit(spec(tmp_path / "single", 8))
        finally:
            driver.cancel(taken)
