"""The driver side of jobs that the daemon and the CLI share: the config's driver, and cancelling
(at once by the CLI while no daemon runs, else by the daemon when ``spearmint-nn cancel`` asks it
through a file in ``requests/``)."""
from __future__ import annotations

import time
from typing import Iterable

from ..drivers.base import Driver, driver_class
from ..experiment.claims import read_claim
from ..experiment.config import ExperimentConfig
from ..experiment.jobs import JobState
from ..experiment.store import Store
from ..files import read_json
from .reporting import Reporter


def make_driver(config: ExperimentConfig) -> Driver:
    driver = driver_class(config.driver_name)(config.driver_options, config.paths.state)
    driver.warning = config.resume.warning if config.resume is not None else None
    driver.max_concurrent = config.max_concurrent  # (a job array runs no more tasks at once)
    return driver


def cancel_jobs(store: Store, driver: Driver, ids: Iterable[int], reporter: Reporter, why: str) -> list[int]:
    """Cancel pending and running jobs (one driver call for all running ones); return their ids."""
    jobs = [store.get(i) for i in ids]
    jobs = [j for j in jobs if j is not None and j.state in (JobState.PENDING, JobState.RUNNING)]
    running = []
    for job in jobs:
        if job.state is not JobState.RUNNING or job.driver != driver.name:
            continue
        scheduler_id = job.scheduler_id
        if scheduler_id is None:  # a daemon died while submitting it: its claim may name the process
            claim = read_claim(store.paths, job.id)
            scheduler_id = driver.adopt_claim(claim) if claim is not None else None
        if scheduler_id is not None:
            running.append(scheduler_id)
    if running:
        driver.cancel(running)
    for job in jobs:
        store.move(job.id, JobState.FAILED, failure="cancelled", reason=why, finished=time.time())
        reporter.event("cancelled", f"job {job.id} ({job.state}): {why}", job=job.id)
    return [j.id for j in jobs]


def cancel_requested_jobs(store: Store, driver: Driver, reporter: Reporter) -> list[int]:
    """Cancel the jobs that the CLI's files ``requests/cancel-*.json`` name (``{"ids": [...]}``
    or ``{"ids": "all"}``), removing each file once read; return the ids cancelled."""
    cancelled: list[int] = []
    for path in sorted(store.paths.requests.glob("cancel-*.json")):
        request = read_json(path)
        ids = request.get("ids") if isinstance(request, dict) else None
        if ids == "all":
            ids = [j.id for j in store.jobs((JobState.PENDING, JobState.RUNNING))]
        if isinstance(ids, list):
            ids = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
            cancelled += cancel_jobs(store, driver, ids, reporter, "cancelled by the user")
        else:
            reporter.event("warning", f"ignored unreadable request {path.name}")
        path.unlink(missing_ok=True)
    return cancelled
