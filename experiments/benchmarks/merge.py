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

import sys
from typing import Any, Sequence

from .bbob import parse_name
from .checkpoints import summarise_run
from .command_line import benchmark_parser
from .parallel import check_sizes, report_points, summarise
from .profiles import suite_report
from .provenance import write_json
from .runs import sourced_runs

Run = dict[str, Any]


def check_suite_sizes(runs: Sequence[Run]) -> list[str]:
    """What is wrong with the suite's ``runs`` for one report: another regime or budget than the first's."""
    # the real tasks' runs record their dimension; BBOB's names carry it (older reports record none)
    sizes = [(run["regime"], summarise_run(run)["evals"] / (run.get("dim") or parse_name(run["problem"])[1]))
             for run in runs]
    return [f"{run['problem']} {run['method']} seed {run['seed']} ran {size[0]} with {size[1]:g} x d "
            f"evaluations, not {sizes[0][0]} with {sizes[0][1]:g} x d" for run, size in zip(runs, sizes) if size != sizes[0]]


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("merge", __doc__.split("\n\n")[0], json_required=True)
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
