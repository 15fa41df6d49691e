"""Plots of a search, drawn off-screen with matplotlib (the ``plot`` extra), imported lazily.

Each *section* is drawn by one function into a matplotlib (sub)figure, so ``report --plot``
stacks the sections into one image and the HTML report embeds them one by one:

* ``convergence``: every finished job's objective value in order of completion with the
  best-so-far line; infeasible jobs (a constraint < 0) and failed jobs (no value) are marked
  apart, as in figure 5(b) of the DNGO paper; for a noisy objective the model's best (best.json's
  ``model_best``: the evaluated point with the lowest posterior mean) is drawn at its job with
  its predicted mean +- std, beside the best observed value, which is then the luckiest draw;
* ``curves``: the learning curves the jobs reported (``spearmint_nn.job.report``), value
  against step, one line per job, running ones apart (:mod:`.curve_plots`);
* ``parameters``: the objective against each parameter, one small panel per element (log axis
  for ``"scale": "log"``, one category per option for ENUM; failed jobs as ticks on the axis);
* ``coordinates`` and ``landing``: every job across all parameters at once, in parallel
  coordinates and a scatter matrix (:mod:`.job_plots`);
* ``importance``, ``slices`` and ``contour``: what the fitted model says, where the daemon saved
  it (:mod:`.model_plots`);
* ``failures`` and ``phases``: failures grouped by reason, and each job's queue, start-up and
  run time (:mod:`.run_plots`);
* ``warpings``: the learned input warpings (of the columns the model warps: the FLOAT and INT
  values, never ENUM options or relevance indicators), where the model saved them in
  ``model/objective/warpings.json`` (the format of
  :func:`spearmint_nn.models.warping.warping_summary`, as returned by ``GP.warpings()``, the
  sampled Beta CDFs, and ``DNGO.warpings()``, the trained Kumaraswamy CDF);
* ``durations``: predicted against actual job duration, where the jobs carry
  ``predicted_duration`` (seconds; recorded when EI per second chose them).

Objective values far above the rest (a diverged training run) would squash every other point
into a line; the value axis stops above the 90th percentile in that case and the points beyond
it are drawn as triangles on the upper edge.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..errors import ConfigError
from ..experiment.layout import ExperimentPaths
from . import curve_plots, job_plots, model_plots, run_plots
from .plot_parts import (BEST, FAILED, FEASIBLE, INFEASIBLE, MODEL_BEST, RASTERIZE_ABOVE, Outcomes, SearchMarks,
                         axis_unit, best_so_far, duration_pairs, element, elapsed, encoded_column_labels,
                         format_parameter_axis, outcomes, parameter_columns, parameter_positions, read_warpings,
                         search_marks, value_limits, warped_columns)
from .status import Snapshot

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

PLOT_EXTRA_HINT = "pip install 'spearmint-nn[plot]'"
FORMATS = ("png", "svg")
MAX_PARAMETER_PANELS = 24  # a vector variable of size 100 would make unreadable stamps
MAX_WARPING_PANELS = 12
FIGURE_WIDTH_IN = 10.0
PNG_DPI = 110


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> None:
    """Import matplotlib or raise :class:`PlotsUnavailable` saying how to install it."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        raise PlotsUnavailable(f"plots need matplotlib, which is not installed ({exc}); "
                               f"install it with: {PLOT_EXTRA_HINT}") from None


# ---- drawing ------------------------------------------------------------------------------

def _objective_label(snap: Snapshot) -> str:
    return f"{snap.objective} ({snap.better} is better)"


def _mark_above(ax, x: np.ndarray, values: np.ndarray, limits: tuple[float, float] | None, style: dict,
                sign: float = 1.0) -> np.ndarray:
    """Draw values beyond the axis's bad end (:func:`value_limits`) as triangles on that edge
    (the upper one when minimising, the lower when maximising); return the mask of those."""
    if not limits:
        return np.zeros(values.shape, bool)
    above = np.isfinite(values) & (values > limits[1] if sign > 0 else values < limits[0])
    if above.any():
        ax.scatter(x[above], np.full(above.sum(), 0.985 if sign > 0 else 0.04), transform=ax.get_xaxis_transform(),
                   marker="^" if sign > 0 else "v", s=22, color=style["color"], clip_on=False, zorder=3)
    return above


