"""The suite's tables, from the COCO summary of a result file (:func:`experiments.benchmarks.ecdf.report`):
the aggregate runtime ECDF against evaluations and simulated time, its area per function group,
and per problem, wins, ties and losses of ours against each reference; for the real
hyperparameter tasks, from their data profile (:func:`experiments.benchmarks.profiles.report`)."""
from __future__ import annotations

import statistics
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from . import bbob
from .ecdf import area, runtimes
from .profiles import suite_report
from .table_format import bold_lowest, load, markdown

OURS = "ours"
#: The README's names of the methods.
LABELS = {OURS: "spearmint-nn (default)", "turbo": "TuRBO (Thompson sampling)", "botorch-qlognei": "BoTorch qLogNEI",
          "optuna-gp": "Optuna GPSampler", "optuna-tpe": "Optuna TPE (multivariate)", "smac-bb": "SMAC3 black-box",
          "sobol": "Sobol (random)"}


def _runs(files: str | tuple[str, ...]) -> list[dict[str, Any]]:
    return [run for name in ((files,) if isinstance(files, str) else files) for run in load(name)["runs"]]


@lru_cache(maxsize=None)
def _summary(files: str | tuple[str, ...]) -> dict[str, Any]:
    """A file's COCO summary, or that of the runs of several files together (e.g. probes of our
    settings beside the run they are compared with: ranks are over every method of them all)."""
    if isinstance(files, str):
        return load(files)["summary"]
    return suite_report(_runs(files))


def _by_rank(summary: dict[str, Any]) -> list[str]:
    return sorted(summary["ranks"]["mean"], key=lambda m: summary["ranks"]["mean"][m])


def _highest(cells: list[str]) -> list[str]:
    return bold_lowest(cells, [1.0] * len(cells), max)


def suite_table(file: str | tuple[str, ...], dim: int, overview: bool = False) -> str:
    """Per method (best mean rank first), the share of (run, target) pairs of all functions
    reached after 1, 2, 5, 10 ... x d evaluations and after 10 and 50 median jobs of simulated time
    where the runs last that long (COCO's runtime ECDFs; the highest in bold), the ECDF's area
    and the mean rank over the problems (lowest in bold). ``overview`` (the README's): from 2 x d,
    10 jobs' time, no area."""
    summary = _summary(file)
    entry = summary["dims"][str(dim)]
    methods = _by_rank(summary)
    cells = entry["groups"]["all"]
    shown = [i for i, k in enumerate(entry["budgets_per_dim"]) if k > 1 or not overview]
    columns = [_highest([f"{cells[m]['ecdf'][i]:.3f}" for m in methods]) for i in shown]
    head = [f"reached @{entry['budgets_per_dim'][i]}·d" for i in shown]
    times = entry.get("times_s", [])
    for i, seconds in enumerate(times):
        if seconds / times[0] in ((10,) if overview else (10, 50)):  # the first is one median job
            columns.append(_highest([f"{cells[m]['ecdf_time'][i]:.3f}" for m in methods]))
            head.append(f"@{seconds / times[0]:g} jobs' time")
    if not overview:
        columns.append(_highest([f"{cells[m]['area']:.3f}" for m in methods]))
    columns.append(bold_lowest([f"{summary['ranks']['mean'][m]:.2f}" for m in methods], [1.0] * len(methods)))
    problems = len(summary["ranks"]["per_problem"])
    return markdown(["method", *head, *([] if overview else ["area"]), f"mean rank ({problems} problems)"],
                    [[LABELS.get(m, m) if overview else m, *row] for m, *row in zip(methods, *columns)])


def tasks_table(file: str | tuple[str, ...]) -> str:
    """Per method (best mean rank first), the share of (run, target) pairs of the real tasks'
    data profile reached after 1, 2, 5, 10 ... x d evaluations (the highest in bold), its area
    and the mean rank over the tasks (lowest in bold)."""
    summary = _summary(file)
    methods = _by_rank(summary)
    rows = summary["methods"]
    columns = [_highest([f"{rows[m]['ecdf'][i]:.3f}" for m in methods]) for i in range(len(summary["budgets_per_dim"]))]
    columns.append(_highest([f"{rows[m]['area']:.3f}" for m in methods]))
    columns.append(bold_lowest([f"{summary['ranks']['mean'][m]:.2f}" for m in methods], [1.0] * len(methods)))
    return markdown(["method", *[f"reached @{b}·d" for b in summary["budgets_per_dim"]], "area",
                     f"mean rank ({len(summary['ranks']['per_problem'])} tasks)"],
                    [[m, *row] for m, *row in zip(methods, *columns)])


