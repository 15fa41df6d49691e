"""The job store: jobs as JSON files under ``.spearmint/jobs/<state>/``, with an in-memory index.

Usage (the daemon, the CLI, drivers and reports all go through this class)::

    store = Store(ExperimentPaths("experiments/branin")).load_all()
    for job in store.jobs("complete"):
        print(job["id"], job["value"], job["params"])

Files and invariants (schema in :mod:`spearmint_nn.experiment.layout`):

* every job is one JSON file ``jobs/<state>/<id>.json`` whose ``state`` field names the folder;
* a job id is never reused: ``next_id`` is persisted *before* a job's first file is written, and
  :meth:`Store.load_all` also takes the maximum over every job, input and result file;
* every write is atomic (:mod:`spearmint_nn.files`: temporary file in the same folder, flush,
  fsync, ``os.replace``, fsync of the folder), so a reader sees the old or the new file, never
  half of one;
* a ``running`` job whose ``scheduler_id`` is null is a submission the daemon started but may
  not have finished; a restarted daemon resolves it through the job's claim (``claims/<id>.json``,
  see :mod:`spearmint_nn.experiment.layout` and :mod:`spearmint_nn.experiment.claims`);
* a state change writes the new file first and removes the old one second. A crash in between
  leaves the job in two folders; :meth:`Store.load_all` (``repair=True``) keeps the later state
  (pending < running < complete/failed) and deletes the other file.

Locking, in the manner of Optuna's file storages: one writer, many readers. Only the process
holding ``daemon.lock`` (the daemon, or a CLI command while no daemon runs) writes ``jobs/``,
``inputs/`` and the summaries, so writes need no finer locks. Readers (``status``, ``report``,
plots) never lock: atomic renames give them whole files, and a job seen in two folders during a
move is resolved by the same "later state wins" rule. A job process writes only its own
``results/<id>.json`` and ``output/<id>.*``, which the daemon reads and never writes.

The index is loaded once; after that the daemon only touches the files of jobs that change, so
events cost O(1) file operations whatever the number of finished jobs. The CSV summary is the
only O(n) write; the daemon rate-limits it by its own cost (``summaries.SummaryWriter``).
"""
from __future__ import annotations

import csv
import io
import json
import math
import numbers
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from .. import files
from ..errors import ConfigError
from ..files import TMP_SUFFIX, atomic_write_json, read_json
from .layout import JOB_STATES, ExperimentPaths

if TYPE_CHECKING:  # only for type hints; the store itself does not parse configs
    from .config import ExperimentConfig

FINAL_STATES = ("complete", "failed")
# Order used to resolve a job found in two folders after a crash mid-move: the later state wins.
STATE_RANK = {"pending": 0, "running": 1, "complete": 2, "failed": 2}
_JOB_NAME = re.compile(r"^(\d{6,})\.json$")
_DROP_NAME = re.compile(r"^\.drop-(\d{6,})\.json$")


# ---- values returned by a wrapper or imported -------------------------------------------------

class BadValues(ValueError):
    """Values that cannot be recorded; ``failure`` is "nan" or "bad_result"."""

    def __init__(self, failure: str, message: str):
        super().__init__(message)
        self.failure = failure


def _as_number(value: Any) -> float | None:
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Real):
        try:
            return float(value)
        except OverflowError:  # an integer beyond float range: recorded as infinite, i.e. a failure
            return math.inf if value > 0 else -math.inf
    if isinstance(value, np.ndarray) and value.size == 1 and np.issubdtype(value.dtype, np.number):
        return float(value.reshape(()))
    return None