def draw_convergence(snap: Snapshot, fig: "Figure | SubFigure", optimum: float | None = None) -> None:
    """Objective of every finished job in completion order, best so far, failures and infeasible
    jobs; below, the best so far (or its regret over ``optimum``) on a log scale against jobs and
    against time. Restarts and switches of model are marked where they happened."""
    panels = fig.subplot_mosaic([["jobs", "jobs"], ["best", "time"]], height_ratios=[1.7, 1])
    ax = panels["jobs"]
    out = outcomes(snap)
    limits = value_limits(out.values[out.feasible | out.infeasible], snap.sign)
    size = 28 if len(out.jobs) <= 200 else 10
    many = len(out.jobs) > RASTERIZE_ABOVE
    for mask, style, label in ((out.feasible, FEASIBLE, "feasible job"),
                               (out.infeasible, INFEASIBLE, "constraint violated")):
        if mask.any():
            above = _mark_above(ax, out.order[mask], out.values[mask], limits, style, snap.sign)
            ax.scatter(out.order[mask][~above], out.values[mask][~above], s=size, alpha=0.75, rasterized=many,
                       label=f"{label} ({int(mask.sum())})", zorder=2, **style)
    if out.failed.any():
        ax.scatter(out.order[out.failed], np.full(out.failed.sum(), 0.015), transform=ax.get_xaxis_transform(),
                   s=size + 6, clip_on=False, label=f"failed, no value ({int(out.failed.sum())})", zorder=3, **FAILED)
    running_best = best_so_far(out.values, out.feasible, snap.sign)
    by_model = snap.model_best
    if np.isfinite(running_best).any():
        label = "best observed so far (luckiest draw)" if by_model else "best so far"
        ax.step(out.order, running_best, where="post", color="black", linewidth=1.5,
                label=f"{label} ({snap.sign * np.nanmin(snap.sign * running_best):.6g})", zorder=4)
    if by_model is not None:
        _draw_model_best(ax, out, by_model)
    if limits:
        ax.set_ylim(*limits)
    if not out.jobs:
        ax.text(0.5, 0.5, "no finished jobs yet", transform=ax.transAxes, ha="center", va="center", color="grey")
        ax.set_xlim(0, max(snap.budget or 10, 1))
    else:
        ax.set_xlim(0, len(out.jobs) + 1)
    if snap.budget:
        ax.set_xlim(right=max(ax.get_xlim()[1], snap.budget + 1))
    ax.set_xlabel("finished jobs, in order of completion")
    ax.set_ylabel(_objective_label(snap))
    ax.grid(True, alpha=0.3)
    marks = search_marks(out)
    _draw_search_marks(ax, marks, out.order)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize="small", framealpha=0.85)
    _draw_best_curves(panels["best"], panels["time"], snap, out, running_best, marks, optimum)
    fig.suptitle(f"{snap.name}: convergence", fontweight="bold")


def _draw_search_marks(ax, marks: SearchMarks, x: np.ndarray) -> None:
    """Vertical lines at restarts and model switches; ``x`` maps completion rank r to x[r - 1]."""
    for k, rank in enumerate(marks.restarts):
        ax.axvline(x[rank - 1] if rank <= len(x) else rank, color="grey", linestyle="--", linewidth=1,
                   label="restart (a fresh objective model)" if k == 0 else None)
    for rank, text in marks.switches:
        ax.axvline(x[rank - 1], color=MODEL_BEST["color"], linestyle="-.", linewidth=1)
        ax.annotate(text, (x[rank - 1], 1), xycoords=("data", "axes fraction"), xytext=(3, -10),
                    textcoords="offset points", fontsize="small", color=MODEL_BEST["color"])


def _draw_best_curves(by_jobs, by_time, snap: Snapshot, out: Outcomes, running_best: np.ndarray,
                      marks: SearchMarks, optimum: float | None) -> None:
    """The best so far against finished jobs and against time since the first job, log scale
    where the values allow it: the regret over ``optimum`` when given, else the best value
    itself when every value is positive."""
    known = np.isfinite(running_best)
    if optimum is not None:
        curve = snap.sign * (running_best - optimum)
        label = (f"regret: best {snap.objective} − {optimum:.6g}" if snap.sign > 0
                 else f"regret: {optimum:.6g} − best {snap.objective}")
        positive = curve[known & (curve > 0)]
        # a best at or beyond the given optimum (noise, or a rounded optimum) sits on the floor
        curve = np.maximum(curve, positive.min() / 10 if positive.size else 1e-12)
    else:
        curve, label = running_best, f"best {snap.objective} so far"
    log = bool(known.any()) and bool((curve[known] > 0).all())
    times, unit = elapsed(out)
    for ax, x, xlabel in ((by_jobs, out.order, "finished jobs"), (by_time, times, f"{unit} since the first job")):
        if known.any():
            ax.step(x[known], curve[known], where="post", color="black", linewidth=1.5)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel, fontsize="small")
        ax.tick_params(labelsize="small")
        ax.grid(True, alpha=0.3, which="both")
        _draw_search_marks(ax, marks, x)
    by_jobs.set_ylabel(label + (" (log)" if log else ""), fontsize="small")