def suite_groups_table(file: str | tuple[str, ...], dim: int) -> str:
    """Per function group (rows), each method's ECDF area over the budget (the highest in bold)."""
    summary = _summary(file)
    groups = summary["dims"][str(dim)]["groups"]
    methods = _by_rank(summary)
    rows = [[f"{group} ({rows[methods[0]]['runs']} runs)",
             *_highest([f"{rows[m]['area']:.3f}" for m in methods])] for group, rows in groups.items()]
    return markdown(["group", *methods], rows)


def suite_functions_table(file: str | tuple[str, ...], dim: int) -> str:
    """Per BBOB function (rows), each method's ECDF area over its runs (the highest in bold): where
    a group's or the aggregate's lead comes from."""
    summary = _summary(file)
    budget = summary["dims"][str(dim)]["budget"]
    methods = _by_rank(summary)
    times: dict[tuple[int, str], list[np.ndarray]] = {}
    for run in _runs(file):
        function, d, _ = bbob.parse_name(run["problem"])
        if d == dim:
            times.setdefault((function, run["method"]), []).append(runtimes(run["best_by_evals"], run["minimum"]))
    rows = [[f"f{f}", *_highest([f"{area(np.array(times[f, m]), budget):.3f}" for m in methods])]
            for f in sorted({f for f, _ in times})]
    return markdown(["function", *methods], rows)


#: a final best within 1% of another's (as a distance to the optimum) is level with it
LEVEL = 0.01


@lru_cache(maxsize=None)  # each wins row and the README's overview ask it again
def _final_gaps(file: str | tuple[str, ...]) -> dict[tuple[str, str], float]:
    """Per (problem, method), the median over seeds of the best value at the end of the budget
    minus the optimum (the best value itself where the optimum is unknown: the real tasks)."""
    gaps: dict[tuple[str, str], list[float]] = {}
    for run in _runs(file):
        gaps.setdefault((run["problem"], run["method"]), []).append(
            run["best_by_evals"][-1][1] - (run["minimum"] if run.get("minimum") is not None else 0.0))
    return {key: statistics.median(values) for key, values in gaps.items()}


def _outcomes(ours: dict[str, float], theirs: dict[str, float]) -> tuple[int, int, int]:
    """Per problem in both (problem -> final gap), ours ahead, level (within :data:`LEVEL`), behind."""
    outcomes = [0, 0, 0]
    for problem in ours.keys() & theirs.keys():
        mine, other = ours[problem], theirs[problem]
        margin = LEVEL * abs(other)
        outcomes[0 if mine < other - margin else 2 if mine > other + margin else 1] += 1
    return outcomes[0], outcomes[1], outcomes[2]


def _method_gaps(file: str | tuple[str, ...], method: str) -> dict[str, float]:
    return {problem: gap for (problem, m), gap in _final_gaps(file).items() if m == method}


def final_best_outcomes(file: str | tuple[str, ...], reference: str) -> tuple[int, int, int]:
    """The problems where ours ends ahead of ``reference``, level with it (within :data:`LEVEL`)
    and behind it, by the final best: what separates methods where COCO's targets are out of
    reach (10 and 20 dimensions at these budgets)."""
    return _outcomes(_method_gaps(file, OURS), _method_gaps(file, reference))


def rerun_table(entries: Sequence[tuple[str, str, str]], references: Sequence[str]) -> str:
    """How much one seed's final best moves when ours runs again at the same commit: per slice
    (its label, the file, and a file of ours alone run again), the rerun against the first run,
    and ours against each reference by the final best, first run -> rerun (the references' runs
    are the file's in both)."""
    rows = []
    for label, file, rerun in entries:
        first, again = _method_gaps(file, OURS), _method_gaps(rerun, OURS)
        cells = [" / ".join(map(str, _outcomes(again, first)))]
        for reference in references:
            theirs = _method_gaps(file, reference)
            cells.append(" -> ".join(" / ".join(map(str, _outcomes(ours, theirs))) for ours in (first, again)))
        rows.append([label, str(len(again)), *cells])
    return markdown(["slice", "problems", "rerun against first run: ahead / level / behind",
                     *(f"ours against {reference}, first run -> rerun" for reference in references)], rows)


