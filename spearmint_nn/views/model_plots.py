"""The model's own picture of the search, from ``model/objective/picture.json`` (written by the
daemon from :meth:`~spearmint_nn.search.optimizer.Optimizer.model_picture`; see
:mod:`spearmint_nn.search.reports` for what each number means):

* ``importance``: each parameter's main-effect share of the surrogate's variance, a bar per
  parameter with its spread (+-1 sd) over the model's hyperparameter samples;
* ``slices``: the posterior mean and +-1 std band along each parameter through the best point,
  with the jobs that lie near that slice (within NEAR of the best point in every other
  parameter, as a share of each range);
* ``contour``: the posterior mean over the two most important numeric parameters, the other
  parameters at the best point, with every finished job on it.
"""
from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..experiment.layout import ExperimentPaths
from .plot_parts import (BEST, FEASIBLE, axis_unit, element, format_parameter_axis, outcomes, parameter_columns,
                         parameter_positions)
from .status import Snapshot

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

MAX_SLICE_PANELS = 16
NEAR = 0.2  # a job is near a slice when within this share of every other parameter's range


def read_picture(paths: ExperimentPaths) -> dict[str, Any] | None:
    """The saved picture, or None when absent or not one this report can draw."""
    try:
        picture = json.loads(paths.model_picture.read_text())
        for item in picture["importance"]:
            float(item["mean"]), float(item["std"]), str(item["name"])
        for cut in picture["slices"]:
            if not len(cut["x"]) == len(cut["mean"]) == len(cut["low"]) == len(cut["high"]):
                return None
        contour = picture.get("contour")
        if contour is not None and np.asarray(contour["mean"], dtype=float).shape != (len(contour["y"]),
                                                                                         len(contour["x"])):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return picture if picture["importance"] else None


def _title(snap: Snapshot, picture: dict[str, Any], what: str, details: str = "") -> str:
    """The section's title; the details on a line of their own, to fit the figure's width."""
    line = f"{snap.name}: {what} ({picture.get('model', 'model')}, {picture.get('observations', '?')} observations)"
    return line + (f"\n{details}" if details else "")


def draw_importance(snap: Snapshot, fig: "Figure | SubFigure", picture: dict[str, Any]) -> None:
    """One horizontal bar per parameter element: mean share with a +-1 sd error bar."""
    items = picture["importance"]
    ax = fig.subplots()
    y = np.arange(len(items))[::-1]
    ax.barh(y, [i["mean"] for i in items], xerr=[i["std"] for i in items], color=FEASIBLE["color"],
            alpha=0.8, capsize=3)
    ax.set_yticks(y, [i["name"] for i in items], fontsize="small")
    ax.set_xlim(left=0)
    ax.set_xlabel("main-effect share of the model's variance (+-1 sd over hyperparameter samples)")
    ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(_title(snap, picture, "parameter importance"), fontweight="bold")


def _near_best(snap: Snapshot, jobs: list[Any], best_params: dict[str, Any]) -> np.ndarray:
    """(n, C) booleans: job j lies within NEAR of the best point in every parameter column but c."""
    columns = parameter_columns(snap)
    spread = np.zeros((len(jobs), len(columns)))
    for c, (var, i, _) in enumerate(columns):
        x = parameter_positions(var, [element(job.params, var.name, i) for job in jobs])
        b = parameter_positions(var, [element(best_params, var.name, i)])[0]
        if var.type == "ENUM":
            spread[:, c] = np.where(x == b, 0.0, 1.0)
        elif var.scale == "log":
            spread[:, c] = np.abs(np.log(x / b)) / math.log(var.max / var.min)
        else:
            spread[:, c] = np.abs(x - b) / max(var.max - var.min, 1e-300)
    spread = np.where(np.isfinite(spread), spread, 1.0)
    far = spread > NEAR
    n_far = far.sum(axis=1, keepdims=True)
    return (n_far - far) == 0  # no other column is far


