"""``curves``: the learning curves the jobs reported (``spearmint_nn.job.report``), value against
step, one line per job.

The curves are read from the report files themselves (``reports/<id>.txt``, one listing of the
folder and one read per reporting job), not from the job records, which keep only a summary and
may lag behind the files while no daemon runs. Finished jobs are thin lines (complete blue,
failed red and dotted, stopped early grey and dashed), running jobs thicker orange lines ending
in a dot, and the best job's curve green on top, so that a running job heading below it stands
out. A step repeated by a later attempt (a job resumed from an older checkpoint) is drawn where
it was reported: the line goes back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..experiment.curves import read_curve, report_names
from ..experiment.jobs import Job, JobState
from .plot_parts import BEST, FAILED, FEASIBLE, RASTERIZE_ABOVE, value_limits
from .status import Snapshot

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

RUNNING_COLOUR = "#ff7f0e"


@dataclass
class JobCurve:
    """One job's reports: ``steps`` and ``values``, arrays of the same length (at least 1)."""

    job: Job
    steps: np.ndarray
    values: np.ndarray


def job_curves(snap: Snapshot) -> list[JobCurve]:
    """Every job of the snapshot that has reports, by id."""
    paths = snap.store.paths
    out = []
    for job_id in sorted(report_names(paths.reports)):
        job = snap.store.get(job_id)
        reports = read_curve(paths.report_file(job_id)) if job is not None else []
        if reports:
            out.append(JobCurve(job, np.array([float(r.step) for r in reports]), np.array([r.value for r in reports])))
    return out


def draw_curves(snap: Snapshot, fig: "Figure | SubFigure") -> None:
    """Value against step for every job that reported (see the module docstring)."""
    from matplotlib.collections import LineCollection

    curves = job_curves(snap)
    ax = fig.subplots()
    many = len(curves) > RASTERIZE_ABOVE
    best_id = snap.best.id if snap.best is not None else None
    groups = {"complete": [], "failed": [], "stopped": [], "running": []}
    for curve in curves:
        kind = "running" if curve.job.state in (JobState.RUNNING, JobState.PENDING) else curve.job.state.value
        groups[kind].append(curve)
    styles = {"complete": dict(colors=FEASIBLE["color"], linewidths=0.8, alpha=0.45),
              "failed": dict(colors=FAILED["color"], linewidths=0.8, alpha=0.6, linestyles=":"),
              "stopped": dict(colors="0.45", linewidths=0.8, alpha=0.6, linestyles="--"),  # stopped early
              "running": dict(colors=RUNNING_COLOUR, linewidths=1.6, alpha=0.9)}
    for kind, members in groups.items():
        if not members:
            continue
        segments = [np.column_stack([c.steps, c.values]) for c in members]
        ax.add_collection(LineCollection(segments, rasterized=many, label=f"{kind} ({len(members)})", **styles[kind]))
        if kind == "running":
            ax.scatter([c.steps[-1] for c in members], [c.values[-1] for c in members], color=RUNNING_COLOUR, s=14,
                       zorder=4)
    for curve in curves:
        if curve.job.id == best_id:
            ax.plot(curve.steps, curve.values, color=BEST["color"], linewidth=2.2, zorder=5,
                    label=f"best job {best_id}")
    if curves:
        steps = np.concatenate([c.steps for c in curves])
        span = max(steps.max() - steps.min(), 1.0)
        ax.set_xlim(steps.min() - 0.02 * span, steps.max() + 0.02 * span)  # room for the running jobs' dots
        # a diverged curve must not squash the others (as in the convergence plot)
        limits = value_limits(np.concatenate([c.values for c in curves]), snap.sign)
        if limits is not None:
            ax.set_ylim(*limits)
        ax.legend(loc="best", fontsize="small", framealpha=0.85)
    else:
        ax.text(0.5, 0.5, "no job has reported yet", transform=ax.transAxes, ha="center", va="center", color="grey")
    ax.set_xlabel("step (as reported)")
    ax.set_ylabel(f"{snap.objective} ({snap.better} is better)")
    ax.grid(True, alpha=0.3)
    fig.suptitle(f"{snap.name}: learning curves, one line per job that reported", fontweight="bold")


def has_curves(snap: Snapshot) -> bool:
    """Whether any job of the snapshot has a report file (one listing of the folder)."""
    return bool(report_names(snap.store.paths.reports) & {job.id for job in snap.jobs})
