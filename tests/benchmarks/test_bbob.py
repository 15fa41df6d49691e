"""BBOB problems in the benchmarks' harness: names, known optima, COCO's targets and groups."""
from __future__ import annotations

import numpy as np
import pytest

from experiments.benchmarks import bbob
from experiments.benchmarks.problems import get_function, is_function


def test_names_round_trip_and_a_wrong_one_says_why():
    assert bbob.parse_name(bbob.problem_name(7, 10, 3)) == (7, 10, 3)
    for wrong in ("bbob-f25-d2-i1", "bbob-f0-d2-i1", "bbob-f3-d1-i1", "bbob-f3-d2-i0", "bbob-f3-d2"):
        with pytest.raises(ValueError, match="bbob"):
            bbob.parse_name(wrong)
        assert not is_function(wrong)
    assert is_function("bbob-f24-d20-i5") and is_function("branin") and not is_function("bbob")


def test_coco_targets_are_51_from_100_to_1e_minus_8_above_the_optimum():
    targets = bbob.targets(79.48)
    assert len(targets) == 51
    assert targets[0] == pytest.approx(179.48) and targets[-1] == pytest.approx(79.48 + 1e-8, abs=1e-12)
    assert targets[5] == pytest.approx(79.48 + 10.0)  # k = 1 is the sixth exponent
    assert np.all(np.diff(targets) < 0)


def test_the_five_groups_split_the_24_functions_as_coco_does():
    members = sorted(f for group in bbob.GROUPS.values() for f in group)
    assert members == list(range(1, 25))
    assert bbob.group_of(5) == "separable" and bbob.group_of(6) == "low or moderate conditioning"
    assert bbob.group_of(14) == "high conditioning, unimodal" and bbob.group_of(20).endswith("weak global structure")


def test_a_problem_has_its_optimum_at_its_argmin_and_the_sphere_is_a_sphere():
    pytest.importorskip("ioh")
    sphere = get_function("bbob-f1-d3-i2")
    assert sphere.dim == 3 and sphere.bounds == ((-5.0, 5.0),) * 3
    x_opt = np.array(sphere.argmin)
    assert sphere({"x": x_opt}) == pytest.approx(sphere.minimum)
    x = np.array([1.0, -2.0, 0.5])  # f1 = ||x - x_opt||^2 + f_opt
    assert sphere({"x": x}) == pytest.approx(np.sum((x - x_opt) ** 2) + sphere.minimum)
    other = get_function("bbob-f1-d3-i3")  # another instance moves the optimum and its value
    assert other.minimum != sphere.minimum and other.argmin != sphere.argmin
    for k in range(1, 25):  # every function reaches its optimum value at its optimum
        problem = get_function(f"bbob-f{k}-d2-i1")
        assert problem({"x": np.array(problem.argmin)}) == pytest.approx(problem.minimum, abs=1e-8)


def test_the_parallel_harness_runs_a_bbob_problem():
    pytest.importorskip("ioh")
    from experiments.benchmarks.parallel import run_batches

    run = run_batches("bbob-f3-d2-i1", "sobol", 0, q=4, evals=12)
    minimum = get_function("bbob-f3-d2-i1").minimum
    assert len(run["values"]) == 12 and min(run["values"]) > minimum