def draw_slices(snap: Snapshot, fig: "Figure | SubFigure", picture: dict[str, Any]) -> None:
    """Posterior mean and band along each parameter through the best point."""
    columns = {label: var for var, _, label in parameter_columns(snap)}
    cuts = [cut for cut in picture["slices"] if cut["name"] in columns][:MAX_SLICE_PANELS]
    ncols = min(4, max(len(cuts), 1))
    axes = np.atleast_1d(fig.subplots(math.ceil(len(cuts) / ncols), ncols, squeeze=False, sharey=True)).ravel()
    out = outcomes(snap)
    best = snap.best
    near = _near_best(snap, out.jobs, best.params) if best is not None else np.zeros((len(out.jobs), 0), bool)
    labels = [label for _, _, label in parameter_columns(snap)]
    for k, (ax, cut) in enumerate(zip(axes, cuts)):
        var = columns[cut["name"]]
        x = np.arange(len(cut["x"])) if var.type == "ENUM" else np.asarray(cut["x"], dtype=float)
        ax.fill_between(x, cut["low"], cut["high"], alpha=0.25, color=FEASIBLE["color"], step=None)
        ax.plot(x, cut["mean"], color=FEASIBLE["color"], marker="o" if var.type == "ENUM" else None)
        format_parameter_axis(ax, var)
        c = labels.index(cut["name"])
        _, i, _ = parameter_columns(snap)[c]
        if near.size:
            mask = near[:, c] & out.feasible
            jx = parameter_positions(var, [element(job.params, var.name, i) for job in out.jobs])
            ax.scatter(jx[mask], out.values[mask], s=12, color="black", alpha=0.6, zorder=3)
            bx = parameter_positions(var, [element(best.params, var.name, i)])
            ax.scatter(bx, [best.objective_value(snap.objective)], s=120, edgecolor="black", linewidth=0.6,
                       zorder=5, **BEST)
        ax.set_xlabel(cut["name"] + axis_unit(var), fontsize="small")
        ax.tick_params(labelsize="small")
        ax.grid(True, alpha=0.3)
        if k % ncols == 0:
            ax.set_ylabel(snap.objective, fontsize="small")
    for ax in axes[len(cuts):]:
        ax.set_visible(False)
    fig.suptitle(_title(snap, picture, "the model through the best point",
                        "band: +-1 std; dots: jobs near each slice; star: best job"), fontweight="bold")


def draw_contour(snap: Snapshot, fig: "Figure | SubFigure", picture: dict[str, Any]) -> None:
    """Filled contour of the posterior mean over the two most important numeric parameters."""
    contour = picture["contour"]
    columns = {label: (var, i) for var, i, label in parameter_columns(snap)}
    (xv, xi), (yv, yi) = columns[contour["x_name"]], columns[contour["y_name"]]
    ax = fig.subplots()
    mean = np.asarray(contour["mean"], dtype=float)
    levels: dict[str, Any] = {"levels": 20}
    if mean.min() > 0 and mean.max() > 100 * mean.min():  # basins of a positive objective show on a log scale
        from matplotlib.ticker import LogLocator

        levels = {"locator": LogLocator(subs=(1.0, 2.0, 5.0))}
    filled = ax.contourf(contour["x"], contour["y"], mean, cmap="viridis", extend="both", **levels)
    fig.colorbar(filled, ax=ax, label=f"{snap.objective}: the model's mean")
    out = outcomes(snap)
    jx = parameter_positions(xv, [element(job.params, xv.name, xi) for job in out.jobs])
    jy = parameter_positions(yv, [element(job.params, yv.name, yi) for job in out.jobs])
    ax.scatter(jx, jy, s=10, color="white", edgecolor="black", linewidth=0.4, label="finished jobs")
    if snap.best is not None:
        ax.scatter([element(snap.best.params, xv.name, xi)], [element(snap.best.params, yv.name, yi)], s=150,
                   edgecolor="black", linewidth=0.6, zorder=5, label="best job", **BEST)
    low = np.unravel_index(np.argmin(snap.sign * mean), mean.shape)
    ax.scatter([contour["x"][low[1]]], [contour["y"][low[0]]], marker="X", s=90, color="red", edgecolor="white",
               zorder=6, label="the mean's minimum" if snap.sign > 0 else "the mean's maximum")
    format_parameter_axis(ax, xv, "x")
    format_parameter_axis(ax, yv, "y")
    ax.set_xlabel(contour["x_name"] + axis_unit(xv))
    ax.set_ylabel(contour["y_name"] + axis_unit(yv))
    ax.legend(loc="upper right", fontsize="small", framealpha=0.85)
    fig.suptitle(_title(snap, picture, "the model's mean over two parameters",
                        "its two most important, the others at the best point"), fontweight="bold")
