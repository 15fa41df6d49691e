"""Data profiles on hand-made runs, the numbers worked out by hand: two methods, one 2-D
problem, two seeds, a shared start of 3 evaluations whose best is 10.0; the best any run found
is 0.0 (method a, seed 0), so the 16 targets are 10 tau for tau = 1, 10^-0.2, ..., 10^-3."""
from __future__ import annotations

import math

import pytest

from experiments.benchmarks import profiles


def _run(method, seed, changes, problem="hpo-x", dim=2, evals=10):
    return {"problem": problem, "method": method, "seed": seed, "dim": dim, "evals": evals,
            "best_by_evals": changes, "proposals": {"calls": 7, "points": evals - 3, "total_s": 0.0}}


RUNS = [
    _run("a", 0, [[1, 20.0], [2, 10.0], [6, 0.0]]),  # every target at 6 evaluations: 3 x d
    _run("a", 1, [[1, 10.0], [4, 5.0]]),  # 5.0 = 10 x 10^-0.3: tau = 1 .. 10^-0.2 at 4 (2 targets)
    _run("b", 0, [[1, 20.0], [2, 10.0], [10, 1.0]]),  # tau down to 10^-1 (6 targets) at 10: 5 x d
    _run("b", 1, [[1, 10.0]]),  # the start only: tau = 1 at 1 evaluation
]


def test_targets_are_shares_of_the_improvement_over_the_shared_start():
    assert profiles.shared_start(RUNS[0]) == 3
    summary = profiles.report(RUNS)
    assert summary["problems"]["hpo-x"] == {"dim": 2, "f_best": 0.0, "found_by": "a"}
    assert summary["budget_per_dim"] == 5 and summary["budgets_per_dim"] == [1, 2, 5]
    a, b = summary["methods"]["a"], summary["methods"]["b"]
    assert a["runs"] == b["runs"] == 2
    # a, seed 0: tau = 1 at 2 evaluations (1 x d), the other 15 at 3 x d; seed 1: tau = 1 at
    # 0.5 x d, 10^-0.2 at 2 x d. b, seed 0: tau = 1 at 1 x d, five more at 5 x d; seed 1: tau = 1
    # at 0.5 x d
    assert a["ecdf"] == pytest.approx([2 / 32, 3 / 32, 18 / 32])
    assert b["ecdf"] == pytest.approx([2 / 32, 2 / 32, 7 / 32])
    log5 = math.log(5)  # runtimes under 1 x d count as 1 x d: the whole area
    assert a["area"] == pytest.approx((2 * log5 + 15 * (log5 - math.log(3)) + (log5 - math.log(2))) / (32 * log5))
    assert b["area"] == pytest.approx(2 / 32)
    # ranked by the share of pairs reached within the budget: a 18, b 7
    assert summary["ranks"]["mean"] == {"a": 1.0, "b": 2.0}
    printed = profiles.table(summary)
    assert "1 problems, budget 5 x d" in printed and "a | 2 | 0.062 | 0.094 | 0.562 |" in printed
