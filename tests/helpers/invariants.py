"""What must hold in an experiment's state folder, whatever was killed and when.

The files are the source of truth, so the invariants are checked on the files alone, by code
that shares nothing with the store that wrote them (a bug there cannot hide itself here)::

    from helpers.invariants import check_invariants
    problems = check_invariants("experiments/branin")      # [] when everything holds

Each entry of :data:`INVARIANTS` is one rule; a violation is one line that starts with the
rule's name. ``settled=True`` (the default) adds the rules that hold only once no daemon is
writing: the summaries (``results.csv``, ``best.json``) agree with the job files. Readers can
call it on a live folder with ``settled=False``.

``evaluations`` (optional) is the list of job ids the wrapper itself logged, one per call: with
it, "evaluated exactly once" is checked against what actually ran, not only against the files
(once per attempt: a job the cluster interrupted lists each of its attempts).
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from spearmint_nn.experiment.layout import JOB_STATES, STATE_DIR_NAME

INVARIANTS: dict[str, str] = {
    "parse": "every state file the daemon writes is whole: it parses (JSON, or UTF-8 CSV)",
    "one-state": "every job id is in exactly one state folder, in a file named after it whose "
                 "'state' names that folder",
    "ids": "ids are never reused: next_id is above every id of a job, input, result or claim file",
    "inputs": "every job that can run has inputs/<id>.json, equal to the params of its job file",
    "running": "a running job names its driver and holds the scheduler's id (or is marked "
               "'submitting': the daemon recorded its intent to submit before asking the driver)",
    "finished": "a complete job has a finite value for every task, the objective as 'value', and "
                "(unless imported) the result file the runner wrote, with the same values; "
                "a failed job has a failure kind and a reason",
    "no-repeats": "no two evaluations proposed by the optimizer have the same params "
                  "(a user may ask for a point twice; the optimizer never does)",
    "evaluated-once": "the wrapper ran at most once per job id, and exactly once per complete job",
    "summaries": "results.csv lists exactly the finished jobs with their state and value, and "
                 "best.json is the lowest feasible objective (settled folders only)",
    "permissions": "no file or folder of the state folder is writable by everybody",
}

# Failures that say nothing about the point (the optimizer may propose the point again).
_NOT_EVALUATIONS = frozenset({"submit_rejected", "cancelled", "lost", "node_fail", "interrupted", "bad_params",
                              "bad_config", "bad_wrapper"})
_ID_FILE = re.compile(r"^(\d{6,})(?:-\d+)?\.(json)$")  # 000042-2.json: the claim on an attempt after the first


class InvariantError(AssertionError):
    """Raised by :func:`assert_invariants`; the message lists every violation, one per line."""


def assert_invariants(experiment_dir: str | Path, *, settled: bool = True,
                      evaluations: Sequence[int] | None = None) -> None:
    """:func:`check_invariants`, raising :class:`InvariantError` if anything is violated."""
    problems = check_invariants(experiment_dir, settled=settled, evaluations=evaluations)
    if problems:
        raise InvariantError(f"{len(problems)} invariant violation(s) in {experiment_dir}:\n" + "\n".join(problems))


def check_invariants(experiment_dir: str | Path, *, settled: bool = True,
                     evaluations: Sequence[int] | None = None) -> list[str]:
    """Every violation of :data:`INVARIANTS` in the experiment's state folder, one line each."""
    state = Path(experiment_dir) / STATE_DIR_NAME
    problems: list[str] = []
    if not state.is_dir():
        return problems  # nothing was ever written: nothing can be inconsistent
    tasks = _tasks(Path(experiment_dir), problems)
    jobs = _job_files(state, problems)
    _check_ids(state, jobs, problems)
    for job in jobs.values():
        _check_job(state, job, tasks, problems)
    _check_repeats(jobs.values(), problems)
    if evaluations is not None:
        _check_evaluations(jobs, evaluations, problems)
    if settled:
        _check_summaries(state, jobs, tasks, problems)
    _check_permissions(state, problems)
    return problems


# ---- reading --------------------------------------------------------------------------------

def _parse(path: Path, problems: list[str]) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constants)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(f"parse: {path}: {type(exc).__name__}: {exc}")
        return None


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


def _tasks(experiment: Path, problems: list[str]) -> tuple[str, list[str]] | None:
    """(objective, constraints) from config.json; None (and a violation) if it cannot be read."""
    from spearmint_nn.experiment.config import load_config  # the config parser is not under test here, only needed
    from spearmint_nn.errors import ConfigError

    try:
        config = load_config(experiment, check_driver=False)
    except ConfigError as exc:
        problems.append(f"parse: config.json no longer loads ({exc}); task checks skipped")
        return None
    return config.objective, config.constraints