def suite_wins(file: str | tuple[str, ...]) -> str:
    """Per reference, the problems where ours ranks ahead of it, level with it and behind it (each
    problem's ranks: the share of its (seed, target) pairs reached within the budget), and the same
    by the final best (:func:`final_best_outcomes`)."""
    summary = _summary(file)
    per_problem = summary["ranks"]["per_problem"].values()
    rows = []
    for method in (m for m in _by_rank(summary) if m != OURS):
        pairs = [(ranks[OURS], ranks[method]) for ranks in per_problem if OURS in ranks and method in ranks]
        rows.append([method, str(sum(a < b for a, b in pairs)), str(sum(a == b for a, b in pairs)),
                     str(sum(a > b for a, b in pairs)), " / ".join(map(str, final_best_outcomes(file, method)))])
    return markdown(["ours against", "ahead", "level", "behind", "by final best: ahead / level / behind"], rows)


def parallel_overview(entries: Sequence[tuple[str, str]]) -> str:
    """The README's: per regime (its label and file), ours' mean rank, the reference with the best
    mean rank and its own, the problems where ours ends ahead of it, level and behind by the final
    best, and the median share of our workers' time spent waiting (the asynchronous regimes)."""
    rows = []
    for label, file in entries:
        summary = _summary(file)
        ranks = summary["ranks"]["mean"]
        reference = next(m for m in _by_rank(summary) if m != OURS)
        idle = [run["idle_share"] for run in _runs(file) if run["method"] == OURS and "idle_share" in run]
        rows.append([f"{label} ({len(summary['ranks']['per_problem'])})", f"{ranks[OURS]:.2f}",
                     f"{LABELS.get(reference, reference)} {ranks[reference]:.2f}",
                     " / ".join(map(str, final_best_outcomes(file, reference))),
                     f"{100 * statistics.median(idle):.1f}%" if idle else "-"])
    return markdown(["regime, dimension (problems)", "spearmint-nn mean rank", "best other (mean rank)",
                     "ours by final best: ahead / level / behind", "our workers waiting"], rows)


def change_table(slices: Sequence[tuple[str, str, str]]) -> str:
    """A change to ours judged on slices of the suite: per slice (its label, the file with ours
    before and the file with ours after, on the same problems and seeds), the problems where after
    ranks ahead of before, level and behind (as in :func:`suite_wins`), the ECDF's area and its
    share reached at the budget, and the median seconds of a proposal call, before -> after."""
    rows = []
    for label, before, after in slices:
        runs = [{**run, "method": side} for side, name in (("before", before), ("after", after))
                for run in load(name)["runs"] if run["method"] == OURS]
        problems = {run["problem"] for run in runs if run["method"] == "after"}
        runs = [run for run in runs if run["problem"] in problems]
        summary = suite_report(runs)
        pairs = [(ranks["after"], ranks["before"]) for ranks in summary["ranks"]["per_problem"].values()]
        [cells] = [entry["groups"]["all"] for entry in summary["dims"].values()]
        seconds = {side: statistics.median(run["proposals"]["median_s"] for run in runs if run["method"] == side)
                   for side in ("before", "after")}
        outcome = f"{sum(a < b for a, b in pairs)} / {sum(a == b for a, b in pairs)} / {sum(a > b for a, b in pairs)}"
        rows.append([label, str(len(pairs)), outcome, f"{cells['before']['area']:.3f} -> {cells['after']['area']:.3f}",
                     f"{cells['before']['ecdf'][-1]:.3f} -> {cells['after']['ecdf'][-1]:.3f}",
                     f"{seconds['before']:.1f} -> {seconds['after']:.1f}"])
    return markdown(["slice", "problems", "after ahead / level / behind", "area", "reached at the budget",
                     "median s a proposal call"], rows)


def suite_blocks(name: str, file: str | tuple[str, ...], dim: int | None,
                 functions: bool = False) -> dict[str, Callable[[], str]]:
    """The generated blocks of one suite result: ``name`` (the table), ``name-groups`` (the area
    per function group), ``name-wins`` and, with ``functions``, ``name-functions``; for real
    tasks (``dim`` None) the data profile's table and the wins."""
    if dim is None:
        return {name: lambda: tasks_table(file), f"{name}-wins": lambda: suite_wins(file)}
    blocks = {name: lambda: suite_table(file, dim), f"{name}-groups": lambda: suite_groups_table(file, dim),
              f"{name}-wins": lambda: suite_wins(file)}
    if functions:
        blocks[f"{name}-functions"] = lambda: suite_functions_table(file, dim)
    return blocks
