"""The benchmark scripts' command line: the flags they share, spelled and explained once.

Every script builds its parser with :func:`benchmark_parser`, naming the common flags it takes,
and adds the flags that are its own. ``--seeds`` reads a range "A-B" or a list "3,5,8"
everywhere; a plain number N means N runs (seeds 0..N-1) in the scripts that count runs
(``seed_count``) and the one seed N in the others, as the commands recorded in RESULTS.md were
written.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .runs import parse_seeds, seed_list

#: How the scripts are run (from the repository root).
PREFIX = "python -m experiments.benchmarks."
JSON_HELP = "write the report (JSON) here; a script of several runs rewrites it as each run ends"
WORKERS_HELP = "runs at once, each in its own process"
WORKDIR_HELP = "where the experiment folders go, kept afterwards (default: a temporary folder, removed)"
INCLUDE_HELP = "earlier reports of this benchmark whose runs join this one's (a run made now replaces theirs)"
REUSE_HELP = ("earlier reports of this benchmark: a run found there (the same problem, method and seed, at least as "
              "many evaluations) is taken instead of rerun; runs are deterministic given their seed")


def benchmark_parser(name: str, description: str | None, *, json: bool = False, json_required: bool = False,
                     seeds: str | None = None, seed_count: bool = False, workers: bool = False,
                     workdir: bool = False, include: bool = False, reuse: bool = False) -> argparse.ArgumentParser:
    """The parser of ``python -m experiments.benchmarks.<name>`` with ``description`` as its help
    (printed as written) and the common flags asked for: ``--json`` (``json``, or
    ``json_required`` where the report is all the script makes), ``--seeds`` with the default
    ``seeds`` (``seed_count``: see the module docstring), ``--workers``, ``--workdir``, and the
    earlier reports of ``--include`` (their runs join the summary) or ``--reuse`` (their runs
    stand in for runs not made again)."""
    parser = argparse.ArgumentParser(prog=PREFIX + name, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if json or json_required:
        parser.add_argument("--json", required=json_required, metavar="PATH", help=JSON_HELP)
    if seeds is not None:
        if seed_count:
            parser.add_argument("--seeds", type=parse_seeds, default=seeds,
                                help="N runs (seeds 0..N-1), a range A-B or a list 3,5,8")
        else:
            parser.add_argument("--seeds", type=seed_list, default=seeds, help="a seed, a range A-B or a list 3,5,8")
    if workers:
        parser.add_argument("--workers", type=int, default=1, help=WORKERS_HELP)
    if workdir:
        parser.add_argument("--workdir", metavar="FOLDER", help=WORKDIR_HELP)
    if include:
        parser.add_argument("--include", nargs="+", default=[], metavar="JSON", help=INCLUDE_HELP)
    if reuse:
        parser.add_argument("--reuse", nargs="*", default=[], metavar="JSON", help=REUSE_HELP)
    return parser


def invocation(name: str, argv: Sequence[str] | None) -> str:
    """The command that ran benchmark ``name`` with ``argv`` (this process's arguments when None),
    as a report records it."""
    return PREFIX + name + " " + " ".join(sys.argv[1:] if argv is None else argv)
