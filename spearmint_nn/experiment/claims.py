"""A job's claims: the one runner process that evaluates each attempt of job ``<id>``.

An attempt is one run of the job's runner. A scheduler may run the same scheduler job again
(SLURM requeues it after ``scontrol requeue``, a node failure or a preemption; Grid Engine
reschedules it after ``qmod -rj`` or a host crash): that is another attempt of the same job,
and it must evaluate the job, because the earlier attempt was killed before it wrote a result.
A second copy of an attempt that still runs (a daemon killed between starting a job and
recording its scheduler id submits it again on restart) must not.

Attempt ``n`` of job 42 is claimed by creating ``claims/000042.json`` (n = 1) or
``claims/000042-<n>.json`` with ``os.link`` of a fully written temporary file: the link either
creates the whole claim or fails because the file exists (atomic on local filesystems and on
NFS, where ``O_EXCL`` was not always; a link answered "exists" that the temporary file's link
count shows did succeed, as a retransmitted NFSv3 LINK may be, is a claim made). A runner that finds attempt ``n`` claimed takes attempt
``n + 1`` only when the scheduler says that it restarted that same job (:func:`restarted_since`):
the same scheduler job id, and SLURM's ``SLURM_RESTART_COUNT`` above the holder's or Grid
Engine's ``RESTARTED`` set to 1, both read from the environment the scheduler gave the job;
and only once the holder is gone where this host can tell (same host: its pid). Two copies
racing for the same next attempt are decided by the link again. When the scheduler dropped the
job instead (preempted without requeue, a failed node) or the wrapper stopped at a checkpoint to
be resumed, the daemon submits the job again as a new scheduler job and names the attempt
(``runner --attempt n``); a second copy of that submission finds attempt ``n`` claimed by
other scheduler ids and is refused like any other. Anything else is refused: the
runner waits until the holder is done and exits without evaluating; the holder's result file
is what the daemon records. A job whose result file exists is never evaluated again, so a job
gets exactly one result however many attempts it took.

A claim also names its holder (host, pid, process start time, the scheduler's job ids from the
environment), so a restarted daemon can adopt a job whose scheduler id it never recorded.
Schema in :mod:`spearmint_nn.experiment.layout`.
"""
from __future__ import annotations

import dataclasses
import os
import re
import socket
import sys
import time
from typing import Any, Mapping

from ..processes import process_stat
from .layout import ExperimentPaths
from ..files import create_json_once, read_json

# Environment variables through which schedulers tell a job its own id (SLURM_JOB_ID, JOB_ID
# of Grid Engine, PBS_JOBID, LSB_JOBID, FLUX_JOB_ID, ...), and a job array's task its index
# (SLURM_ARRAY_TASK_ID, SGE_TASK_ID: Grid Engine's JOB_ID is the whole array's).
SCHEDULER_ID_VARIABLE = re.compile(r"(JOB_?ID|TASK_ID)$")
# How schedulers tell a job that it runs again: SLURM counts the restarts (unset in the first
# run), Grid Engine says only whether (0 or 1).
SLURM_RESTARTS = "SLURM_RESTART_COUNT"
SGE_RESTARTED = "RESTARTED"
HOLDER_POLL_S = 0.5


