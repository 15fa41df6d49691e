"""The transfer benchmark's problems and bookkeeping: the related task is a warped copy whose
optimum moved, the unrelated one shares the inputs only, and the table counts evaluations to
the single-task row's value."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spearmint_nn.benchmarks import transfer
from spearmint_nn.benchmarks.functions import FUNCTIONS


def test_the_related_hartmann_is_a_warped_copy_whose_optimum_moved():
    problem = transfer.PROBLEMS["hartmann6"]
    optimum = np.asarray(FUNCTIONS["hartmann6"].argmin)
    moved = np.concatenate([np.sqrt(optimum[:3]), 1 - np.sqrt(1 - optimum[3:])])  # T^-1 of the optimum
    assert problem.related({"x": moved.tolist()}) == pytest.approx(2 * FUNCTIONS["hartmann6"].minimum + 1, abs=1e-3)
    assert problem.related({"x": optimum.tolist()}) > 2 * FUNCTIONS["hartmann6"].minimum + 1 + 1.0
    assert np.abs(moved - optimum).max() > 0.2


def test_the_unrelated_task_is_levy_over_the_unit_cube():
    function = transfer.unrelated(transfer.PROBLEMS["hartmann6"])
    assert function({"x": [0.55] * 6}) == pytest.approx(0.0, abs=1e-9)  # Levy's minimum at 1 = -10 + 20 * 0.55
    assert function({"x": [0.1] * 6}) > 10


def test_evaluations_to_reach_and_the_summary():
    assert transfer.evaluations_to_reach([3.0, 2.0, 1.0], 2.0) == 2
    assert transfer.evaluations_to_reach([3.0, 2.5], 2.0) == math.inf
    runs = [{"problem": "p", "row": row, "seed": seed, "values": values, "suggest_seconds": [0.1], "correlation": corr}
            for row, seed, values, corr in [
                ("single", 0, [5, 4, 3, 2], None), ("single", 1, [5, 4, 2, 3], None),
                ("multi-task-warped", 0, [5, 2, 2, 2], (0.9, 0.05)), ("multi-task-warped", 1, [2.4, 2, 2, 2], (0.8, 0.1)),
                ("multi-task-warped@7", 0, [5, 5, 5, 5], (0.1, 0.2))]]
    rows = {r["row"]: r for r in transfer.summarise(runs, budget=4)}
    assert list(rows) == ["single", "multi-task-warped", "multi-task-warped@7"]
    assert rows["single"]["target"] == 2.0 and rows["single"]["evaluations_to_target"] == 3.5
    assert rows["multi-task-warped"]["evaluations_to_target"] == 2 and rows["multi-task-warped"]["reached"] == 2
    assert rows["multi-task-warped@7"]["reached"] == 0
    assert rows["multi-task-warped"]["correlation"] == pytest.approx(0.85)
    text = transfer.table(list(rows.values()), budget=4)
    assert "> 4" in text and "+0.85" in text


@pytest.mark.slow
def test_a_short_run_of_every_row_uses_what_it_should():
    earlier = transfer.related_search("hartmann6", "related", 0, budget=4)["results"]
    assert len(earlier) == 4 and all(len(params["x"]) == 6 for params, _ in earlier)
    single = transfer.current_search("hartmann6", "single", 0, 4, None)
    warped = transfer.current_search("hartmann6", "multi-task-warped@2", 0, 4, earlier)  # a model after 2 points
    assert single["correlation"] is None and warped["correlation"] is not None
    assert len(single["values"]) == len(warped["values"]) == 4
    assert single["values"][:2] != warped["values"][:2] or single["values"][2:] != warped["values"][2:]