def _job_files(state: Path, problems: list[str]) -> dict[int, dict[str, Any]]:
    jobs: dict[int, dict[str, Any]] = {}
    where: dict[int, str] = {}
    for folder_state in JOB_STATES:
        folder = state / "jobs" / folder_state
        if not folder.is_dir():
            continue
        for entry in sorted(os.listdir(folder)):
            match = _ID_FILE.match(entry)
            if not match or match.group(2) != "json":
                continue  # temporary files, renamed garbage, user drops not yet taken in
            job = _parse(folder / entry, problems)
            job_id = int(match.group(1))
            if not isinstance(job, dict) or job.get("id") != job_id or job.get("state") != folder_state:
                if job is not None:
                    problems.append(f"one-state: jobs/{folder_state}/{entry} is not job {job_id} in state {folder_state}")
                continue
            if job_id in where:
                problems.append(f"one-state: job {job_id} is in both {where[job_id]} and {folder_state}")
            where[job_id] = folder_state
            jobs[job_id] = job
    return jobs


# ---- rules ----------------------------------------------------------------------------------

def _check_ids(state: Path, jobs: Mapping[int, Any], problems: list[str]) -> None:
    ids = set(jobs)
    for sub in ("inputs", "results", "claims"):
        folder = state / sub
        if folder.is_dir():
            ids.update(int(m.group(1)) for m in map(_ID_FILE.match, os.listdir(folder)) if m)
    next_id = _parse(state / "next_id", problems) if (state / "next_id").exists() else None
    if ids and not (isinstance(next_id, int) and not isinstance(next_id, bool)):
        problems.append(f"ids: next_id holds {next_id!r}, not an integer, while ids up to {max(ids)} exist")
    elif ids and next_id <= max(ids):
        problems.append(f"ids: next_id is {next_id} but id {max(ids)} exists (ids would be reused)")


def _check_job(state: Path, job: Mapping[str, Any], tasks: tuple[str, list[str]] | None,
               problems: list[str]) -> None:
    job_id, job_state = job["id"], job["state"]
    name = f"job {job_id} ({job_state})"
    input_path = state / "inputs" / f"{job_id:06d}.json"
    if input_path.exists():
        stored = _parse(input_path, problems)
        if stored is not None and stored != job.get("params"):
            problems.append(f"inputs: {name}: inputs/{input_path.name} holds {stored!r}, the job file {job.get('params')!r}")
    elif job_state != "failed":  # a job created failed (bad params, NaN import) never gets inputs
        problems.append(f"inputs: {name}: inputs/{input_path.name} is missing")
    if job_state == "running":
        if not job.get("driver"):
            problems.append(f"running: {name} names no driver")
        if not isinstance(job.get("scheduler_id"), str) and "submitting" not in job:
            problems.append(f"running: {name} has no scheduler id and is not marked 'submitting'")
    elif job_state == "failed":
        if not (isinstance(job.get("failure"), str) and job["failure"]) or not (isinstance(job.get("reason"), str) and job["reason"]):
            problems.append(f"finished: {name} lacks a failure kind or a reason")
    elif job_state == "complete":
        _check_complete(state, job, tasks, problems)
    if job_state in ("complete", "failed") and not isinstance(job.get("finished"), (int, float)):
        problems.append(f"finished: {name} has no 'finished' time")


def _check_complete(state: Path, job: Mapping[str, Any], tasks: tuple[str, list[str]] | None,
                    problems: list[str]) -> None:
    name = f"job {job['id']} (complete)"
    values = job.get("values")
    if not isinstance(values, dict) or not all(_finite(v) for v in values.values()):
        problems.append(f"finished: {name}: values {values!r} are not finite numbers")
        return
    if tasks is not None:
        objective, constraints = tasks
        if sorted(values) != sorted([objective, *constraints]):
            problems.append(f"finished: {name}: values for {sorted(values)}, the config has {sorted([objective, *constraints])}")
        elif job.get("value") != values[objective]:
            problems.append(f"finished: {name}: value {job.get('value')!r} is not the objective's {values[objective]!r}")
    if job.get("source") == "import":
        return
    result_path = state / "results" / f"{job['id']:06d}.json"
    if not result_path.exists():
        problems.append(f"finished: {name}: its result file results/{result_path.name} is missing")
        return
    result = _parse(result_path, problems)
    if isinstance(result, dict) and (result.get("status") != "ok" or result.get("values") != values):
        problems.append(f"finished: {name}: recorded values {values!r} but the result file says "
                        f"{result.get('status')!r} {result.get('values')!r}")


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_evaluation(job: Mapping[str, Any]) -> bool:
    """In flight, complete, or failed for a reason about the point itself."""
    return job["state"] != "failed" or job.get("failure") not in _NOT_EVALUATIONS


