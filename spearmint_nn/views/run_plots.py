"""How the jobs ran, as the user of a cluster sees it:

* ``failures``: the failed jobs grouped by kind, reason and place (the groups of
  ``report --failures``), one bar per group with its count, labelled with the reason and the
  last line of a job's output;
* ``phases``: each finished job's time in the queue (submitted until its process started),
  starting up (process start until the runner began the job: interpreter, imports, container)
  and running (the wrapper), stacked in completion order, and the spread of each phase.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .plot_parts import FAILED, outcomes
from .status import Snapshot

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

MAX_FAILURE_BARS = 8
REASON_CHARS = 70
PHASE_COLOURS = {"queue": "#bbbbbb", "start-up": "#ff7f0e", "run": "#1f77b4"}


def _shorten(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "\u2026"


def draw_failures(snap: Snapshot, fig: "Figure | SubFigure") -> None:
    """One bar per failure group (the largest MAX_FAILURE_BARS), count and reason."""
    groups = snap.failure_groups[:MAX_FAILURE_BARS]
    ax = fig.subplots()
    y = np.arange(len(groups))[::-1]
    ax.barh(y, [g.count for g in groups], color=FAILED["color"], alpha=0.35)  # light: the reasons are written on it
    labels = []
    for g in groups:
        place = f" at {_shorten(g.location, 40)}" if g.location else ""
        labels.append(f"{g.kind}: {_shorten(g.reason, REASON_CHARS)}{place}")
    ax.set_yticks(y, [f"{g.count} \u00d7" for g in groups], fontsize="small")
    for row, label, g in zip(y, labels, groups):
        tail = g.output_tail.strip().splitlines()[-1] if g.output_tail.strip() else ""
        text = label + (f"\n  output: {_shorten(tail, REASON_CHARS)}" if tail else "")
        ax.annotate(text, (0, row), xytext=(4, 0), textcoords="offset points", va="center", fontsize="x-small",
                    family="monospace")
    ax.set_xlim(0, max(g.count for g in groups) * 1.05)
    ax.set_xlabel("failed jobs")
    ax.grid(True, axis="x", alpha=0.3)
    more = len(snap.failure_groups) - len(groups)
    note = f" (the largest {len(groups)} of {len(snap.failure_groups)} groups)" if more > 0 else ""
    fig.suptitle(f"{snap.name}: failures by kind, reason and place{note}; report --failures shows each "
                 "group's whole output", fontweight="bold")


@dataclass
class Phases:
    """Seconds each finished job spent in each phase, in completion order, shape (n,) each (NaN
    where the job file lacks a time)."""

    order: np.ndarray
    queue: np.ndarray
    startup: np.ndarray
    run: np.ndarray


def job_phases(snap: Snapshot) -> Phases:
    """The phases of every finished job; without ``process_started`` (off Linux) the start-up
    counts as queue."""
    out = outcomes(snap)

    def times(key: str) -> np.ndarray:
        return np.array([_number(job.fields.get(key)) for job in out.jobs], dtype=float).reshape(-1)

    submitted, process, started, ended = (times(k) for k in ("submitted", "process_started", "started", "ended"))
    process = np.where(np.isfinite(process), process, started)
    # A local job's process starts before the daemon has written that it submitted it: no queue.
    return Phases(order=out.order, queue=np.maximum(process - submitted, 0.0), startup=started - process,
                  run=ended - started)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def draw_phases(snap: Snapshot, fig: "Figure | SubFigure") -> None:
    """Queue, start-up and run time of each job stacked in completion order; beside it, the
    spread of each phase on a log scale."""
    phases = job_phases(snap)
    stacked, spread = fig.subplots(1, 2, width_ratios=[3, 1])
    parts = {"queue": phases.queue, "start-up": phases.startup, "run": phases.run}
    known = np.all([np.isfinite(v) for v in parts.values()], axis=0)
    stacked.stackplot(phases.order[known], *[np.maximum(v[known], 0) for v in parts.values()],
                      labels=[f"{k} (median {np.nanmedian(v):.3g} s)" for k, v in parts.items()],
                      colors=list(PHASE_COLOURS.values()), step="mid", alpha=0.9)
    stacked.set_xlabel("finished jobs, in order of completion")
    stacked.set_ylabel("seconds")
    stacked.legend(loc="upper left", fontsize="small", framealpha=0.85)
    stacked.grid(True, alpha=0.3)
    positive = [v[np.isfinite(v) & (v > 0)] for v in parts.values()]
    spread.boxplot(positive, tick_labels=list(parts), showfliers=False)
    spread.set_yscale("log")
    spread.set_ylabel("seconds (log)")
    spread.tick_params(labelsize="small")
    spread.grid(True, alpha=0.3, which="both")
    fig.suptitle(f"{snap.name}: each job's time in the queue, starting up and running", fontweight="bold")


def has_phases(snap: Snapshot) -> bool:
    """Whether any finished job records the times :func:`draw_phases` needs."""
    phases = job_phases(snap)
    return bool((np.isfinite(phases.queue) & np.isfinite(phases.run)).any())