def my_claim(attempt: int) -> dict[str, Any]:
    """The claim record of this process on attempt ``attempt``."""
    stat = process_stat(os.getpid())
    return {"attempt": attempt, "host": socket.gethostname(), "pid": os.getpid(),
            "start_ticks": stat[1] if stat else None, "claimed": time.time(),
            "scheduler_ids": {k: v for k, v in os.environ.items() if SCHEDULER_ID_VARIABLE.search(k)},
            "restarts": {k: os.environ[k] for k in (SLURM_RESTARTS, SGE_RESTARTED) if k in os.environ},
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _count(value: Any) -> int:
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def restarted_since(mine: Mapping[str, Any], holder: Mapping[str, Any]) -> bool:
    """Whether the scheduler says that this process runs the holder's scheduler job again."""
    ids = mine.get("scheduler_ids")
    if not ids or ids != holder.get("scheduler_ids"):
        return False  # not run by a scheduler, or another scheduler job (a second submission)
    restarts, before = mine.get("restarts") or {}, holder.get("restarts") or {}
    if SLURM_RESTARTS in restarts:
        return _count(restarts[SLURM_RESTARTS]) > _count(before.get(SLURM_RESTARTS))
    # Grid Engine does not count, but runs one copy of a job at a time: a restarted copy comes
    # after every earlier one.
    return restarts.get(SGE_RESTARTED) == "1"


@dataclasses.dataclass
class Claim:
    """What :func:`take_claim` found: ``attempt`` is ours when ``ours``, else ``holder`` holds it."""

    ours: bool
    attempt: int
    holder: dict[str, Any]             # the claim of ``attempt`` (ours, or the holder's; {} if unreadable)
    earlier: list[dict[str, Any]]      # the claims of the attempts before it, first first


def take_claim(paths: ExperimentPaths, job_id: int, first_attempt: int = 1) -> Claim:
    """Claim the next attempt of job ``job_id`` for this process, or find why not (see the
    module docstring). ``first_attempt`` > 1: the daemon runs the job again as that attempt
    (the runner's ``--attempt``), after attempt ``first_attempt - 1`` ended without a result."""
    paths.claims.mkdir(exist_ok=True)
    attempt, earlier = first_attempt, []
    for before in range(1, first_attempt):
        claim = read_json(paths.claim_file(job_id, before))
        earlier.append(claim if isinstance(claim, dict) else {"attempt": before})
    if first_attempt > 1 and paths.result_file(job_id).exists():
        return Claim(False, attempt, {}, earlier)  # finished meanwhile: never evaluated twice
    while True:
        mine = my_claim(attempt)
        if create_json_once(paths.claim_file(job_id, attempt), mine):
            return Claim(True, attempt, mine, earlier)
        holder = read_json(paths.claim_file(job_id, attempt))
        holder = holder if isinstance(holder, dict) else {}
        if not paths.claim_file(job_id, attempt + 1).exists():
            if paths.result_file(job_id).exists() or not restarted_since(mine, holder):
                return Claim(False, attempt, holder, earlier)
            # The scheduler killed the holder before it started us; on this host, make sure.
            while holder_alive(holder) and not paths.result_file(job_id).exists():
                time.sleep(HOLDER_POLL_S)
            if paths.result_file(job_id).exists():
                return Claim(False, attempt, holder, earlier)
        earlier.append(holder)
        attempt += 1


def read_claim(paths: ExperimentPaths, job_id: int) -> dict[str, Any] | None:
    """The claim on job ``job_id``'s latest attempt, or None when no runner has claimed it (or
    it is unreadable)."""
    attempt = 1
    while paths.claim_file(job_id, attempt + 1).exists():
        attempt += 1
    claim = read_json(paths.claim_file(job_id, attempt))
    return claim if isinstance(claim, dict) else None


def attempt_record(claim: Mapping[str, Any], ended: float | None, outcome: str) -> dict[str, Any]:
    """One entry of a job's ``attempts`` (schema in :mod:`spearmint_nn.experiment.layout`)."""
    return {"attempt": claim.get("attempt", 1), "host": claim.get("host"), "started": claim.get("claimed"),
            "ended": ended, "outcome": outcome, "scheduler_ids": claim.get("scheduler_ids") or {},
            "restarts": claim.get("restarts") or {}}


def holder_alive(claim: dict[str, Any]) -> bool | None:
    """Whether the claim's process still runs: True/False on its own host, None elsewhere."""
    if claim.get("host") != socket.gethostname() or not isinstance(claim.get("pid"), int):
        return None
    stat = process_stat(claim["pid"])
    return stat is not None and stat[1] == claim.get("start_ticks") and stat[0] not in ("Z", "X")


def wait_for_holder(paths: ExperimentPaths, job_id: int, claim: dict[str, Any]) -> bool:
    """Block until the holder's result file exists or the holder (on this host) is gone.

    A holder on another host is waited for until its result shows up; the scheduler's wall
    time bounds the wait. Returns whether the result file exists.
    """
    result = paths.result_file(job_id)
    if result.exists():
        print(f"spearmint-nn runner: job {job_id} already has its result; not evaluating it again",
              file=sys.stderr, flush=True)
        return True
    print(f"spearmint-nn runner: job {job_id} is already claimed by host {claim.get('host')} "
          f"pid {claim.get('pid')}; not evaluating it again, waiting for that run", file=sys.stderr, flush=True)
    while not result.exists() and holder_alive(claim) is not False:
        time.sleep(HOLDER_POLL_S)
    return result.exists()
