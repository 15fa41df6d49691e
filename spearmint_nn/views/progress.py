"""Where a search stands: a snapshot of an experiment, the live progress line, ``status --watch``.

A :class:`Snapshot` is built from a job :class:`~spearmint_nn.experiment.store.Store` and the config, so
the live line of ``spearmint-nn run`` (from the daemon's in-memory store), ``status --watch``,
the plots and the HTML report (from the files) all show the same numbers, and all of them work
on a folder copied off a cluster with no daemon running.

The live line::

    branin: 12/50 done, 2 running, 1 failed, best 0.3981 (job 17), refit 1.2s, ETA 4m10s

(done: finished jobs that count against ``max-finished-jobs``; a cancelled or lost job does not).

is redrawn in place (carriage return, erase to end of line) only when stdout is a terminal,
with the daemon's log lines scrolling above it. Anywhere else (a log file, a pipe, ``nohup``)
it becomes a plain ``progress`` log line, written when a job finished or the best job changed,
with no control characters.
"""
from __future__ import annotations

import math
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from ..experiment.config import DEFAULT_IGNORED_FAILURES, DEFAULT_TASK_NAME, ExperimentConfig, load_config
from ..daemon.loop import counts_toward_budget
from ..errors import ConfigError
from ..experiment.failures import FailureGroup, group_failures
from ..experiment.layout import JOB_STATES, ExperimentPaths
from ..daemon.reporting import Reporter
from ..search.space import Space
from ..experiment.store import Store, is_feasible
from ..files import read_json
from ..daemon.summaries import SUMMARY_TIME_SHARE, TimeShare

CLEAR_TO_END = "\x1b[K"
HOME_AND_CLEAR = "\x1b[H\x1b[2J"
# Terminal control sequences (colours, cursor moves) and the other control characters that a
# job's output may hold; printed as they are, they would garble the status view.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")


def _number(value: Any) -> float | None:
    """value as a finite float, or None (for missing, non-numeric, NaN and infinite values)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def objective_value(job: Mapping[str, Any], objective: str) -> float | None:
    """The job's objective value (``value``, else ``values[objective]``) as a finite float."""
    value = _number(job.get("value"))
    if value is None:
        value = _number((job.get("values") or {}).get(objective))
    return value


def read_model_best(paths: ExperimentPaths, store: Store) -> dict[str, Any] | None:
    """best.json's ``model_best`` (a noisy objective's best by the model's posterior mean, see
    :mod:`spearmint_nn.experiment.layout`), or None when there is none (a noiseless objective, a daemon
    that has not fitted a model yet) or it is malformed.

    Returned as ``{"id", "params", "mean", "std", "value", "observations", "fitted"}``; the
    params come from the job file when best.json leaves them out, and ``std``, ``value``,
    ``observations`` and ``fitted`` are None where unknown.
    """
    summary = read_json(paths.best_json)
    entry = summary.get("model_best") if isinstance(summary, dict) else None
    if not isinstance(entry, dict):
        return None
    job_id, mean = entry.get("id"), _number(entry.get("mean"))
    if isinstance(job_id, bool) or not isinstance(job_id, int) or mean is None:
        return None
    job = store.get(job_id) or {}
    params = entry.get("params") if isinstance(entry.get("params"), dict) else job.get("params")
    std = _number(entry.get("std"))
    observations = entry.get("observations")
    if isinstance(observations, bool) or not isinstance(observations, int):
        observations = None
    return {"id": job_id, "params": params if isinstance(params, dict) else {}, "mean": mean,
            "std": std if std is not None and std >= 0 else None, "value": _number(entry.get("value")),
            "observations": observations, "fitted": _number(entry.get("fitted"))}