def _draw_model_best(ax, out: Outcomes, by_model: dict[str, Any]) -> None:
    """The model's best at its job's place in completion order (the last place when the job is
    not among the finished ones): its posterior mean with a +-1 std bar, and a dotted level line
    to set against the best observed values."""
    position = next((rank for rank, job in zip(out.order, out.jobs) if job.id == by_model["id"]), len(out.jobs))
    mean, std = by_model["mean"], by_model["std"]
    spread = f" \u00b1 {std:.3g}" if std is not None else ""
    ax.axhline(mean, linestyle=":", linewidth=1, color=MODEL_BEST["color"], zorder=1)
    ax.errorbar([position], [mean], yerr=None if std is None else [[std], [std]], fmt=MODEL_BEST["marker"],
                color=MODEL_BEST["color"], markersize=8, capsize=4, markeredgecolor="black", zorder=5,
                label=f"best by the model's posterior mean: job {by_model['id']}, {mean:.6g}{spread}")


def draw_parameters(snap: Snapshot, fig: "Figure | SubFigure") -> None:
    """The objective against each parameter element (at most MAX_PARAMETER_PANELS panels)."""
    columns = parameter_columns(snap)
    shown = columns[:MAX_PARAMETER_PANELS]
    ncols = min(4, max(len(shown), 1))
    axes = np.atleast_1d(fig.subplots(math.ceil(len(shown) / ncols), ncols, squeeze=False, sharey=True)).ravel()
    out = outcomes(snap)
    limits = value_limits(out.values[out.feasible | out.infeasible], snap.sign)
    best, by_model = snap.best, snap.model_best
    jitter = np.random.default_rng(0).uniform(-0.18, 0.18, len(out.jobs))
    many = len(out.jobs) > RASTERIZE_ABOVE
    for k, (ax, (var, i, label)) in enumerate(zip(axes, shown)):
        raw = [element(job.params, var.name, i) for job in out.jobs]
        x = parameter_positions(var, raw, jitter)
        present = np.isfinite(x)
        format_parameter_axis(ax, var)
        for mask, style in ((out.feasible, FEASIBLE), (out.infeasible, INFEASIBLE)):
            m = mask & present
            above = _mark_above(ax, x[m], out.values[m], limits, style, snap.sign)
            ax.scatter(x[m][~above], out.values[m][~above], s=12, alpha=0.7, rasterized=many, **style)
        m = out.failed & present
        if m.any():
            ax.scatter(x[m], np.full(m.sum(), 0.02), transform=ax.get_xaxis_transform(), marker="|", s=60,
                       color=FAILED["color"], clip_on=False)
        marks = [(best.params, best.objective_value(snap.objective), BEST, 140)] if best is not None else []
        if by_model is not None:
            marks.append((by_model["params"], by_model["mean"], MODEL_BEST, 60))
        for params, y, style, size in marks:
            bx = element(params, var.name, i)
            if bx is not None and (var.type != "ENUM" or bx in var.options):
                bx = var.options.index(bx) if var.type == "ENUM" else bx
                ax.scatter([bx], [y], s=size, edgecolor="black", linewidth=0.6, zorder=5, **style)
        ax.set_xlabel(label + axis_unit(var), fontsize="small")
        ax.tick_params(labelsize="small")
        ax.grid(True, alpha=0.3)
        if k % ncols == 0:
            ax.set_ylabel(snap.objective, fontsize="small")
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    if limits:
        axes[0].set_ylim(*limits)
    note = ""
    if len(columns) > len(shown):
        note = f" (first {len(shown)} of {len(columns)} parameters)"
    # the longer legend of a noisy objective goes on a line of its own, to fit the figure's width
    marks = (";\nstar = best observed job, diamond = best by the model's posterior mean" if by_model is not None
             else "; star = best job")
    fig.suptitle(f"{snap.name}: {snap.objective} against each parameter{note}{marks}, red ticks = failed jobs",
                 fontweight="bold")


