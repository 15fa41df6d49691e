"""Requests of the CLI to a running daemon: ``spearmint-nn cancel`` leaves a file in
``requests/`` for the daemon that holds the folder (while no daemon runs, the command cancels
the jobs at once itself, through :class:`~spearmint_nn.daemon.job_ends.JobEnds` as the daemon does)."""
from __future__ import annotations

from ...experiment.jobs import JobState
from ...experiment.store import Store
from ...files import read_json
from ..event_log import EventLog


def cancel_requests(store: Store, log: EventLog) -> list[list[int]]:
    """The jobs that the files ``requests/cancel-*.json`` name (``{"ids": [...]}`` or
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
            log.event("warning", f"ignored unreadable request {path.name}")
        path.unlink(missing_ok=True)
    return requests
