"""The parts every plot of a search shares: the finished jobs sorted by outcome, the parameter
columns with each job's position on them, the value axis's limits and the marker of each outcome.

Pure data and small axis helpers; the sections themselves are drawn by :mod:`.plots` (one
quantity per panel) and :mod:`.job_plots` (where the jobs landed, all parameters at once).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..experiment.jobs import JobState
from ..experiment.layout import ExperimentPaths
from ..problem.space import Space
from .status import Snapshot

FEASIBLE = dict(color="#1f77b4", marker="o")
INFEASIBLE = dict(color="#ff7f0e", marker="x")
FAILED = dict(color="#d62728", marker="v")
BEST = dict(color="#2ca02c", marker="*")
MODEL_BEST = dict(color="#9467bd", marker="D")
# Beyond this many jobs, points and lines are rasterised inside an SVG: one path per point would
# make a report of 10,000 jobs tens of megabytes.
RASTERIZE_ABOVE = 500


@dataclass
class Outcomes:
    """Finished jobs in completion order, as arrays of length n.

    jobs : the job dicts; order : 1-based completion rank; values : objective (NaN when none);
    feasible / infeasible / failed : boolean masks partitioning the jobs (failed: no value).
    """

    jobs: list[dict[str, Any]]
    order: np.ndarray
    values: np.ndarray
    feasible: np.ndarray
    infeasible: np.ndarray
    failed: np.ndarray


def outcomes(snap: Snapshot) -> Outcomes:
    """The snapshot's finished jobs sorted into feasible, infeasible and failed."""
    jobs = snap.finished
    values = np.array([job.objective_value(snap.objective) for job in jobs], dtype=float).reshape(-1)
    feasible = np.array([snap.is_feasible(job) for job in jobs], dtype=bool).reshape(-1)
    has_value = np.isfinite(values)
    complete = np.array([job.state is JobState.COMPLETE for job in jobs], dtype=bool).reshape(-1)
    infeasible = complete & has_value & ~feasible
    return Outcomes(jobs=jobs, order=np.arange(1, len(jobs) + 1), values=values, feasible=feasible, infeasible=infeasible, failed=~(feasible | infeasible))