@dataclass
class Snapshot:
    """The state of one experiment at one instant (read only: a snapshot never writes).

    Attributes
    ----------
    experiment : the experiment folder.
    store : the job store the jobs come from.
    config : the validated config, or None when it does not validate (edited while the search
        ran, or a wrapper missing from a copied folder); ``config_error`` then says why, and
        the snapshot still shows the jobs, without a space, constraints or budget.
    taken_at : unix time of the snapshot.
    last_refit_s : seconds the last model refit took, when the caller knows it.
    """

    experiment: Path
    store: Store
    config: ExperimentConfig | None
    config_error: str | None = None
    taken_at: float = field(default_factory=time.time)
    last_refit_s: float | None = None

    @property
    def name(self) -> str:
        """``experiment-name`` from the config, else the folder name."""
        return self.config.name if self.config else self.experiment.name

    @property
    def space(self) -> Space | None:
        return self.config.space if self.config else None

    @property
    def objective(self) -> str:
        return self.config.objective if self.config else DEFAULT_TASK_NAME

    @property
    def constraints(self) -> tuple[str, ...]:
        return tuple(self.config.constraints) if self.config else ()

    @property
    def budget(self) -> int | None:
        """``max-finished-jobs`` (None: no budget)."""
        return self.config.max_finished_jobs if self.config else None

    @property
    def concurrency(self) -> int | None:
        return self.config.max_concurrent if self.config else None

    @cached_property
    def jobs(self) -> list[dict[str, Any]]:
        """Every job, ordered by id (fields as in :mod:`spearmint_nn.experiment.layout`)."""
        return self.store.jobs()

    def in_state(self, state: str) -> list[dict[str, Any]]:
        return [job for job in self.jobs if job["state"] == state]

    @cached_property
    def counts(self) -> dict[str, int]:
        """Number of jobs per state, every state present."""
        counts = dict.fromkeys(JOB_STATES, 0)
        for job in self.jobs:
            counts[job["state"]] += 1
        return counts

    @cached_property
    def finished(self) -> list[dict[str, Any]]:
        """Complete and failed jobs in order of completion (``finished`` time, then id)."""
        done = [job for job in self.jobs if job["state"] in ("complete", "failed")]
        return sorted(done, key=lambda job: (_number(job.get("finished")) or 0.0, job["id"]))

    @cached_property
    def budget_used(self) -> int:
        """Finished jobs that count against ``max-finished-jobs`` (not cancelled, lost, ...)."""
        ignored = self.config.ignored_failures if self.config else DEFAULT_IGNORED_FAILURES
        return sum(1 for job in self.finished if counts_toward_budget(job, ignored))

    def is_feasible(self, job: Mapping[str, Any]) -> bool:
        """A complete job with an objective value and every constraint value >= 0 (Spearmint's
        convention, as in :meth:`Store.best`)."""
        return objective_value(job, self.objective) is not None and is_feasible(job, self.constraints)

    @cached_property
    def best(self) -> dict[str, Any] | None:
        """The feasible complete job with the lowest objective value (ties: lowest id)."""
        feasible = [job for job in self.jobs if self.is_feasible(job)]
        if not feasible:
            return None
        return min(feasible, key=lambda job: (objective_value(job, self.objective), job["id"]))

    @cached_property
    def model_best(self) -> dict[str, Any] | None:
        """The best by the model's posterior mean, for a noisy objective (see :func:`read_model_best`)."""
        return read_model_best(ExperimentPaths(self.experiment), self.store)

    @cached_property
    def failure_groups(self) -> list[FailureGroup]:
        """Failed jobs grouped by how they failed, the largest group first."""
        return group_failures(self.jobs)

    def durations(self) -> list[float]:
        """Observed wall-clock durations (seconds) of finished jobs that report one."""
        return [d for d in (_number(job.get("duration")) for job in self.finished) if d is not None and d >= 0]

    def eta_seconds(self) -> float | None:
        """Seconds until the budget is spent, from the mean observed duration; None when unknown.

        Running jobs are assumed to need the mean duration minus their age; the jobs still to
        start share ``max-concurrent`` slots.
        """
        durations = self.durations()
        if self.budget is None or not durations:
            return None
        remaining = max(self.budget - self.budget_used, 0)
        if remaining == 0:
            return 0.0
        mean = sum(durations) / len(durations)
        running = self.in_state("running")[:remaining]
        slots = self.concurrency or max(len(running), 1)
        busy = sum(max(mean - (self.taken_at - (_number(job.get("submitted")) or self.taken_at)), 0.0)
                   for job in running)
        return (busy + (remaining - len(running)) * mean) / slots

    @property
    def search_is_over(self) -> bool:
        """The budget is spent and no job is pending or running."""
        return (self.budget is not None and self.budget_used >= self.budget
                and self.counts["pending"] == 0 and self.counts["running"] == 0)