def _check_repeats(jobs: Iterable[Mapping[str, Any]], problems: list[str]) -> None:
    seen: dict[str, int] = {}
    for job in sorted(jobs, key=lambda j: j["id"]):
        if job.get("source") != "optimizer" or not _is_evaluation(job):
            continue
        key = json.dumps(job.get("params"), sort_keys=True)
        if key in seen:
            problems.append(f"no-repeats: job {job['id']} repeats the params of job {seen[key]}: {key}")
        else:
            seen[key] = job["id"]


def _check_evaluations(jobs: Mapping[int, Mapping[str, Any]], evaluations: Sequence[int],
                       problems: list[str]) -> None:
    counts: dict[int, int] = {}
    for job_id in evaluations:
        counts[job_id] = counts.get(job_id, 0) + 1
    # one call of the wrapper per attempt of the job (an attempt the cluster interrupted ran it too)
    attempts = {job_id: len(job.get("attempts") or [None]) for job_id, job in jobs.items()}
    for job_id, n in sorted(counts.items()):
        if n > attempts.get(job_id, 1):
            problems.append(f"evaluated-once: job {job_id} was evaluated {n} times in {attempts.get(job_id, 1)} attempt(s)")
        if job_id not in jobs:
            problems.append(f"evaluated-once: job {job_id} was evaluated but has no job file")
    for job_id, job in sorted(jobs.items()):
        if job["state"] == "complete" and job.get("source") != "import" and counts.get(job_id, 0) == 0:
            problems.append(f"evaluated-once: job {job_id} is complete but was never evaluated")


def _check_summaries(state: Path, jobs: Mapping[int, Mapping[str, Any]],
                     tasks: tuple[str, list[str]] | None, problems: list[str]) -> None:
    finished = {i: j for i, j in jobs.items() if j["state"] in ("complete", "failed")}
    csv_path = state / "results.csv"
    if csv_path.exists():
        try:
            rows = list(csv.DictReader(io.StringIO(csv_path.read_bytes().decode("utf-8"))))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            problems.append(f"parse: {csv_path}: {exc}")
            rows = None
        if rows is not None:
            table = {}
            for row in rows:
                try:
                    table[int(row["id"])] = row
                except (KeyError, TypeError, ValueError):
                    problems.append(f"summaries: results.csv row {row!r} has no job id")
            if sorted(table) != sorted(finished) or len(rows) != len(table):
                problems.append(f"summaries: results.csv lists jobs {sorted(table)} (in {len(rows)} rows), "
                                f"the finished jobs are {sorted(finished)}")
            for job_id in sorted(set(table) & set(finished)):
                row, job = table[job_id], finished[job_id]
                value = row.get("value", "")
                if row.get("state") != job["state"] or (job["state"] == "complete" and (
                        value == "" or float(value) != job.get("value"))):
                    problems.append(f"summaries: results.csv row of job {job_id} says {row.get('state')} {value!r}, "
                                    f"its job file {job['state']} {job.get('value')!r}")
    elif finished:
        problems.append(f"summaries: results.csv is missing while {len(finished)} job(s) are finished")
    if tasks is None:
        return
    _, constraints = tasks
    feasible = [j for j in finished.values() if j["state"] == "complete"
                and all((j.get("values") or {}).get(c, -1.0) >= 0 for c in constraints)]
    best = min(feasible, key=lambda j: (j["value"], j["id"])) if feasible else None
    best_path = state / "best.json"
    recorded = _parse(best_path, problems) if best_path.exists() else None
    if best is None and recorded is not None:
        problems.append(f"summaries: best.json names job {recorded.get('id') if isinstance(recorded, dict) else recorded!r} "
                        f"but no complete job is feasible")
    elif best is not None and (not isinstance(recorded, dict) or recorded.get("id") != best["id"]
                               or recorded.get("value") != best["value"] or recorded.get("params") != best.get("params")):
        problems.append(f"summaries: best.json says {recorded!r}; the job files say job {best['id']} "
                        f"value {best['value']!r}")


def _check_permissions(state: Path, problems: list[str]) -> None:
    for root, dirs, files in os.walk(state):
        for entry in dirs + files:
            path = Path(root) / entry
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue  # removed meanwhile (a live folder)
            if mode & stat.S_IWOTH and not stat.S_ISLNK(mode):
                problems.append(f"permissions: {path} is writable by everybody ({stat.filemode(mode)})")
