"""Where the jobs landed, every parameter at once: parallel coordinates and a scatter matrix.

* ``coordinates``: one line per finished job through one vertical axis per parameter element
  (its range from the config, log for ``"scale": "log"``, one mark per ENUM option) and a last
  axis for the objective (from the lowest value to the highest shown); feasible jobs coloured
  by the rank of their value (the best drawn on top),
  infeasible jobs dashed orange, failed jobs dotted red and ending before the objective's axis.
  An inactive conditional parameter breaks its job's line.
* ``landing``: a scatter matrix of the first MAX_MATRIX_PARAMETERS parameter elements (pairs
  below the diagonal, each parameter's histogram on it), coloured as above, so that a search
  stuck on a face or in a corner shows at a glance.

With many jobs the lines and points are rasterised inside an SVG (see RASTERIZE_ABOVE).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .plot_parts import (BEST, FAILED, INFEASIBLE, RASTERIZE_ABOVE, Outcomes, axis_unit, element,
                         format_parameter_axis, outcomes, parameter_columns, parameter_positions, rank_colorbar,
                         value_limits, value_ranks)
from .status import Snapshot

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

MAX_COORDINATE_AXES = 24  # parameter axes; the objective's comes on top
MAX_MATRIX_PARAMETERS = 8
VALUE_COLORMAP = "viridis"  # low (good) values dark, so the best lines stand out on white


@dataclass
class Coordinates:
    """Each finished job's place on the parallel axes.

    labels : (d + 1,) axis names, the objective's last; variables : (d,) the parameter axes'
    variables; positions : (n, d + 1) in [0, 1] from
    each axis's bottom (NaN: the job has no value there); value_range : the objective axis's
    (bottom, top) in the objective's units, None without values; out : the jobs' outcomes.
    """

    labels: list[str]
    variables: list[Any]
    positions: np.ndarray
    value_range: tuple[float, float] | None
    out: Outcomes


def unit_positions(var: Any, x: np.ndarray) -> np.ndarray:
    """Values of one parameter element (as from :func:`parameter_positions`, no jitter) mapped
    to [0, 1] along its range: linear, logarithmic for ``"scale": "log"``, evenly spaced options."""
    if var.type == "ENUM":
        return x / (len(var.options) - 1) if len(var.options) > 1 else np.where(np.isfinite(x), 0.5, np.nan)
    if var.scale == "log":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(x / var.min) / np.log(var.max / var.min)
    return (x - var.min) / (var.max - var.min) if var.max > var.min else np.where(np.isfinite(x), 0.5, np.nan)


def coordinates(snap: Snapshot) -> Coordinates:
    """The finished jobs on the parallel axes (at most MAX_COORDINATE_AXES parameter axes)."""
    out = outcomes(snap)
    columns = parameter_columns(snap)[:MAX_COORDINATE_AXES]
    positions = np.full((len(out.jobs), len(columns) + 1), np.nan)
    for k, (var, i, _) in enumerate(columns):
        raw = [element(job.params, var.name, i) for job in out.jobs]
        positions[:, k] = unit_positions(var, parameter_positions(var, raw))
    limits = value_limits(out.values[out.feasible | out.infeasible], snap.sign, pad=False)
    if limits is not None:
        # values above the axis (a diverged run) sit on its top, as in the other plots
        span = limits[1] - limits[0]
        positions[:, -1] = (np.clip((out.values - limits[0]) / span, 0.0, 1.0) if span > 0
                            else np.where(np.isfinite(out.values), 0.5, np.nan))
    return Coordinates(labels=[label for _, _, label in columns] + [snap.objective],
                       variables=[var for var, _, _ in columns], positions=positions, value_range=limits, out=out)


def _range_labels(var: Any) -> list[tuple[float, str]]:
    """(position in [0, 1], text) marks of one parameter axis: its ends, or every ENUM option."""
    if var.type == "ENUM":
        return [(float(p), str(o)) for p, o in zip(unit_positions(var, np.arange(len(var.options), dtype=float)),
                                                   var.options)]
    return [(0.0, f"{var.min:.3g}"), (1.0, f"{var.max:.3g}")]


def draw_coordinates(snap: Snapshot, fig: "Figure | SubFigure") -> None:
    """Parallel coordinates of every finished job, coloured by the objective."""
    from matplotlib.collections import LineCollection

    data = coordinates(snap)
    out, n_axes = data.out, len(data.labels)
    ax = fig.subplots()
    xs = np.arange(n_axes, dtype=float)
    many = len(out.jobs) > RASTERIZE_ABOVE
    width, alpha = (0.5, 0.35) if many else (1.0, 0.8)

    def lines(mask: np.ndarray, **style: Any) -> LineCollection:
        segments = [np.column_stack([xs, row]) for row in data.positions[mask]]
        collection = LineCollection(segments, linewidths=width, alpha=alpha, rasterized=many, **style)
        ax.add_collection(collection)
        return collection

    if out.failed.any():
        lines(out.failed, colors=FAILED["color"], linestyles=":", label=f"failed, no value ({int(out.failed.sum())})")
    if out.infeasible.any():
        lines(out.infeasible, colors=INFEASIBLE["color"], linestyles="--",
              label=f"constraint violated ({int(out.infeasible.sum())})")
    if out.feasible.any() and data.value_range is not None:
        # the worst first, so the best lie on top
        order = np.flatnonzero(out.feasible)[np.argsort(-snap.sign * out.values[out.feasible], kind="stable")]
        mask = np.zeros(len(out.jobs), bool)
        mask[order] = True
        segments = [np.column_stack([xs, data.positions[j]]) for j in order]
        feasible = LineCollection(segments, linewidths=width, alpha=alpha, rasterized=many, cmap=VALUE_COLORMAP)
        feasible.set_array(value_ranks(out.values[order], snap.sign))
        feasible.set_clim(0.0, 1.0)
        ax.add_collection(feasible)
        rank_colorbar(fig, feasible, out.values[order], f"{snap.objective} ({snap.better} is better)", snap.sign,
                      ax=ax, pad=0.01)
        best = order[-1]
        ax.plot(xs, data.positions[best], color=BEST["color"], linewidth=2.5, zorder=5,
                label=f"best job {out.jobs[best].id} ({out.values[best]:.6g})")
    ax.vlines(xs, 0, 1, color="grey", linewidth=0.8, zorder=0)
    marks = [_range_labels(var) for var in data.variables]
    if data.value_range is not None:
        lo, hi = data.value_range
        marks.append([(0.0, f"{lo:.3g}"), (1.0, f"{hi:.3g}")] if hi > lo else [(0.5, f"{lo:.3g}")])
    for x, axis_marks in zip(xs, marks):
        for y, text in axis_marks:
            ax.annotate(text, (x, y), xytext=(3, 0), textcoords="offset points", fontsize="x-small",
                        va="center", ha="left", color="dimgrey")
    units = [axis_unit(var) for var in data.variables] + [""]
    ax.set_xticks(xs, [label + unit for label, unit in zip(data.labels, units)],
                  rotation=30 if n_axes > 6 else 0, ha="right" if n_axes > 6 else "center", fontsize="small")
    ax.set_xlim(-0.2, n_axes - 0.6)
    ax.set_ylim(-0.04, 1.04)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    if not out.jobs:
        ax.text(0.5, 0.5, "no finished jobs yet", transform=ax.transAxes, ha="center", va="center", color="grey")
    elif ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(0, -0.22 if n_axes > 6 else -0.08), ncols=3,
                  fontsize="small", frameon=False)
    fig.suptitle(f"{snap.name}: every finished job across the parameters (parallel coordinates)", fontweight="bold")


def draw_landing(snap: Snapshot, fig: "Figure | SubFigure") -> None:
    """Scatter matrix of where the finished jobs landed: pairs of parameters below the
    diagonal, each parameter's histogram on it."""
    columns = parameter_columns(snap)
    shown = columns[:MAX_MATRIX_PARAMETERS]
    d = len(shown)
    out = outcomes(snap)
    jitter = np.random.default_rng(0).uniform(-0.18, 0.18, len(out.jobs))
    x = [parameter_positions(var, [element(job.params, var.name, i) for job in out.jobs], jitter)
         for var, i, _ in shown]
    ranks = np.full(len(out.jobs), np.nan)
    ranks[out.feasible] = value_ranks(out.values[out.feasible], snap.sign)
    many = len(out.jobs) > RASTERIZE_ABOVE
    size = 4 if many else 10
    best = np.flatnonzero([job is snap.best for job in out.jobs]) if snap.best is not None else []
    axes = fig.subplots(d, d, squeeze=False)
    colored = None
    for r in range(d):
        for c in range(d):
            ax = axes[r, c]
            if c > r:
                ax.set_visible(False)
                continue
            var_c, var_r = shown[c][0], shown[r][0]
            format_parameter_axis(ax, var_c, "x")
            if r == c:
                _histogram(ax, var_c, x[c][np.isfinite(x[c])])
            else:
                format_parameter_axis(ax, var_r, "y")
                both = np.isfinite(x[c]) & np.isfinite(x[r])
                m = out.feasible & both
                if m.any():
                    colored = ax.scatter(x[c][m], x[r][m], c=ranks[m], cmap=VALUE_COLORMAP, vmin=0.0, vmax=1.0,
                                         s=size, linewidths=0, rasterized=many)
                for mask, style in ((out.infeasible & both, INFEASIBLE), (out.failed & both, FAILED)):
                    if mask.any():
                        ax.scatter(x[c][mask], x[r][mask], s=size + 4, linewidths=0.8, rasterized=many, **style)
                for j in best:
                    ax.scatter([x[c][j]], [x[r][j]], s=90, edgecolor="black", linewidth=0.6, zorder=5, **BEST)
            ax.tick_params(labelsize="x-small", labelbottom=r == d - 1, labelleft=c == 0 and r > 0)
            if r == d - 1:
                ax.set_xlabel(shown[c][2] + axis_unit(var_c), fontsize="small")
            if c == 0 and r > 0:
                ax.set_ylabel(shown[r][2] + axis_unit(var_r), fontsize="small")
    if colored is not None:
        rank_colorbar(fig, colored, out.values[out.feasible], f"{snap.objective} ({snap.better} is better)", snap.sign,
                      ax=axes, shrink=0.6)
    note = f" (first {d} of {len(columns)} parameters)" if len(columns) > d else ""
    fig.suptitle(f"{snap.name}: where the jobs landed{note}\nstar = best job, orange x = constraint violated, "
                 f"red = failed", fontweight="bold")


def _histogram(ax: Any, var: Any, values: np.ndarray) -> None:
    """Histogram of one parameter's values on the diagonal, on the parameter's own axis."""
    if var.type == "ENUM":
        bins = np.arange(len(var.options) + 1) - 0.5
        values = np.rint(values)  # without the jitter
    elif var.scale == "log":
        bins = np.geomspace(var.min, var.max, 21)
    else:
        bins = np.linspace(var.min, var.max, 21)
    ax.hist(values, bins=bins, color="grey", alpha=0.7)
    ax.set_yticks([])
