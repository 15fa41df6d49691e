"""The early-stopping benchmark's tables, from the summaries of its result files
(:func:`experiments.benchmarks.early_stopping.summarise`): the README's overview, and
RESULTS.md's rows of every method and paired wins per seed."""
from __future__ import annotations

import math
from typing import Any, Sequence

from .table_format import bold_lowest, load, markdown

SHARES = ("1/4", "1/3", "1/2", "1")


def _reach(row: dict[str, Any]) -> str:
    """The compute share at which a run reaches no stopping's final best of its seed: median
    over the runs reaching it, and how many did."""
    text = f"{row['compute_to_target']:.2f}" if math.isfinite(row["compute_to_target"]) else "-"
    return f"{text} ({row['reached']}/{row['seeds']})"


def _best(x: float, digits: int) -> str:
    return f"{x:.{digits}f}" if math.isfinite(x) else "-"


def _rows(file: str, workers: int) -> dict[str, dict[str, Any]]:
    return {r["method"]: r for r in load(file)["summary"]["rows"] if r["workers"] == workers}


def early_stopping_table(file: str, workers: int, methods: Sequence[tuple[str, str]]) -> str:
    """The README's: per method (as labelled), the median best final value at a third and all
    of the compute, and the compute share to no stopping's final best."""
    rows = _rows(file, workers)
    picked = [(rows[method], label) for method, label in methods]
    columns = [bold_lowest([_best(r[f"best@{share}"], 2) for r, _ in picked], [r[f"best@{share}"] for r, _ in picked])
               for share in ("1/3", "1")]
    reach = bold_lowest([_reach(r) for r, _ in picked], [r["compute_to_target"] for r, _ in picked])
    return markdown(["multi-fidelity Hartmann6 (10 seeds)", "best @1/3", "best @1", "compute to no stopping's best"],
                    [[label, a, b, c] for (_, label), a, b, c in zip(picked, *columns, reach)])


def early_stopping_rows(file: str, workers: int, labels: dict[str, str] | None = None, digits: int = 3) -> str:
    """RESULTS.md's: every method at ``workers`` workers (as labelled, else by name): jobs
    started (median), budget spent, compute to no stopping's final best, the median best at
    1/4, 1/3, 1/2 and all of the compute (``digits`` decimals), seconds per ask."""
    labels = labels or {}
    rows = list(_rows(file, workers).values())
    best = [bold_lowest([_best(r[f"best@{share}"], digits) for r in rows], [r[f"best@{share}"] for r in rows])
            for share in SHARES]
    reach = bold_lowest([_reach(r) for r in rows], [r["compute_to_target"] for r in rows])
    body = [[labels.get(r["method"], r["method"]), f"{r['started']:.0f}", f"{r['spent']:.2f}", c, *cells,
             f"{r['s_per_ask']:.2g}"] for r, c, *cells in zip(rows, reach, *best)]
    return markdown(["method", "jobs", "budget spent", "compute to `ours`'s final", *(f"best @{s}" for s in SHARES),
                     "s/ask"], body)


def early_stopping_wins(file: str, workers: int, against: Sequence[str], labels: dict[str, str] | None = None) -> str:
    """RESULTS.md's: paired wins-ties-losses over the seeds of each rule of ours against each
    method of ``against``, at a third and at all of the compute ("1/3 / all")."""
    labels = labels or {}
    wins = [w for w in load(file)["summary"]["wins"] if w["workers"] == workers]
    mine = sorted({w["method"] for w in wins} - {"ours"}, key=["ours-median", "ours-asha", "ours-model"].index)
    cell = {(w["method"], w["against"]): " / ".join("-".join(map(str, w[share])) for share in ("1/3", "1"))
            for w in wins}
    return markdown(["ours with", *(labels.get(m, m) for m in against)],
                    [[m.removeprefix("ours-"), *(cell.get((m, other), "") for other in against)] for m in mine])
