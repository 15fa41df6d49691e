"""COCO-style runtime ECDFs, areas and ranks on hand-made runs, the numbers worked out by hand.

Targets are 10^k above the optimum (0 here), k = 2, 1.8, ..., -8. A best value of 5.0 reaches
the 7 targets of k = 2 .. 0.8 (10^0.8 = 6.3 >= 5 > 10^0.6 = 4.0); 0.5 reaches 5 more, k = 0.6 ..
-0.2 (10^-0.2 = 0.63 >= 0.5 > 0.40); 0.05 reaches the 17 of k = 2 .. -1.2; 1000 reaches none.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.benchmarks import ecdf


def _run(method, problem, changes, evals=10, **extra):
    return {"problem": problem, "method": method, "seed": 0, "minimum": 0.0, "evals": evals,
            "best_by_evals": changes, "proposals": {"calls": 0, "total_s": 0.0}, **extra}


SLOW = [[1, 200.0], [3, 5.0], [10, 0.5]]  # 7 targets at the 3rd evaluation, 5 more at the 10th
FAST = [[1, 0.05]]  # 17 targets at the first


def test_runtimes_are_the_first_evaluation_reaching_each_target():
    times = ecdf.runtimes(SLOW, 0.0)
    assert list(times[:7]) == [3] * 7 and list(times[7:12]) == [10] * 5 and np.all(np.isinf(times[12:]))


def test_ecdf_and_area_of_one_run():
    times = ecdf.runtimes(SLOW, 0.0)
    assert ecdf.ecdf(times, [2, 4, 10]) == pytest.approx([0.0, 7 / 51, 12 / 51])
    # 7 pairs reached at 3 of 10 add (log 10 - log 3) / log 10 each, the 5 at 10 nothing
    assert ecdf.area(times, 10) == pytest.approx(7 * (1 - math.log10(3)) / 51)
    assert ecdf.area(ecdf.runtimes(FAST, 0.0), 10) == pytest.approx(17 / 51)


def test_report_splits_dimensions_and_groups_and_ranks_the_methods_per_problem():
    runs = [_run("a", "bbob-f1-d2-i1", SLOW), _run("b", "bbob-f1-d2-i1", FAST), _run("c", "bbob-f1-d2-i1", SLOW),
            _run("a", "bbob-f20-d2-i1", [[1, 1000.0]])]
    summary = ecdf.report(runs)
    entry = summary["dims"]["2"]
    assert entry["budget"] == 10 and entry["budgets_per_dim"] == [1, 2, 5]  # 10 evaluations = 5 d
    separable = entry["groups"]["separable"]
    assert separable["a"]["ecdf"] == pytest.approx([0.0, 7 / 51, 12 / 51])
    assert separable["b"]["ecdf"] == pytest.approx([17 / 51] * 3) and separable["b"]["area"] == pytest.approx(1 / 3)
    weak = entry["groups"]["multimodal, weak global structure"]
    assert list(weak) == ["a"] and weak["a"]["ecdf"] == [0.0, 0.0, 0.0]
    every = entry["groups"]["all"]
    assert every["a"]["runs"] == 2 and every["a"]["ecdf"] == pytest.approx([0.0, 7 / 102, 12 / 102])
    # f1: b reached 17 of 51, a and c 12 each (tied for 2 and 3); f20 has one method, no ranks
    assert summary["ranks"]["per_problem"] == {"bbob-f1-d2-i1": {"a": 2.5, "b": 1.0, "c": 2.5}}
    assert summary["ranks"]["mean"] == {"a": 2.5, "b": 1.0, "c": 2.5}
    text = ecdf.table(summary)
    assert "separable | b | 1 | 0.333 | 0.333 | 0.333 | 0.333" in text and "b 1.00" in text


def test_simulated_time_ecdf_in_job_durations():
    run = _run("a", "bbob-f1-d2-i1", SLOW, best_by_time=[[60.0, 5.0], [150.0, 0.5]], job_seconds=60.0,
               elapsed_s=700.0)
    entry = ecdf.report([run])["dims"]["2"]
    assert entry["times_s"] == [60.0, 120.0, 300.0, 600.0]  # 1, 2, 5, 10 jobs: 20 would pass 700 s
    assert entry["groups"]["all"]["a"]["ecdf_time"] == pytest.approx([7 / 51, 7 / 51, 12 / 51, 12 / 51])


def test_the_command_reprints_a_report_and_writes_its_summary_with_provenance(tmp_path, capsys):
    import json

    source = tmp_path / "suite.json"
    source.write_text(json.dumps({"provenance": {"date": "then"}, "runs": [_run("a", "bbob-f1-d2-i1", SLOW),
                                                                          _run("b", "bbob-f1-d2-i1", FAST)]}))
    assert ecdf.main([str(source), "--json", str(tmp_path / "ecdf.json")]) == 0
    written = json.loads((tmp_path / "ecdf.json").read_text())
    assert written["sources"] == {str(source): {"date": "then"}} and "versions" in written["provenance"]
    assert written["ranks"]["mean"] == {"a": 2.0, "b": 1.0}
    assert "b 1.00, a 2.00" in capsys.readouterr().out
