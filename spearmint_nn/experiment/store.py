"""The job store: jobs as JSON files under ``.spearmint/jobs/<state>/``, with an in-memory index.

Usage (the daemon, the CLI, drivers and reports all go through this class)::

    store = Store(ExperimentPaths("experiments/branin")).load_all()
    for job in store.jobs(JobState.COMPLETE):
        print(job.id, job.value, job.params)

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
  (pending < running < complete/failed/stopped) and deletes the other file.

Locking, in the manner of Optuna's file storages: one writer, many readers. Only the process
holding ``daemon.lock`` (the daemon, or a CLI command while no daemon runs) writes ``jobs/``,
``inputs/`` and the summaries, so writes need no finer locks. Readers (``status``, ``report``,
plots) never lock: atomic renames give them whole files, and a job seen in two folders during a
move is resolved by the same "later state wins" rule. A job process writes only its own
``results/<id>.json`` and ``output/<id>.*``, which the daemon reads and never writes.

The index is loaded once; after that the daemon only touches the files of jobs that change, so
events cost O(1) file operations whatever the number of finished jobs. Jobs are
:class:`~spearmint_nn.experiment.jobs.Job` records; the store keeps the index, makes the state
transitions and takes in dropped files, and nothing else (the summaries are written by
:mod:`spearmint_nn.experiment.summaries`).
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .. import files
from ..errors import ConfigError
from ..files import TMP_SUFFIX, atomic_write_json, read_json
from .jobs import BadValues, Job, JobState, check_values
from .layout import ExperimentPaths

if TYPE_CHECKING:  # only for type hints; the store itself does not parse configs
    from .config import ExperimentConfig

_JOB_NAME = re.compile(r"^(\d{6,})\.json$")
_DROP_NAME = re.compile(r"^\.drop-(\d{6,})\.json$")


# ---- the store --------------------------------------------------------------------------------

class Store:
    """All jobs of one experiment, indexed in memory; see the module docstring for invariants.

    Job dicts returned by :meth:`jobs` and :meth:`get` are the index's own: read them, and
    change them only through :meth:`update` and :meth:`move`.
    """

    def __init__(self, paths: ExperimentPaths):
        self.paths = paths
        self._jobs: dict[int, Job] = {}
        self._by_state: dict[JobState, set[int]] = {state: set() for state in JobState}
        self._next_id = 1
        self.problems: list[str] = []  # files skipped or repaired by load_all, one line each

    # -- loading ---------------------------------------------------------------------------

    def create_dirs(self) -> None:
        """Create the state folder tree (the daemon calls this once the config is valid)."""
        for folder in (self.paths.inputs, self.paths.output, self.paths.results, self.paths.scripts,
                       self.paths.model, self.paths.requests, *(self.paths.job_dir(s) for s in JobState)):
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
        for state in JobState:
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
                if not Job.is_job_json(job, job_id, state):
                    if state is not JobState.PENDING:
                        self.problems.append(f"{path}: not a job file, ignored")
                        if repair:
                            os.replace(path, path.with_name(entry + ".bad"))
                    continue
                self._add_loaded(Job.from_json(job), repair)
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

    def _add_loaded(self, job: Job, repair: bool) -> None:
        old = self._jobs.get(job.id)
        if old is not None:
            keep, drop = (job, old) if _later(job, old) else (old, job)
            self.problems.append(f"job {job.id} found in {old.state} and {job.state}: kept {keep.state}")
            if repair:
                self.paths.job_file(drop.state, job.id).unlink(missing_ok=True)
                files.fsync_dir(self.paths.job_dir(drop.state))
            self._by_state[old.state].discard(job.id)
            job = keep
        self._jobs[job.id] = job
        self._by_state[job.state].add(job.id)

    # -- reading ---------------------------------------------------------------------------

    def jobs(self, state: str | Iterable[str] | None = None) -> list[Job]:
        """Jobs sorted by id, of one state, of several states, or all (``None``)."""
        if state is None:
            ids: Iterable[int] = self._jobs
        else:
            states = (state,) if isinstance(state, str) else tuple(state)
            ids = set().union(*(self._by_state[JobState(s)] for s in states))
        return [self._jobs[i] for i in sorted(ids)]

    def get(self, job_id: int) -> Job | None:
        return self._jobs.get(job_id)

    def ids(self, state: str) -> set[int]:
        """A copy of the ids in one state."""
        return set(self._by_state[JobState(state)])

    def counts(self) -> dict[str, int]:
        """Jobs per state, by state name, every state present."""
        return {state.value: len(ids) for state, ids in self._by_state.items()}

    def finished_count(self, ignored_failures: Iterable[str]) -> int:
        """Finished jobs that count against ``max-finished-jobs``, by the rules of
        :class:`~spearmint_nn.experiment.jobs.Job`: every complete and every stopped job, and the
        failed ones that :meth:`~Job.counts_toward_budget` and are not :meth:`~Job.held_back`.
        Derived from the index at each call, so that every writer of a job keeps it right; it
        reads only the failed jobs, usually few."""
        complete = self._by_state[JobState.COMPLETE]
        any_success = bool(complete)
        return len(complete) + len(self._by_state[JobState.STOPPED]) + sum(1 for job_id in self._by_state[JobState.FAILED]
                                   if self._jobs[job_id].counts_toward_budget(ignored_failures)
                                   and not self._jobs[job_id].held_back(any_success))

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

    def new_job(self, params: Mapping[str, Any], source: str, state: JobState | str = JobState.PENDING,
                job_id: int | None = None, **fields: Any) -> Job:
        """Create a job: ``inputs/<id>.json`` (the params in JSON form) then its job file.

        ``params`` must already be in JSON form (``Space.to_json``) unless the job is created
        failed (bad params are kept as given, to show the user what was wrong).
        """
        job_id = self.allocate_id() if job_id is None else job_id
        job = Job(job_id, JobState(state), params, {"source": source, "created": time.time(), **fields})
        if job.state is not JobState.FAILED:
            atomic_write_json(self.paths.input_file(job_id), params)
        self._write(job)
        self._by_state[job.state].add(job_id)
        return job

    def update(self, job_id: int, **fields: Any) -> Job:
        """Rewrite a job in its current state with some fields changed."""
        job = self._jobs[job_id].with_fields(**fields)
        self._write(job)
        return job

    def move(self, job_id: int, state: JobState | str, **fields: Any) -> Job:
        """Change a job's state (a legal transition: :meth:`JobState.can_become`, else
        :class:`~spearmint_nn.experiment.jobs.IllegalTransition`): write the new file, then
        remove the old one."""
        old = self._jobs[job_id]
        job = old.moved_to(state, **fields)
        self._write(job)
        if job.state is old.state:
            return job
        self.paths.job_file(old.state, job_id).unlink(missing_ok=True)
        files.fsync_dir(self.paths.job_dir(old.state))
        self._by_state[old.state].discard(job_id)
        self._by_state[job.state].add(job_id)
        return job

    def _write(self, job: Job) -> None:
        atomic_write_json(self.paths.job_file(job.state, job.id), job.to_json())
        self._jobs[job.id] = job

    def forget_withdrawn(self) -> list[int]:
        """Drop from the index the pending jobs whose file the user deleted; return their ids."""
        present = set(os.listdir(self.paths.job_dir(JobState.PENDING)))  # one listing, not a stat per job
        gone = [i for i in self._by_state[JobState.PENDING] if self.paths.job_file(JobState.PENDING, i).name not in present]
        for job_id in gone:
            self._by_state[JobState.PENDING].discard(job_id)
            del self._jobs[job_id]
        return sorted(gone)

    # -- files dropped by users into jobs/pending ------------------------------------------

    def dropped_files(self) -> list[Path]:
        """Files in ``jobs/pending`` that are not pending jobs of the index (user drops)."""
        folder = self.paths.job_dir(JobState.PENDING)
        out = []
        for entry in sorted(os.listdir(folder)):
            if entry.startswith(".") or not entry.endswith(".json"):
                continue
            match = _JOB_NAME.match(entry)
            if match and int(match.group(1)) in self._by_state[JobState.PENDING]:
                continue
            out.append(folder / entry)
        return out

    def intake_dropped(self, path: Path | None, config: "ExperimentConfig",
                       job_id: int | None = None) -> Job:
        """Turn a user's file into a job: pending (params to run), complete (params and
        ``value``/``values`` obtained elsewhere) or failed ``bad_params``.

        The file holds either the params object itself or ``{"params": ..., "value": number}``
        / ``{"params": ..., "values": {task: number}}``. It is first renamed to
        ``.drop-<id>.json`` under a freshly persisted id, so a crash before the job file exists
        is finished by :meth:`finish_intakes` with the same id, and never yields two jobs.
        """
        folder = self.paths.job_dir(JobState.PENDING)
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

    def finish_intakes(self, config: "ExperimentConfig") -> list[Job]:
        """Finish intakes interrupted by a crash (``.drop-<id>.json`` files); return new jobs."""
        folder = self.paths.job_dir(JobState.PENDING)
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
                       job_id: int) -> Job:
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
            return self.new_job(_jsonable(params), "user", JobState.FAILED, job_id=job_id, failure="bad_params",
                                reason=str(exc), finished=time.time(), **dropped)
        params = space.to_json(params)
        if values_raw is None:
            return self.new_job(params, "user", JobState.PENDING, job_id=job_id, **dropped)
        try:
            values = check_values(values_raw, list(config.tasks.names))
        except BadValues as exc:
            return self.new_job(params, "import", JobState.FAILED, job_id=job_id, failure=exc.failure,
                                reason=str(exc), finished=time.time(), **dropped)
        return self.new_job(params, "import", JobState.COMPLETE, job_id=job_id, values=values,
                            value=values[config.objective], finished=time.time(), **dropped)


def _later(a: Job, b: Job) -> bool:
    """Whether job record ``a`` is a later state than ``b`` (complete beats failed on a tie)."""
    return a.state.rank > b.state.rank or (a.state.rank == b.state.rank and a.state is JobState.COMPLETE)


def _jsonable(obj: Any) -> Any:
    """``obj`` if it can be written as strict JSON, else its repr (shown back to the user)."""
    try:
        json.dumps(obj, allow_nan=False)
        return obj
    except (TypeError, ValueError):
        return repr(obj)