def take_snapshot(experiment_dir: str | Path, last_refit_s: float | None = None) -> Snapshot:
    """Read the experiment's config and job files (nothing is written, no lock is taken)."""
    paths = ExperimentPaths(experiment_dir)
    store = Store(paths).load_all()
    try:
        config, error = load_config(paths.experiment, check_driver=False), None
    except ConfigError as exc:
        config, error = None, str(exc)
    return Snapshot(paths.experiment, store, config, config_error=error, last_refit_s=last_refit_s)


# ---- text ------------------------------------------------------------------------------------

def format_duration(seconds: float) -> str:
    """``"42s"``, ``"4m10s"``, ``"3h05m"``, ``"2d04h"``; seconds >= 0."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def printable_tail(text: str, max_lines: int) -> list[str]:
    """The last ``max_lines`` non-empty lines of a job's output, as a terminal showed them: a
    line redrawn with carriage returns (a progress bar) keeps its last drawing, and control
    sequences are dropped."""
    lines = [_ESCAPES.sub("", line.rstrip("\r").rsplit("\r", 1)[-1]).rstrip() for line in text.split("\n")]
    return [line for line in lines if line.strip()][-max_lines:] if max_lines > 0 else []


def progress_text(snap: Snapshot) -> str:
    """The one-line summary shown by the live line (printable characters only).

    Worded so that it never contains the daemon's event words (`` finished ``, `` failed ``)
    between spaces: scripts count those in ``daemon.log``.
    """
    counts = snap.counts
    used = snap.budget_used
    parts = [f"{used}/{snap.budget} done" if snap.budget else f"{used} done", f"{counts['running']} running"]
    if counts["pending"]:
        parts.append(f"{counts['pending']} pending")
    parts.append(f"{counts['failed']} failed")
    best = snap.best
    parts.append(f"best {objective_value(best, snap.objective):.6g} (job {best['id']})" if best else "best -")
    model_best = snap.model_best  # a noisy objective: the luckiest draw above, the model's pick here
    if model_best is not None:
        parts.append(f"model's best {model_best['mean']:.6g} (job {model_best['id']})")
    if snap.last_refit_s is not None:
        parts.append(f"refit {snap.last_refit_s:.1f}s")
    eta = snap.eta_seconds()
    if eta is not None and snap.budget and used < snap.budget:
        parts.append(f"ETA {format_duration(eta)}")
    return f"{snap.name}: " + ", ".join(parts)


def change_key(snap: Snapshot) -> tuple:
    """What must change for a new plain progress line: a job finished, or the best job changed
    (not every submission: a log file gets about one progress line per finished job)."""
    return snap.counts["complete"], snap.counts["failed"], snap.best["id"] if snap.best else None


# ---- the live line ---------------------------------------------------------------------------

class LiveLine:
    """One status line kept at the bottom of a terminal, with log lines scrolling above it.

    stream : the terminal (default stdout). Write every other line through :meth:`above`.
    """

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stdout
        self._text: str | None = None
        self._drawn = False
        self._lock = threading.Lock()  # log lines may come from several threads

    def _width(self) -> int:
        return max(shutil.get_terminal_size((100, 24)).columns - 1, 20)

    def _redraw(self) -> None:
        if self._text is not None:
            self.stream.write("\r" + self._text[: self._width()] + CLEAR_TO_END)
            self._drawn = True
        self.stream.flush()

    def show(self, text: str) -> None:
        """Replace the live line by text (cut to the terminal width, so it never wraps)."""
        with self._lock:
            self._text = text
            self._redraw()

    def above(self, line: str) -> None:
        """Write a log line above the live line, which is then redrawn."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r" + CLEAR_TO_END)
            self.stream.write(line + "\n")
            self._redraw()

    def close(self) -> None:
        """Leave the cursor on a fresh line below the last drawn line."""
        with self._lock:
            if self._drawn:
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class DaemonProgress:
    """The progress display of ``spearmint-nn run``, hooked into the daemon's :class:`Reporter`.

    Build it with the config, hand :meth:`attach` to the daemon (called with its reporter and
    its in-memory store once they exist), and :meth:`close` it when the daemon returns.

    On a terminal the reporter's console lines are routed through a :class:`LiveLine` on
    ``stream``; elsewhere each change is logged as a plain ``progress`` event (console and
    ``daemon.log``) when a job finished or the best changed. Snapshots are only built in the thread that attached (the daemon's main
    thread, the store's owner); events from other threads (the proposer's ``model`` event)
    only record the refit time, shown at the next event. ``time_share``: the largest share of
    the time spent on snapshots (:class:`~spearmint_nn.daemon.summaries.TimeShare`; 1.0: every event).
    """

    def __init__(self, config: ExperimentConfig, stream: TextIO | None = None, interactive: bool | None = None,
                 time_share: float = SUMMARY_TIME_SHARE):
        self._config = config
        self._stream = stream if stream is not None else sys.stdout
        self.interactive = _is_terminal(self._stream) if interactive is None else interactive
        self.live = LiveLine(self._stream) if self.interactive else None
        self._reporter: Reporter | None = None
        self._store: Store | None = None
        self._owner: int | None = None
        self._refit_s: float | None = None
        self._key: Any = None
        # A snapshot reads every job: with 10,000 of them, one per event would cost more than
        # the event itself. Limited to a share of the time, one update then covers several events.
        self._limit = TimeShare(time_share)

    def attach(self, reporter: Reporter, store: Store) -> None:
        self._reporter, self._store, self._owner = reporter, store, threading.get_ident()
        if self.live is not None:
            reporter.console = self.live.above
        reporter.add_listener(self._on_event)

    def _on_event(self, kind: str, message: str, fields: Mapping[str, Any]) -> None:
        if kind == "progress":
            return
        if fields.get("refit_seconds") is not None:
            self._refit_s = float(fields["refit_seconds"])
        if threading.get_ident() == self._owner and (kind == "stopped" or self._limit.seconds_until_due() == 0.0):
            self._limit.run(self.update)

    def update(self) -> None:
        """Show the current progress (live line, or a ``progress`` event when it changed)."""
        snap = Snapshot(self._config.experiment_dir, self._store, self._config, last_refit_s=self._refit_s)
        if self.live is not None:
            self.live.show(progress_text(snap))
            return
        key = change_key(snap)
        if key != self._key:
            self._key = key
            self._reporter.event("progress", progress_text(snap))

    def close(self) -> None:
        if self.live is not None:
            self.live.close()


# ---- status --watch --------------------------------------------------------------------------

def watch(experiment_dir: str | Path, render: Callable[[Snapshot], str], interval_s: float = 2.0,
          stream: TextIO | None = None, interactive: bool | None = None,
          sleep: Callable[[float], None] = time.sleep) -> None:
    """Show ``render(snapshot)`` every ``interval_s`` seconds until the search is over or Ctrl-C.

    On a terminal the screen is cleared and redrawn in place; elsewhere each view that differs
    from the previous one is written as plain lines.
    """
    stream = stream if stream is not None else sys.stdout
    interactive = _is_terminal(stream) if interactive is None else interactive
    previous: str | None = None
    try:
        while True:
            snap = take_snapshot(experiment_dir)
            text = render(snap).rstrip("\n")
            if interactive:
                stream.write(HOME_AND_CLEAR + text + "\n")
            elif text != previous:
                stream.write(text + "\n")
            stream.flush()
            previous = text
            if snap.search_is_over:
                return
            sleep(interval_s)
    except KeyboardInterrupt:
        return
