"""The driver side of jobs that the daemon and the CLI share: the config's driver, and the
requests to cancel jobs that ``spearmint-nn cancel`` leaves in ``requests/`` for a running daemon
(while no daemon runs, it cancels them at once itself)."""
from __future__ import annotations

from ..drivers.base import Driver, driver_class
from ..experiment.config import ExperimentConfig
from ..experiment.jobs import JobState
from ..experiment.store import Store
from ..files import read_json
from .event_log import EventLog


def make_driver(config: ExperimentConfig) -> Driver:
    """The config's driver, with the warning before the time limit that its ``resume`` key asks
    for, and its max-concurrent (a job array runs no more tasks at once)."""
    return driver_class(config.driver_name)(config.driver_options, config.paths.state,
                                            warning=config.resume.warning if config.resume is not None else None,
                                            max_concurrent=config.max_concurrent)


def cancel_requests(store: Store, reporter: EventLog) -> list[list[int]]:
    """The jobs that the CLI's files ``requests/cancel-*.json`` name (``{"ids": [...]}`` or
    ``{"ids": "all"}``, all pending and running jobs), one list a file, removing each file once
    read; :meth:`JobEnds.cancel <spearmint_nn.daemon.job_ends.JobEnds.cancel>` cancels them."""
    requests: list[list[int]] = []
    for path in sorted(store.paths.requests.glob("cancel-*.json")):
        request = read_json(path)
        ids = request.get("ids") if isinstance(request, dict) else None
        if ids == "all":
            ids = [j.id for j in store.jobs((JobState.PENDING, JobState.RUNNING))]
        if isinstance(ids, list):
            requests.append([i for i in ids if isinstance(i, int) and not isinstance(i, bool)])
        else:
            reporter.event("warning", f"ignored unreadable request {path.name}")
        path.unlink(missing_ok=True)
    return requests