def draw_warpings(snap: Snapshot, fig: "Figure | SubFigure", summary: dict[str, Any]) -> None:
    """Mean learned warping (band: +-1 sd over hyperparameter samples) of each warped input,
    titled with the name of its encoded column."""
    grid = np.asarray(summary["grid"], dtype=float)
    labels = encoded_column_labels(snap.space) if snap.space is not None else []
    columns = warped_columns(summary)
    named = all(0 <= col < len(labels) for col in columns)
    entries = summary["inputs"][:MAX_WARPING_PANELS]
    ncols = min(4, len(entries))
    axes = fig.subplots(math.ceil(len(entries) / ncols), ncols, squeeze=False, sharex=True, sharey=True).ravel()
    for d, (ax, entry) in enumerate(zip(axes, entries)):
        mean = np.asarray(entry["mean"], dtype=float)
        std = np.asarray(entry.get("std", np.zeros_like(mean)), dtype=float)
        ax.plot(grid, grid, linestyle="--", color="grey", linewidth=0.8)
        ax.fill_between(grid, np.clip(mean - std, 0, 1), np.clip(mean + std, 0, 1), alpha=0.25, color=FEASIBLE["color"])
        ax.plot(grid, mean, color=FEASIBLE["color"])
        ax.set_title(labels[columns[d]] if named else f"input {columns[d]}", fontsize="small")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.tick_params(labelsize="small")
        if d % ncols == 0:
            ax.set_ylabel("warped input", fontsize="small")
        if d >= len(entries) - ncols:
            ax.set_xlabel("input in the unit cube", fontsize="small")
    for ax in axes[len(entries):]:
        ax.set_visible(False)
    # GP summaries say in what share of the samples warping is on at all (the rest count as the
    # identity in mean and band); DNGO's trained warp has no such share.
    share = summary.get("share_warped")
    warped = "" if share is None else f", warped in {100 * float(share):.0f}% of samples"
    fig.suptitle(f"{snap.name}: learned input warpings (dashed: none{warped})", fontweight="bold")


def draw_durations(snap: Snapshot, fig: "Figure | SubFigure") -> None:
    """Predicted against actual duration of each job, log-log, with the diagonal."""
    pred, actual, failed = duration_pairs(snap)
    ax = fig.subplots()
    ax.scatter(pred[~failed], actual[~failed], s=18, alpha=0.75, label="complete", **FEASIBLE)
    if failed.any():
        ax.scatter(pred[failed], actual[failed], s=22, alpha=0.75, label="failed", **FAILED)
    lo, hi = min(pred.min(), actual.min()) / 1.5, max(pred.max(), actual.max()) * 1.5
    ax.plot([lo, hi], [lo, hi], linestyle="--", color="grey", linewidth=0.8, label="prediction = actual")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("predicted duration (seconds)")
    ax.set_ylabel("actual duration (seconds)")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(loc="upper left", fontsize="small")
    fig.suptitle(f"{snap.name}: predicted vs actual job duration", fontweight="bold")


@dataclass
class Section:
    """One plot of the report: a key for file names, a title and its height in inches."""

    key: str
    title: str
    height_in: float
    draw: Callable[["Figure | SubFigure"], None]


def sections(snap: Snapshot, optimum: float | None = None) -> list[Section]:
    """The sections that have something to show for this experiment, in report order;
    ``optimum``, the objective's known minimum, turns the best-so-far curves into regret."""
    out = [Section("convergence", "Convergence", 6.4, lambda fig: draw_convergence(snap, fig, optimum))]
    if curve_plots.has_curves(snap):
        out.append(Section("curves", "Learning curves", 4.6, lambda fig: curve_plots.draw_curves(snap, fig)))
    n_params = min(len(parameter_columns(snap)), MAX_PARAMETER_PANELS)
    if n_params and snap.finished:
        rows = math.ceil(n_params / min(4, n_params))
        out.append(Section("parameters", "Objective against each parameter", 0.7 + 2.3 * rows,
                           lambda fig: draw_parameters(snap, fig)))
        out.append(Section("coordinates", "Parallel coordinates", 4.6, lambda fig: job_plots.draw_coordinates(snap, fig)))
    n_matrix = min(len(parameter_columns(snap)), job_plots.MAX_MATRIX_PARAMETERS)
    if n_matrix >= 2 and snap.finished:
        out.append(Section("landing", "Where the jobs landed", 1.0 + 1.15 * n_matrix,
                           lambda fig: job_plots.draw_landing(snap, fig)))
    picture = model_plots.read_picture(ExperimentPaths(snap.experiment)) if snap.finished else None
    if picture is not None:
        out.append(Section("importance", "Parameter importance", 1.0 + 0.3 * len(picture["importance"]),
                           lambda fig: model_plots.draw_importance(snap, fig, picture)))
        n_slices = min(len(picture["slices"]), model_plots.MAX_SLICE_PANELS)
        if n_slices:
            out.append(Section("slices", "The model through the best point", 0.8 + 2.3 * math.ceil(n_slices / 4),
                               lambda fig: model_plots.draw_slices(snap, fig, picture)))
        if "contour" in picture:
            out.append(Section("contour", "The model's mean over two parameters", 5.0,
                               lambda fig: model_plots.draw_contour(snap, fig, picture)))
    if snap.failure_groups:
        out.append(Section("failures", "Failures by reason", 1.0 + 0.45 * min(len(snap.failure_groups),
                                                                             run_plots.MAX_FAILURE_BARS),
                           lambda fig: run_plots.draw_failures(snap, fig)))
    if snap.finished and run_plots.has_phases(snap):
        out.append(Section("phases", "Queue, start-up and run time", 3.8, lambda fig: run_plots.draw_phases(snap, fig)))
    warpings = read_warpings(ExperimentPaths(snap.experiment))
    if warpings is not None:
        rows = math.ceil(min(len(warpings["inputs"]), MAX_WARPING_PANELS) / 4)
        out.append(Section("warpings", "Learned input warpings", 0.7 + 2.2 * rows,
                           lambda fig: draw_warpings(snap, fig, warpings)))
    if duration_pairs(snap)[0].size:
        out.append(Section("durations", "Predicted vs actual duration", 4.2, lambda fig: draw_durations(snap, fig)))
    return out


