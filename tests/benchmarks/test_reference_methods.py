"""The reference methods set up as their authors recommend: TuRBO's trust region, SMAC3's
black-box facade and Optuna's samplers, each through the harness's Method interface."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from experiments.benchmarks.parallel_methods import make_method
from experiments.benchmarks.turbo import TurboState
from spearmint_nn.problem.space import Space


def test_turbo_tolerances_are_the_tutorials():
    assert TurboState(dim=10, batch_size=2).failure_tolerance == 5  # ceil(max(4 / 2, 10 / 2))
    assert TurboState(dim=2, batch_size=1).failure_tolerance == 4  # ceil(max(4 / 1, 2 / 1))
    assert TurboState(dim=20, batch_size=50).failure_tolerance == 1
    state = TurboState(dim=2, batch_size=1)
    assert (state.length, state.success_tolerance) == (0.8, 10)


def test_turbo_region_doubles_after_ten_successes_halves_after_failures_and_restarts_below_its_minimum():
    state = TurboState(dim=2, batch_size=1, best_value=1.0)
    for k in range(10):
        state.update([1.0 + 0.01 * (k + 1)])  # each beats the best by more than 1e-3 of it
    assert state.length == pytest.approx(1.6) and state.success_counter == 0
    state.update([1.1])  # 1.1 < 1.1 + 1e-3 * 1.1: no improvement
    assert state.failure_counter == 1 and state.length == pytest.approx(1.6)
    for _ in range(3):
        state.update([0.0])
    assert state.length == pytest.approx(0.8) and state.failure_counter == 0
    for _ in range(4 * 7):  # 0.8 / 2^7 < 0.5^7: seven halvings later it restarts
        state.update([0.0])
    assert state.restart_triggered and state.length == pytest.approx(0.8 / 2**7)


def _sphere(space: Space, params: dict) -> float:
    return float(np.sum((space.encode([params])[0] - 0.3) ** 2))


def test_turbo_proposes_in_its_region_and_forgets_it_after_a_restart():
    pytest.importorskip("botorch")
    space = Space.from_config({"x": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0}})
    turbo = make_method("turbo", space, 0, 40, 2)
    design = space.decode(space.sobol(2, seed=0))  # the harness's shared start
    for params in design:
        turbo.observe(params, _sphere(space, params))
    more = turbo.propose(2, [])  # 2 d = 4 design points before the model: two more of the sequence
    assert np.allclose(space.encode(more), space.sobol(4, seed=0)[2:])
    for params in more:
        turbo.observe(params, _sphere(space, params))
    centre = space.encode(design + more)[np.argmin([_sphere(space, p) for p in design + more])]
    turbo.state.length = 0.01
    batch = turbo.propose(2, [])
    # the box's sides are the lengthscales (ratio at most 4 / 0.005) at geometric mean one, times
    # the length: in 2-D none is over sqrt(800) times it
    assert np.all(np.abs(space.encode(batch) - centre) <= 0.01 * math.sqrt(800) / 2)
    assert np.all(np.abs(space.encode(batch) - centre) > 0)  # d = 2: every coordinate is perturbed
    turbo.state.length = turbo.state.length_min * 1.01
    turbo.state.failure_counter = turbo.state.failure_tolerance - 1
    old = turbo.propose(2, [])  # still running when the region restarts
    for params in batch:
        turbo.observe(params, 10.0)  # a failed batch: the length halves below its minimum
    assert turbo.restarts == 1 and turbo._y == []
    for params in old:
        turbo.observe(params, 0.0)  # a result of the old region does not count in the new one
    assert turbo._y == []
    fresh = turbo.propose(3, [])
    assert np.allclose(space.encode(fresh), space.sobol(3, seed=1000)[:3])


def test_turbo_models_a_region_whose_values_are_all_the_same():
    # an error rate on a plateau: the tutorial's standardisation would divide by a zero spread
    pytest.importorskip("botorch")
    space = Space.from_config({"x": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0}})
    turbo = make_method("turbo", space, 0, 40, 4)
    for params in space.decode(space.sobol(4, seed=0)):
        turbo.observe(params, 0.25)
    batch = space.encode(turbo.propose(2, []))
    assert batch.shape == (2, 2) and np.all(np.isfinite(batch)) and np.all((batch >= 0) & (batch <= 1))


def test_turbo_proposes_with_its_initial_hyperparameters_when_every_fit_fails(monkeypatch):
    pytest.importorskip("botorch")
    from botorch.exceptions.errors import ModelFittingError

    def fail(*args, **kwargs):
        raise ModelFittingError("All attempts to fit the model have failed.")

    monkeypatch.setattr("botorch.fit.fit_gpytorch_mll", fail)  # as a decision tree's plateaus made it
    space = Space.from_config({"x": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0}})
    turbo = make_method("turbo", space, 0, 40, 4)
    for params in space.decode(space.sobol(4, seed=0)):
        turbo.observe(params, _sphere(space, params))
    with pytest.warns(RuntimeWarning, match="every fit of the region's GP failed"):
        batch = space.encode(turbo.propose(2, []))
    assert batch.shape == (2, 2) and np.all((batch >= 0) & (batch <= 1))


def test_optuna_samplers_are_set_as_their_documentation_recommends():
    optuna = pytest.importorskip("optuna")
    space = Space.from_config({"x": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0}})
    tpe = make_method("optuna-tpe", space, 0, 20, 2).study.sampler
    assert isinstance(tpe, optuna.samplers.TPESampler)
    assert tpe._multivariate and tpe._constant_liar
    gp = make_method("optuna-gp", space, 0, 20, 2).study.sampler
    assert isinstance(gp, optuna.samplers.GPSampler) and gp._deterministic


def test_smac_black_box_facade_runs_ask_and_tell_and_leaves_no_files(tmp_path, monkeypatch):
    pytest.importorskip("smac")
    from experiments.benchmarks.smac_method import SmacBlackBox

    monkeypatch.chdir(tmp_path)
    space = Space.from_config({"x": {"type": "FLOAT", "size": 2, "min": -5.0, "max": 5.0}})
    method = make_method("smac-bb", space, 0, 20, 3)
    assert isinstance(method, SmacBlackBox)
    assert type(method.smac).__name__ == "BlackBoxFacade"
    output = method._output.name
    for params in space.decode(space.sobol(3, seed=0)):
        method.observe(params, _sphere(space, params))
    points = method.propose(2, [])
    assert len(points) == 2 and all(np.all(np.abs(np.asarray(p["x"])) <= 5.0) for p in points)
    for params in points:
        method.observe(params, _sphere(space, params))
    assert len(method.smac.runhistory) == 5 and os.path.isdir(output)
    del method
    assert not os.path.exists(output) and os.listdir(tmp_path) == []