def check_values(raw: Any, tasks: Sequence[str]) -> dict[str, float]:
    """Validate a wrapper's return value against the config's task names.

    A number is accepted when there is one task; a dict must cover exactly the tasks with
    numbers. Returns ``{task: float}``; raises :class:`BadValues` ("nan" for NaN or infinite
    values, "bad_result" for anything else).
    """
    if isinstance(raw, Mapping):
        keys = sorted(map(str, raw))
        if keys != sorted(tasks):
            raise BadValues("bad_result", f"returned keys {keys}; expected exactly {sorted(tasks)}")
        values = {}
        for task in tasks:
            number = _as_number(raw[task])
            if number is None:
                raise BadValues("bad_result", f"task {task!r} is {type(raw[task]).__name__} {raw[task]!r:.80}, not a number")
            values[task] = number
    else:
        number = _as_number(raw)
        if number is None:
            raise BadValues("bad_result", f"returned {type(raw).__name__} {raw!r:.80}; expected a number or a dict of task -> number")
        if len(tasks) != 1:
            if not math.isfinite(number):  # a bare NaN means "this evaluation failed", whatever the tasks
                raise BadValues("nan", f"returned {number} (a failed evaluation)")
            raise BadValues("bad_result", f"returned one number but the config has tasks {sorted(tasks)}: return a dict")
        values = {tasks[0]: number}
    bad = [task for task, v in values.items() if not math.isfinite(v)]
    if bad:
        raise BadValues("nan", "returned " + ", ".join(f"{t}={values[t]}" for t in bad))
    return values


# ---- the store --------------------------------------------------------------------------------