def section_figure(section: Section) -> "Figure":
    """One section alone in its own figure."""
    require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(FIGURE_WIDTH_IN, section.height_in), layout="constrained")
    section.draw(fig)
    return fig


def overview_figure(snap: Snapshot, optimum: float | None = None) -> "Figure":
    """Every section stacked in one figure, under a title with the experiment's name."""
    require_matplotlib()
    from matplotlib.figure import Figure

    parts = sections(snap, optimum)
    fig = Figure(figsize=(FIGURE_WIDTH_IN, sum(s.height_in for s in parts) + 0.4), layout="constrained")
    subfigs = fig.subfigures(len(parts), 1, height_ratios=[s.height_in for s in parts], squeeze=False).ravel()
    for section, sub in zip(parts, subfigs):
        section.draw(sub)
    fig.suptitle(f"{snap.name}: {summary_line(snap)}", fontsize="large")
    return fig


def summary_line(snap: Snapshot) -> str:
    counts = snap.counts
    best = snap.best
    text = (f"{counts['complete']} complete, {counts['failed']} failed, {counts['running']} running, "
            f"{counts['pending']} pending")
    by_model = snap.model_best
    # a noisy objective's two bests each on a line of their own: one line would not fit the figure
    sep = ";\n" if by_model else "; "
    if best is not None:
        label = "best observed (luckiest draw)" if by_model else "best"
        text += f"{sep}{label} {snap.objective} = {best.objective_value(snap.objective):.6g} (job {best.id})"
    if by_model is not None:
        spread = f" \u00b1 {by_model['std']:.3g}" if by_model["std"] is not None else ""
        text += f"{sep}best by the model's posterior mean {by_model['mean']:.6g}{spread} (job {by_model['id']})"
    return text


def figure_bytes(fig: "Figure", fmt: str) -> bytes:
    """The figure encoded as PNG or SVG."""
    if fmt not in FORMATS:
        raise ValueError(f"plot format must be one of {FORMATS} (got {fmt!r})")
    buffer = io.BytesIO()
    # No date or software metadata: the same data gives the same file.
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    fig.savefig(buffer, format=fmt, dpi=PNG_DPI, metadata=metadata)
    return buffer.getvalue()


def plot_path(snap: Snapshot, path: str | Path | None, svg: bool) -> tuple[Path, str]:
    """Where ``report --plot [PATH] [--svg]`` writes and in which format.

    No PATH: ``<state folder>/report.png`` (``.svg`` with ``--svg``). A PATH ending in ``.svg``
    is SVG; without a suffix one is added; ``--svg`` with a ``.png`` PATH is a ConfigError.
    """
    fmt = "svg" if svg else "png"
    if path is None:
        return ExperimentPaths(snap.experiment).state / f"report.{fmt}", fmt
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        return path, "svg"
    if suffix == ".png":
        if svg:
            raise ConfigError("--plot", f"--svg asks for SVG but the file name {path.name!r} ends in .png")
        return path, "png"
    return path.with_name(path.name + f".{fmt}"), fmt


def save_plot(snap: Snapshot, path: str | Path | None = None, svg: bool = False,
              optimum: float | None = None) -> Path:
    """Write the overview figure; return the path written. Raises PlotsUnavailable without matplotlib."""
    target, fmt = plot_path(snap, path, svg)
    data = figure_bytes(overview_figure(snap, optimum), fmt)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target
