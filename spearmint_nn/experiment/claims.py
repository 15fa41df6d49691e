"""A job's claim: the one runner process that evaluates job ``<id>``.

The runner creates ``claims/<id>.json`` before it touches the wrapper, with ``os.link`` of a
fully written temporary file: the link either creates the whole claim or fails because the
file exists (atomic on local filesystems and on NFS, where ``O_EXCL`` was not always). So however
often a job is started (a daemon killed between starting a job and recording its scheduler id
submits it again on restart), the wrapper runs once. A runner that loses waits until the holder
is done and exits without evaluating; the holder's result file is what the daemon records.

The claim also names its holder (host, pid, process start time, the scheduler's job id from the
environment), so a restarted daemon can adopt a job whose scheduler id it never recorded.
Schema in :mod:`spearmint_nn.experiment.layout`.
"""
from __future__ import annotations

import os
import re
import socket
import sys
import time
from typing import Any

from ..drivers.local import _proc_stat
from .layout import ExperimentPaths
from ..files import create_json_once, read_json

# Environment variables through which schedulers tell a job its own id (SLURM_JOB_ID, JOB_ID
# of Grid Engine, PBS_JOBID, LSB_JOBID, FLUX_JOB_ID, ...).
SCHEDULER_ID_VARIABLE = re.compile(r"JOB_?ID$")
HOLDER_POLL_S = 0.5


def my_claim() -> dict[str, Any]:
    """The claim record of this process."""
    stat = _proc_stat(os.getpid())
    return {"host": socket.gethostname(), "pid": os.getpid(), "start_ticks": stat[1] if stat else None,
            "claimed": time.time(),
            "scheduler_ids": {k: v for k, v in os.environ.items() if SCHEDULER_ID_VARIABLE.search(k)},
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def take_claim(paths: ExperimentPaths, job_id: int) -> dict[str, Any] | None:
    """Claim job ``job_id`` for this process: None when the claim is ours, else the holder's
    claim (``{}`` if it cannot be read)."""
    path = paths.claim_file(job_id)
    path.parent.mkdir(exist_ok=True)
    if create_json_once(path, my_claim()):
        return None
    holder = read_json(path)
    return holder if isinstance(holder, dict) else {}


def read_claim(paths: ExperimentPaths, job_id: int) -> dict[str, Any] | None:
    """The claim on job ``job_id``, or None when no runner has claimed it (or it is unreadable)."""
    claim = read_json(paths.claim_file(job_id))
    return claim if isinstance(claim, dict) else None


def holder_alive(claim: dict[str, Any]) -> bool | None:
    """Whether the claim's process still runs: True/False on its own host, None elsewhere."""
    if claim.get("host") != socket.gethostname() or not isinstance(claim.get("pid"), int):
        return None
    stat = _proc_stat(claim["pid"])
    return stat is not None and stat[1] == claim.get("start_ticks") and stat[0] not in ("Z", "X")


def wait_for_holder(paths: ExperimentPaths, job_id: int, claim: dict[str, Any]) -> bool:
    """Block until the holder's result file exists or the holder (on this host) is gone.

    A holder on another host is waited for until its result shows up; the scheduler's wall
    time bounds the wait. Returns whether the result file exists.
    """
    print(f"spearmint-nn runner: job {job_id} is already claimed by host {claim.get('host')} "
          f"pid {claim.get('pid')}; not evaluating it again, waiting for that run", file=sys.stderr, flush=True)
    result = paths.result_file(job_id)
    while not result.exists() and holder_alive(claim) is not False:
        time.sleep(HOLDER_POLL_S)
    return result.exists()
