"""Where a proposal may go: point identity, the keep-away rules and a large batch's crowding."""
from __future__ import annotations

import numpy as np

from spearmint_nn.problem.space import Space
from spearmint_nn.search.candidates import CROWDING_MIN_IN_FLIGHT, KeepAway, both, crowding, free_mask, point_key


def test_avoided_rows_are_found_by_their_point_keys():
    """The vectorised key check agrees with point_key row by row."""
    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    X[45] = -0.0 * X[45]  # a negative zero is the same point as a zero
    avoid = {point_key(row) for row in X[:40]} | {point_key(np.zeros(3))}
    expected = np.array([point_key(row) not in avoid for row in X])
    np.testing.assert_array_equal(free_mask(X, avoid), expected)
    assert not expected[:40].any() and not expected[45] and expected[40:45].all()


def test_keep_away_rules_out_a_neighbourhood_once_it_holds_cap_points_and_both_rules_hold():
    points = np.array([[0.5, 0.5], [0.52, 0.5], [0.9, 0.9]])
    X = np.array([[0.51, 0.5], [0.9, 0.91], [0.1, 0.1]])
    assert KeepAway(points, 0.05).allows(X).tolist() == [False, False, True]
    crowded = KeepAway(points, 0.05, cap=2)
    assert crowded.neighbours(X).tolist() == [2, 1, 0] and crowded.allows(X).tolist() == [False, True, True]
    near_origin = KeepAway(np.array([[0.1, 0.12]]), 0.05)
    assert both(crowded, near_origin).allows(X).tolist() == [False, True, False]
    assert both(None, near_origin) is near_origin and both(crowded, None) is crowded


def test_crowding_caps_a_share_of_a_large_batch_in_one_place():
    space = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1, "size": 4}})
    pending = np.full((60, 4), 0.5)
    assert crowding(space, pending[:40], 10, 0.25) is None  # 50 in flight: no limit
    assert crowding(space, pending, 20, 0.0) is None
    rule = crowding(space, pending, 20, 0.25)
    assert rule.cap == 20 and rule.radius == 0.2  # a quarter of 80; 0.1 sqrt(4)
    assert rule.allows(np.array([[0.5, 0.5, 0.5, 0.6], [0.5, 0.5, 0.5, 0.75]])).tolist() == [False, True]
    assert CROWDING_MIN_IN_FLIGHT == 50
