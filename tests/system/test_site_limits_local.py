"""The daemon under a site's cap on submitted jobs, with real job processes: the local driver
refusing as ``sbatch`` does over ``MaxSubmitJobs`` (a cap that counts a job until its process has
exited). The real schedulers' refusals: tests/cluster/test_site_limits.py."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping

from helpers.experiments import quick_config, write_experiment
from helpers.fake_scheduler import jobs_by_id, run_daemon
from helpers.invariant_checks import assert_folder_ok, counting_wrapper
from spearmint_nn.daemon.policies import site_limits
from spearmint_nn.drivers.base import JobSpec, SiteLimitError
from spearmint_nn.drivers.local import LocalDriver
from spearmint_nn.experiment.layout import ExperimentPaths

REFUSAL = ("sbatch failed: sbatch: error: AssocMaxSubmitJobLimit sbatch: error: Batch job submission failed: "
           "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)")


class CappedLocalDriver(LocalDriver):
    """Local processes, at most ``cap`` alive at once: one more submission is refused as a site
    limit; after ``lift_after`` refusals the cap is gone (the site raised it)."""

    def __init__(self, options: Mapping[str, Any], state_dir: Path, cap: int, lift_after: int | None = None):
        super().__init__(options, state_dir)
        self.cap, self.lift_after = cap, lift_after
        self.refusals = 0
        self.peak = 0

    def alive(self) -> int:
        return sum(proc.poll() is None for proc in self._children.values())

    def submit(self, spec: JobSpec) -> str:
        if self.cap is not None and self.alive() >= self.cap:
            self.refusals += 1
            if self.lift_after is not None and self.refusals >= self.lift_after:
                self.cap = None
            raise SiteLimitError(REFUSAL)
        scheduler_id = super().submit(spec)
        self.peak = max(self.peak, self.alive())
        return scheduler_id


def experiment(tmp_path: Path, budget: int, concurrent: int) -> Path:
    config = quick_config(**{"max-finished-jobs": budget, "max-concurrent": concurrent, "polling-time": 0.3})
    return write_experiment(tmp_path / "exp", config, {"wrapper.py": counting_wrapper("time.sleep(1.0)")})


def limit_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if " limit " in line]


def test_a_cap_of_three_runs_eight_jobs_three_at_a_time_and_fails_none(tmp_path, monkeypatch):
    monkeypatch.setattr(site_limits, "PROBE_FIRST_S", 0.5)
    folder = experiment(tmp_path, budget=8, concurrent=6)
    driver = CappedLocalDriver({}, ExperimentPaths(folder).state, cap=3)
    code, log = run_daemon(folder, driver)
    assert code == 0, log
    jobs = jobs_by_id(folder)
    assert [job["state"] for job in jobs.values()] == ["complete"] * 8, log
    assert driver.refusals >= 1 and driver.peak <= 3
    lines = limit_lines(log)
    assert len(lines) == 1 and "holding at 3 job(s) in flight (max-concurrent 6)" in lines[0], lines
    assert "AssocMaxSubmitJobLimit" in lines[0]
    assert " warning " not in log and " failed " not in log  # no retry counted, no job failed
    # no job was proposed beyond what the site takes: at most one waiting beside the three
    assert max(job["id"] for job in jobs.values()) == 8
    assert_folder_ok(folder, folder / "runs.txt")


def test_the_target_rises_again_when_the_site_takes_more(tmp_path, monkeypatch):
    monkeypatch.setattr(site_limits, "PROBE_FIRST_S", 0.5)
    folder = experiment(tmp_path, budget=12, concurrent=4)
    driver = CappedLocalDriver({}, ExperimentPaths(folder).state, cap=2, lift_after=2)
    start = time.monotonic()
    code, log = run_daemon(folder, driver)
    assert code == 0, log
    assert [job["state"] for job in jobs_by_id(folder).values()] == ["complete"] * 12
    lines = limit_lines(log)
    assert len(lines) == 2, lines
    assert "holding at 2 job(s)" in lines[0] and "the site's limit has lifted: 4 job(s) in flight" in lines[1]
    assert driver.peak > 2  # past the old cap (processes that are still exiting count too)
    assert not ExperimentPaths(folder).site_limit.exists()
    assert time.monotonic() - start < 60