class Store:
    """All jobs of one experiment, indexed in memory; see the module docstring for invariants.

    Job dicts returned by :meth:`jobs` and :meth:`get` are the index's own: read them, and
    change them only through :meth:`update` and :meth:`move`.
    """

    def __init__(self, paths: ExperimentPaths):
        self.paths = paths
        self._jobs: dict[int, dict[str, Any]] = {}
        self._by_state: dict[str, set[int]] = {state: set() for state in JOB_STATES}
        self._next_id = 1
        self.problems: list[str] = []  # files skipped or repaired by load_all, one line each

    # -- loading ---------------------------------------------------------------------------

    def create_dirs(self) -> None:
        """Create the state folder tree (the daemon calls this once the config is valid)."""
        for folder in (self.paths.inputs, self.paths.output, self.paths.results, self.paths.scripts,
                       self.paths.model, self.paths.requests, *(self.paths.job_dir(s) for s in JOB_STATES)):
            folder.mkdir(parents=True, exist_ok=True)

    def load_all(self, repair: bool = False) -> "Store":
        """Read every job file into the index; return self.

        Unreadable files are skipped and listed in :attr:`problems`. With ``repair=True`` (only
        the lock holder may pass it) a job left in two folders keeps its later state, leftover
        temporary files are removed, garbage in a final-state folder is renamed ``*.bad``, and
        half-done intakes of dropped files are finished (see :meth:`intake_dropped`).
        """
        self._jobs.clear()
        for ids in self._by_state.values():
            ids.clear()
        self.problems.clear()
        highest = 0
        for state in JOB_STATES:
            folder = self.paths.job_dir(state)
            if not folder.is_dir():
                continue
            for entry in sorted(os.listdir(folder)):
                path = folder / entry
                if entry.startswith(".") and entry.endswith(TMP_SUFFIX):
                    if repair:
                        path.unlink(missing_ok=True)
                    continue
                match = _JOB_NAME.match(entry)
                if not match:
                    continue  # user-dropped files in pending/ are taken in by the daemon
                job_id = int(match.group(1))
                highest = max(highest, job_id)
                job = read_json(path)
                if not _is_job(job, job_id, state):
                    if state != "pending":
                        self.problems.append(f"{path}: not a job file, ignored")
                        if repair:
                            os.replace(path, path.with_name(entry + ".bad"))
                    continue
                self._add_loaded(job, repair)
        for folder in (self.paths.inputs, self.paths.results):
            if folder.is_dir():
                for entry in os.listdir(folder):
                    match = _JOB_NAME.match(entry)
                    if match:
                        highest = max(highest, int(match.group(1)))
        stored = read_json(self.paths.next_id)
        stored = stored if isinstance(stored, int) and not isinstance(stored, bool) else 1
        self._next_id = max(stored, highest + 1, 1)
        return self

    def _add_loaded(self, job: dict[str, Any], repair: bool) -> None:
        job_id, state = job["id"], job["state"]
        old = self._jobs.get(job_id)
        if old is not None:
            keep, drop = (job, old) if _later(job, old) else (old, job)
            self.problems.append(f"job {job_id} found in {old['state']} and {state}: kept {keep['state']}")
            if repair:
                self.paths.job_file(drop["state"], job_id).unlink(missing_ok=True)
                files.fsync_dir(self.paths.job_dir(drop["state"]))
            self._by_state[old["state"]].discard(job_id)
            job = keep
        self._jobs[job_id] = job
        self._by_state[job["state"]].add(job_id)

    # -- reading ---------------------------------------------------------------------------

    def jobs(self, state: str | Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Jobs sorted by id, of one state, of several states, or all (``None``)."""
        if state is None:
            ids: Iterable[int] = self._jobs
        else:
            states = (state,) if isinstance(state, str) else tuple(state)
            ids = set().union(*(self._by_state[s] for s in states))
        return [self._jobs[i] for i in sorted(ids)]

    def get(self, job_id: int) -> dict[str, Any] | None:
        return self._jobs.get(job_id)

    def ids(self, state: str) -> set[int]:
        """A copy of the ids in one state."""
        return set(self._by_state[state])

    def counts(self) -> dict[str, int]:
        return {state: len(ids) for state, ids in self._by_state.items()}

    @property
    def next_id(self) -> int:
        return self._next_id

    # -- writing (lock holder only) --------------------------------------------------------

    def allocate_id(self) -> int:
        """A fresh job id, persisted before any file of the job exists."""
        job_id = self._next_id
        self._next_id += 1
        atomic_write_json(self.paths.next_id, self._next_id)
        return job_id

    def new_job(self, params: Mapping[str, Any], source: str, state: str = "pending",
                job_id: int | None = None, **fields: Any) -> dict[str, Any]:
        """Create a job: ``inputs/<id>.json`` (the params in JSON form) then its job file.

        ``params`` must already be in JSON form (``Space.to_json``) unless the job is created
        failed (bad params are kept as given, to show the user what was wrong).
        """
        job_id = self.allocate_id() if job_id is None else job_id
        if state != "failed":
            atomic_write_json(self.paths.input_file(job_id), params)
        job = {"id": job_id, "state": state, "params": params, "source": source,
               "created": time.time(), **fields}
        atomic_write_json(self.paths.job_file(state, job_id), job)
        self._jobs[job_id] = job
        self._by_state[state].add(job_id)
        return job

    def update(self, job_id: int, **fields: Any) -> dict[str, Any]:
        """Rewrite a job in its current state with some fields changed."""
        job = {**self._jobs[job_id], **fields}
        atomic_write_json(self.paths.job_file(job["state"], job_id), job)
        self._jobs[job_id] = job
        return job

    def move(self, job_id: int, state: str, **fields: Any) -> dict[str, Any]:
        """Change a job's state: write the new file, then remove the old one."""
        old = self._jobs[job_id]
        if state == old["state"]:
            return self.update(job_id, **fields)
        job = {**old, **fields, "state": state}
        atomic_write_json(self.paths.job_file(state, job_id), job)
        self.paths.job_file(old["state"], job_id).unlink(missing_ok=True)
        files.fsync_dir(self.paths.job_dir(old["state"]))
        self._by_state[old["state"]].discard(job_id)
        self._by_state[state].add(job_id)
        self._jobs[job_id] = job
        return job

    def forget_withdrawn(self) -> list[int]:
        """Drop from the index the pending jobs whose file the user deleted; return their ids."""
        present = set(os.listdir(self.paths.job_dir("pending")))  # one listing, not a stat per job
        gone = [i for i in self._by_state["pending"] if self.paths.job_file("pending", i).name not in present]
        for job_id in gone:
            self._by_state["pending"].discard(job_id)
            del self._jobs[job_id]
        return sorted(gone)

    # -- files dropped by users into jobs/pending ------------------------------------------

    def dropped_files(self) -> list[Path]:
        """Files in ``jobs/pending`` that are not pending jobs of the index (user drops)."""
        folder = self.paths.job_dir("pending")
        out = []
        for entry in sorted(os.listdir(folder)):
            if entry.startswith(".") or not entry.endswith(".json"):
                continue
            match = _JOB_NAME.match(entry)
            if match and int(match.group(1)) in self._by_state["pending"]:
                continue
            out.append(folder / entry)
        return out

    def intake_dropped(self, path: Path | None, config: "ExperimentConfig",
                       job_id: int | None = None) -> dict[str, Any]:
        """Turn a user's file into a job: pending (params to run), complete (params and
        ``value``/``values`` obtained elsewhere) or failed ``bad_params``.

        The file holds either the params object itself or ``{"params": ..., "value": number}``
        / ``{"params": ..., "values": {task: number}}``. It is first renamed to
        ``.drop-<id>.json`` under a freshly persisted id, so a crash before the job file exists
        is finished by :meth:`resume_intakes` with the same id, and never yields two jobs.
        """
        folder = self.paths.job_dir("pending")
        if job_id is None:
            job_id = self.allocate_id()
            staged = folder / f".drop-{job_id:06d}.json"
            os.replace(path, staged)
            files.fsync_dir(folder)
            origin = path.name
        else:
            staged = folder / f".drop-{job_id:06d}.json"
            origin = staged.name
        payload = read_json(staged)
        job = self._job_from_drop(payload, origin, config, job_id)
        staged.unlink(missing_ok=True)
        files.fsync_dir(folder)
        return job

    def resume_intakes(self, config: "ExperimentConfig") -> list[dict[str, Any]]:
        """Finish intakes interrupted by a crash (``.drop-<id>.json`` files); return new jobs."""
        folder = self.paths.job_dir("pending")
        out = []
        for entry in sorted(os.listdir(folder)):
            match = _DROP_NAME.match(entry)
            if not match:
                continue
            job_id = int(match.group(1))
            if job_id in self._jobs:
                (folder / entry).unlink(missing_ok=True)
            else:
                out.append(self.intake_dropped(None, config, job_id=job_id))
        return out

    def _job_from_drop(self, payload: Any, origin: str, config: "ExperimentConfig",
                       job_id: int) -> dict[str, Any]:
        space, values_raw = config.space, None
        if isinstance(payload, dict) and "params" in payload:
            params = payload["params"]
            extra = set(payload) - {"params", "value", "values"}
            if "value" in payload and "values" in payload:
                extra.add("value+values")
            values_raw = payload.get("values", payload.get("value"))
        else:
            params, extra = payload, set()
        dropped = {"dropped_file": origin}
        try:
            if payload is None:
                raise ConfigError("params", "file is not valid UTF-8 JSON")
            if extra:
                raise ConfigError("params", f"unexpected keys {sorted(extra)}; use params with value or values")
            space.validate(params)
        except ConfigError as exc:
            return self.new_job(_jsonable(params), "user", "failed", job_id=job_id, failure="bad_params",
                                reason=str(exc), finished=time.time(), **dropped)
        params = space.to_json(params)
        if values_raw is None:
            return self.new_job(params, "user", "pending", job_id=job_id, **dropped)
        try:
            values = check_values(values_raw, list(config.tasks))
        except BadValues as exc:
            return self.new_job(params, "import", "failed", job_id=job_id, failure=exc.failure,
                                reason=str(exc), finished=time.time(), **dropped)
        return self.new_job(params, "import", "complete", job_id=job_id, values=values,
                            value=values[config.objective], finished=time.time(), **dropped)

    # -- summaries -------------------------------------------------------------------------

    def best(self, config: "ExperimentConfig") -> dict[str, Any] | None:
        """The complete job with the lowest objective among those meeting every constraint
        (constraint value >= 0, Spearmint's convention); ties go to the lower id."""
        best = None
        for job in self.jobs("complete"):
            if is_feasible(job, config.constraints) and (best is None or job["value"] < best["value"]):
                best = job
        return best

    def table(self, config: "ExperimentConfig", states: Sequence[str] = JOB_STATES) -> tuple[list[str], list[list[Any]]]:
        """Header and rows (one per job, by id) of the job table shared by results.csv and
        ``spearmint-nn report``; ``best_so_far`` is the running best objective."""
        tasks = list(config.tasks)
        columns = [(var.name if var.size == 1 else f"{var.name}[{i}]", var.name, i)
                   for var in config.space.variables for i in range(var.size)]
        header = (["id", "state", "source", "value", "feasible"] + [f"task:{t}" for t in tasks]
                  + [column for column, _, _ in columns]
                  + ["duration", "failure", "reason", "best_so_far"])
        rows, best_so_far = [], None
        for job in self.jobs(states):
            values = job.get("values") or {}
            feasible = is_feasible(job, config.constraints)
            if feasible:
                best_so_far = job["value"] if best_so_far is None else min(best_so_far, job["value"])
            params = job.get("params") if isinstance(job.get("params"), dict) else {}
            cells = []
            for _, name, i in columns:
                value = params.get(name)
                cells.append(value[i] if isinstance(value, list) and i < len(value) else "")
            rows.append([job["id"], job["state"], job.get("source", ""), job.get("value", ""),
                         {"complete": "yes" if feasible else "no", "failed": "no"}.get(job["state"], "")]
                        + [values.get(t, "") for t in tasks] + cells
                        + [job.get("duration", ""), job.get("failure", ""), job.get("reason", ""),
                           "" if best_so_far is None else best_so_far])
        return header, rows

    def write_summaries(self, config: "ExperimentConfig", model_best: Mapping[str, Any] | None = None) -> None:
        """Rewrite ``results.csv`` (finished jobs) and ``best.json`` atomically.

        ``model_best`` (a noisy objective's best by the model's posterior mean, see
        :mod:`spearmint_nn.experiment.layout`) goes into best.json beside the best observed job.
        """
        header, rows = self.table(config, FINAL_STATES)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        files.atomic_write_bytes(self.paths.results_csv, buffer.getvalue().encode("utf-8"))
        best = self.best(config)
        if best is not None:
            summary = best_summary(best)
            if model_best is not None:
                summary["model_best"] = dict(model_best)
            atomic_write_json(self.paths.best_json, summary)


def best_summary(job: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of best.json and of ``status --json``'s ``best``."""
    return {key: job.get(key) for key in ("id", "value", "values", "params", "duration", "finished")}


def is_feasible(job: Mapping[str, Any], constraints: Sequence[str]) -> bool:
    """A complete job whose every constraint value is >= 0 (Spearmint's convention)."""
    if job.get("state") != "complete":
        return False
    values = job.get("values") or {}
    return all(_as_number(values.get(name)) is not None and values[name] >= 0 for name in constraints)


def _later(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether job record ``a`` is a later state than ``b`` (complete beats failed on a tie)."""
    ra, rb = STATE_RANK[a["state"]], STATE_RANK[b["state"]]
    return ra > rb or (ra == rb and a["state"] == "complete")


def _is_job(obj: Any, job_id: int, state: str) -> bool:
    return (isinstance(obj, dict) and obj.get("id") == job_id and obj.get("state") == state
            and "params" in obj)


def _jsonable(obj: Any) -> Any:
    """``obj`` if it can be written as strict JSON, else its repr (shown back to the user)."""
    try:
        json.dumps(obj, allow_nan=False)
        return obj
    except (TypeError, ValueError):
        return repr(obj)
