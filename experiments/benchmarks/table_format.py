"""What every generated table is made of: a result file of ``results/``, markdown, the best in bold.

Shared by :mod:`experiments.benchmarks.tables` (the registry of generated blocks) and the
modules that lay out one benchmark's tables (:mod:`experiments.benchmarks.stopping_tables`).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

from .checkpoints import summarise_run

RESULTS = Path(__file__).resolve().parent / "results"


@lru_cache(maxsize=None)
def load(name: str) -> dict[str, Any]:
    """A result file of ``results/``, with the runs of the parallel benchmark summarised."""
    report = json.loads((RESULTS / name).read_text())
    if report.get("runs") and all("mode" in run for run in report["runs"]):
        report["runs"] = [summarise_run(run) for run in report["runs"]]
    return report



def bold_lowest(cells: list[str], numbers: list[float], best: Callable[[list[float]], float] = min) -> list[str]:
    """``cells`` with those of the lowest number (as printed: a tie is a tie) in bold; ``best``
    max: the highest."""
    shown = [float(c.split()[0]) if c.split()[0] != "-" else math.nan for c in cells]
    finite = [s for s, n in zip(shown, numbers) if math.isfinite(n) and math.isfinite(s)]
    if len(finite) < 2:
        return cells
    top = best(finite)
    return [_bold_first(c) if s == top else c for c, s in zip(cells, shown)]


def _bold_first(cell: str) -> str:
    head, _, rest = cell.partition(" ")
    return f"**{head}**" + (f" {rest}" if rest else "")


def markdown(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    width = len(" | ".join(head).split(" | "))  # a heading may span two cells
    lines = [head, ["---"] * width, *rows]
    return "\n".join(("| " + " | ".join(line) + " |").replace("|  |", "| |") for line in lines)