def best_so_far(values: np.ndarray, feasible: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """Running minimum over feasible values (the maximum when ``sign`` is -1; NaN until the
    first feasible job); shape of values."""
    masked = np.where(feasible, sign * values, np.inf)
    running = np.minimum.accumulate(masked) if masked.size else masked
    return np.where(np.isfinite(running), sign * running, np.nan)


def value_limits(values: np.ndarray, sign: float = 1.0, pad: bool = True) -> tuple[float, float] | None:
    """(low, high) of the value axis: all finite values, unless a few lie far on the bad side
    of the rest (above when minimising, ``sign`` 1; below when maximising, ``sign`` -1).

    With at least 10 values and the worst more than 3 times the 10%-90% spread beyond the 90th
    percentile of badness, the axis ends half that spread beyond it. ``pad`` widens the limits
    by 5% each way, a margin for points drawn inside the axes; without it they are the data's,
    for an axis labelled with its two ends.
    """
    v = sign * values[np.isfinite(values)]
    if v.size == 0:
        return None
    lo, hi = float(v.min()), float(v.max())
    if v.size >= 10:
        p10, p90 = np.percentile(v, [10, 90])
        spread = float(p90 - p10)
        if spread > 0 and hi > p90 + 3 * spread:
            hi = float(p90 + 0.5 * spread)
    if pad:
        margin = 0.05 * (hi - lo) if hi > lo else max(abs(lo) * 0.05, 0.5)
        lo, hi = lo - margin, hi + margin
    return (lo, hi) if sign > 0 else (-hi, -lo)


def value_ranks(values: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """Each value's rank among ``values`` scaled to [0, 1] (0: the best, the lowest or with
    ``sign`` -1 the highest; ties share their mean rank), for colours: on a linear scale a few
    poor or diverged jobs paint every good one the same colour, while by rank the best tenth of
    the jobs spans a tenth of the colour map."""
    v = sign * np.asarray(values, dtype=float)
    if v.size < 2:
        return np.zeros(v.size)
    ordered = np.sort(v)
    ranks = (np.searchsorted(ordered, v, "left") + np.searchsorted(ordered, v, "right") - 1) / 2
    return ranks / (v.size - 1)


def rank_colorbar(fig: Any, mappable: Any, values: np.ndarray, label: str, sign: float = 1.0,
                  **placement: Any) -> None:
    """A colour bar for colours from :func:`value_ranks` of ``values``, its ticks at the
    quartiles of the ranks labelled with the values there (a value shared by several quartiles,
    a plateau of poor jobs, labelled once)."""
    ordered = sign * np.sort(sign * np.asarray(values, dtype=float))
    ticks, labels = [], []
    for tick in np.linspace(0.0, 1.0, min(5, max(ordered.size, 1))):
        text = f"{ordered[int(round(tick * (ordered.size - 1)))]:.3g}"
        if text not in labels:
            ticks.append(tick)
            labels.append(text)
    bar = fig.colorbar(mappable, label=f"{label}, coloured by rank", **placement)
    bar.set_ticks(ticks, labels=labels)


def parameter_columns(snap: Snapshot) -> list[tuple[Any, int, str]]:
    """(variable, element index, label) for every plotted parameter element, in config order."""
    if snap.space is None:
        return []
    columns = []
    for var in snap.space.variables:
        for i in range(var.size):
            columns.append((var, i, var.name if var.size == 1 else f"{var.name}[{i}]"))
    return columns


def encoded_column_labels(space: Space) -> list[str]:
    """A label per encoded column of the space: ``lr``, ``w[1]``, ``act=relu``, ``opt active``."""
    labels = [""] * space.dim
    for var in space.variables:
        cols = range(space.dim)[space.value_columns(var.name)]
        for k, col in enumerate(cols):
            element, option = divmod(k, var.width)
            name = var.name if var.size == 1 else f"{var.name}[{element}]"
            labels[col] = f"{name}={var.options[option]}" if var.type == "ENUM" else name
    for col, label in enumerate(labels):
        if not label:
            labels[col] = next((f"{v.name} active" for v in space.variables
                                if v.conditions and col == space.value_columns(v.name).stop), f"input {col}")
    return labels


def read_warpings(paths: ExperimentPaths) -> dict[str, Any] | None:
    """The model's saved warping summary (``model/objective/warpings.json``), or None when absent or malformed."""
    try:
        summary = json.loads(paths.warpings.read_text())
        grid = np.asarray(summary["grid"], dtype=float)
        for entry in summary["inputs"]:
            if np.asarray(entry["mean"], dtype=float).shape != grid.shape:
                return None
        if len(warped_columns(summary)) != len(summary["inputs"]):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return summary if summary["inputs"] else None


def duration_pairs(snap: Snapshot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(predicted, actual, failed mask) in seconds for finished jobs that record both."""
    pred, actual, failed = [], [], []
    for job in snap.finished:
        p, a = job.fields.get("predicted_duration"), job.fields.get("duration")
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
               for x in (p, a)):
            pred.append(float(p))
            actual.append(float(a))
            failed.append(job.state is JobState.FAILED)
    return np.array(pred), np.array(actual), np.array(failed, dtype=bool)


def element(params: Any, name: str, i: int) -> Any:
    """Element i of variable ``name`` in params (JSON form), or None."""
    value = params.get(name) if isinstance(params, dict) else None
    return value[i] if isinstance(value, list) and i < len(value) else None


def padded_range(lo: float, hi: float, log: bool) -> tuple[float, float]:
    if log:
        span = math.log10(hi / lo) * 0.04
        return lo / 10 ** span, hi * 10 ** span
    pad = (hi - lo) * 0.04
    return lo - pad, hi + pad


def warped_columns(summary: dict[str, Any]) -> list[int]:
    """The encoded column of each entry of a warping summary's "inputs" (older summaries, without
    "columns", warped every column in order)."""
    return [int(col) for col in summary.get("columns", range(len(summary["inputs"])))]


def parameter_positions(var: Any, raw: list[Any], jitter: np.ndarray | None = None) -> np.ndarray:
    """Each job's value of one parameter element on its axis, shape (n,): the number itself
    (FLOAT, INT), the option's index plus ``jitter`` (ENUM), NaN where the job has none (an
    inactive conditional parameter) or it is not a valid value."""
    if var.type == "ENUM":
        index = np.array([var.options.index(v) if v in var.options else np.nan for v in raw], dtype=float).reshape(-1)
        return index if jitter is None else index + jitter
    return np.array([v if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan for v in raw],
                    dtype=float).reshape(-1)


def format_parameter_axis(ax: Any, var: Any, which: str = "x") -> None:
    """Limits, scale and ticks of one parameter's axis (``which``: "x" or "y"): log for
    ``"scale": "log"``, one tick per option for ENUM."""
    if var.type == "ENUM":
        rotate = 30 if len(var.options) > 3 and which == "x" else 0
        getattr(ax, f"set_{which}ticks")(range(len(var.options)), var.options, rotation=rotate, fontsize="small")
        getattr(ax, f"set_{which}lim")(-0.5, len(var.options) - 0.5)
    else:
        if var.scale == "log":
            getattr(ax, f"set_{which}scale")("log")
        getattr(ax, f"set_{which}lim")(*padded_range(var.min, var.max, var.scale == "log"))


def axis_unit(var: Any) -> str:
    """What a parameter's axis label adds to its name."""
    return " (log scale)" if var.scale == "log" else (" (integer)" if var.type == "INT" else "")


@dataclass
class SearchMarks:
    """Where the search changed, as completion ranks (1-based, as :attr:`Outcomes.order`).

    restarts : ranks after which the objective model started afresh (a job's ``search_start``);
    switches : (rank, "gp \u2192 dngo") where the first job of another model finished (the
        initial design and exploration do not count as models).
    """

    restarts: list[int]
    switches: list[tuple[int, str]]


def search_marks(out: Outcomes) -> SearchMarks:
    """Restarts and model switches, from the ``search_start`` and ``chosen_by`` the daemon wrote
    into each proposed job."""
    starts = sorted({job.fields.get("search_start") for job in out.jobs} - {None, 0})
    restarts = [int(s) for s in starts if isinstance(s, int) and not isinstance(s, bool) and 0 < s <= len(out.jobs)]
    switches, model = [], None
    for rank, job in zip(out.order, out.jobs):
        chosen_by = job.fields.get("chosen_by")
        if isinstance(chosen_by, str) and chosen_by not in ("sobol", "exploration"):
            if model is not None and chosen_by != model:
                switches.append((int(rank), f"{model} \u2192 {chosen_by}"))
            model = chosen_by
    return SearchMarks(restarts=restarts, switches=switches)


def elapsed(out: Outcomes) -> tuple[np.ndarray, str]:
    """Each finished job's finishing time since the first job was created, shape (n,), in the
    unit that suits the run's length ("seconds", "minutes" or "hours"); NaN where unknown."""
    def number(job: Any, key: str) -> float:
        value = job.fields.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan

    finished = np.array([number(job, "finished") for job in out.jobs], dtype=float).reshape(-1)
    created = np.array([number(job, "created") for job in out.jobs], dtype=float).reshape(-1)
    known = np.isfinite(created)
    seconds = finished - (created[known].min() if known.any() else np.nanmin(finished, initial=0.0))
    span = np.nanmax(seconds, initial=0.0)
    for unit, size in (("hours", 3600.0), ("minutes", 60.0)):
        if span >= 3 * size:
            return seconds / size, unit
    return seconds, "seconds"
