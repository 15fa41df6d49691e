"""The transfer benchmark's problems and bookkeeping: the related task is a warped copy whose
optimum moved, the unrelated one a short-length-scale random function of the same inputs, and
the table counts evaluations to the single-task row's value."""
from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.benchmarks import transfer
from experiments.benchmarks.functions import FUNCTIONS


def test_the_related_hartmann_is_a_warped_copy_whose_optimum_moved():
    problem = transfer.PROBLEMS["hartmann6"]
    optimum = np.asarray(FUNCTIONS["hartmann6"].argmin)
    moved = np.concatenate([np.sqrt(optimum[:3]), 1 - np.sqrt(1 - optimum[3:])])  # T^-1 of the optimum
    assert problem.related({"x": moved.tolist()}) == pytest.approx(2 * FUNCTIONS["hartmann6"].minimum + 1, abs=1e-3)
    assert problem.related({"x": optimum.tolist()}) > 2 * FUNCTIONS["hartmann6"].minimum + 1 + 1.0
    assert np.abs(moved - optimum).max() > 0.2


def test_the_unrelated_task_shares_no_shape_with_the_current_one():
    problem = transfer.PROBLEMS["hartmann6"]
    X = np.random.default_rng(0).random((400, 6))
    current = np.array([problem.current({"x": x.tolist()}) for x in X])
    draws = [transfer.unrelated(problem, seed) for seed in range(3)]
    values = np.array([[f({"x": x.tolist()}) for x in X] for f in draws])
    assert values.std(1) == pytest.approx(1.0, abs=0.25)  # the GP draw's unit variance
    for row in values:
        assert abs(np.corrcoef(row, current)[0, 1]) < 0.15
    assert abs(np.corrcoef(values[0], values[1])[0, 1]) < 0.15  # each seed its own draw
    assert draws[0]({"x": X[0].tolist()}) == transfer.unrelated(problem, 0)({"x": X[0].tolist()})
    # a smooth draw: points 0.01 apart are nearly equal
    near = [(f({"x": x.tolist()}), f({"x": (x + 0.01).tolist()})) for f in draws for x in X[:100] * 0.9]
    assert np.corrcoef(np.array(near).T)[0, 1] > 0.95


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
