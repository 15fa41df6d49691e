"""One table from several invocations of the parallel benchmark, each run keeping its origin.

Seeds run on different days, commits or machines often make one table ("same run" rows). A
merged report says where each of its runs comes from: ``sources`` lists every invocation whose
runs it holds (the file it came from, its ``provenance``, ``arguments`` and ``machine`` as that
report recorded them; reports written before provenance was recorded have ``null`` there), and
each run carries ``source``, its index in that list. A run without ``source`` is the writing
invocation's own (the report's ``provenance``). Merging merged reports keeps the original
sources, and a source none of the kept runs comes from is dropped.

    python -m experiments.benchmarks.merge --json merged.json first.json second.json ...

Later files win for the same problem, method and seed, as with ``benchmarks.parallel
--include`` (which records its sources the same way). ``--problems a,b`` keeps only those
problems' runs: the other methods' runs of the problems a slow reference ran on, beside it.
Every run must have the same mode, workers in flight and evaluations; runs stay as they are
(summaries or full traces). Reports of the suite (``benchmarks.suite``, e.g. one per set of
instances) merge the same way: their runs must share the regime and the evaluations per
dimension, and the summary is the suite's (the data profile of the real tasks, profiled again
over all the merged runs).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Collection, Sequence

from .checkpoints import summarise_run
from .profiles import suite_report
from .provenance import write_json

Run = dict[str, Any]
KEY = ("problem", "method", "seed")


def sourced_runs(paths: Sequence[str], problems: Collection[str] | None = None
                 ) -> tuple[dict[tuple, Run], list[dict[str, Any]]]:
    """The runs of the reports at ``paths`` by (problem, method, seed), later files winning,
    each with its ``source`` index into the returned list of sources; with ``problems``, only
    those problems' runs (and only the sources they come from)."""
    sources: list[dict[str, Any]] = []
    found: dict[tuple, Run] = {}
    for path in paths:
        with open(path) as handle:
            report = json.load(handle)
        offset = len(sources)
        sources += report.get("sources", [])  # a merged report's own sources, in their order
        sources.append({"file": Path(path).name, **{k: report.get(k) for k in ("provenance", "arguments", "machine")}})
        for run in report["runs"]:
            if problems is not None and run["problem"] not in problems:
                continue
            index = run.get("source")
            found[tuple(run.get(k) for k in KEY)] = {
                **run, "source": len(sources) - 1 if index is None else offset + index}
    used = sorted({run["source"] for run in found.values()})
    renumber = {old: new for new, old in enumerate(used)}
    return ({key: {**run, "source": renumber[run["source"]]} for key, run in found.items()},
            [sources[old] for old in used])


def check_sizes(runs: Sequence[Run], mode: str, workers: int, evals: int) -> list[str]:
    """What is wrong with ``runs`` for a report of ``mode``, ``workers`` in flight and ``evals``."""
    wrong = []
    for run in runs:
        n = summarise_run(run)["evals"]
        if (run["mode"], run["workers"], n) != (mode, workers, evals):
            wrong.append(f"{run['method']} seed {run['seed']} ran {run['mode']} with {run['workers']} in flight "
                         f"and {n} evaluations, not {mode}, {workers} and {evals}")
    return wrong


def check_suite_sizes(runs: Sequence[Run]) -> list[str]:
    """What is wrong with the suite's ``runs`` for one report: another regime or budget than the first's."""
    from .bbob import parse_name

    # the real tasks' runs record their dimension; BBOB's names carry it (older reports record none)
    sizes = [(run["regime"], summarise_run(run)["evals"] / (run.get("dim") or parse_name(run["problem"])[1]))
             for run in runs]
    return [f"{run['problem']} {run['method']} seed {run['seed']} ran {size[0]} with {size[1]:g} x d "
            f"evaluations, not {sizes[0][0]} with {sizes[0][1]:g} x d" for run, size in zip(runs, sizes) if size != sizes[0]]


def main(argv: list[str] | None = None) -> int:
    from .parallel import report_points, summarise

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, help="the merged report")
    parser.add_argument("--problems", help="keep only these problems' runs (comma-separated names)")
    parser.add_argument("reports", nargs="+", help="reports of benchmarks.parallel, later ones winning")
    args = parser.parse_args(argv)
    problems = set(args.problems.split(",")) if args.problems else None
    found, sources = sourced_runs(args.reports, problems)
    if not found:
        parser.error(f"no run of {args.problems} in the reports" if problems else "the reports hold no run")
    runs = list(found.values())
    first = runs[0]
    evals = summarise_run(first)["evals"]
    suite = "regime" in first
    wrong = check_suite_sizes(runs) if suite else check_sizes(runs, first["mode"], first["workers"], evals)
    if wrong:
        parser.error("; ".join(wrong))
    if suite:
        summary = suite_report(runs)
    else:
        checkpoints, time_points = report_points(first["mode"], first["workers"], evals, first.get("job_seconds", 0.0))
        summary = summarise(runs, checkpoints, time_points)
    write_json(args.json, {"merged": args.reports, "sources": sources, "summary": summary, "runs": runs})
    print(f"{len(runs)} runs from {len(sources)} invocations", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
