"""The benchmark scripts share one command line: the common flags come from one builder."""
from __future__ import annotations

from pathlib import Path

import pytest

import experiments.benchmarks as benchmarks
from experiments.benchmarks.command_line import benchmark_parser, invocation

HARNESS = Path(benchmarks.__file__).resolve().parent


def test_no_script_builds_a_parser_of_its_own():
    # every parser comes from benchmark_parser, so a common flag is spelled and explained once
    own = [path.name for path in HARNESS.glob("*.py")
           if path.name != "command_line.py" and "ArgumentParser(" in path.read_text(encoding="utf-8")]
    assert not own


def test_the_common_flags_are_added_only_when_asked_for():
    parser = benchmark_parser("parallel", "doc", json=True, seeds="0-7", workers=True, workdir=True, include=True)
    args = parser.parse_args([])
    assert (args.json, args.seeds, args.workers, args.workdir, args.include) == (None, list(range(8)), 1, None, [])
    assert parser.prog == "python -m experiments.benchmarks.parallel"
    bare = benchmark_parser("tables", "doc").parse_args([])
    assert vars(bare) == {}
    with pytest.raises(SystemExit):
        benchmark_parser("merge", "doc", json_required=True).parse_args([])


def test_a_plain_number_of_seeds_is_one_seed_or_a_count_as_the_script_says():
    assert benchmark_parser("transfer", None, seeds="0-9").parse_args(["--seeds", "3"]).seeds == [3]
    assert benchmark_parser("suite", None, seeds="1", seed_count=True).parse_args(["--seeds", "3"]).seeds == [0, 1, 2]
    for seed_count in (False, True):
        parser = benchmark_parser("x", None, seeds="0", seed_count=seed_count)
        assert parser.parse_args(["--seeds", "2-4"]).seeds == [2, 3, 4]
        assert parser.parse_args(["--seeds", "5,1"]).seeds == [5, 1]


def test_a_report_records_the_command_from_the_repository_root():
    assert invocation("compare", ["--seeds", "2"]) == "python -m experiments.benchmarks.compare --seeds 2"
