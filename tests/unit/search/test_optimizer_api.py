"""The Optimizer's Python API: refused observations change nothing, handed-out points stay
pending until observed, maximisation, tasks as config.json writes them, clear errors for wrong
arguments, scalar values for size-1 variables, its construction from a Space and settings (or
keywords for them), and propose's Suggestion."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from spearmint_nn.errors import ConfigError
from spearmint_nn.problem.settings import SearchSettings
from spearmint_nn.problem.space import Space
from spearmint_nn.problem.tasks import Tasks
from spearmint_nn.search.candidates import point_key
from spearmint_nn.search import optimizer as optimizer_module
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.model_store import ModelStore
from spearmint_nn.search.policy import AUTO_GP_MAX_IN_FLIGHT

torch.set_num_threads(1)

SQUARE = {"x": {"type": "FLOAT", "min": 0, "max": 1}, "y": {"type": "FLOAT", "min": 0, "max": 1}}
QUICK_GP = {"n_samples": 2, "burn_in": 2, "sweeps_per_fit": 1}


def bowl(p) -> float:
    return float((p["x"][0] - 0.3) ** 2 + (p["y"][0] - 0.6) ** 2)


def keys(opt: Optimizer, points) -> list[tuple]:
    return [point_key(row) for row in opt.space.encode(list(points))]


# ------------------------------------------------------------------------- refused observations

@pytest.mark.parametrize("value, error", [
    ("1.5", ValueError),                      # not a number
    ({"main": 1.0, "mian": 2.0}, ValueError),  # unknown task
    ({"main": [1.0, 2.0]}, ValueError),        # not a number either
])
def test_a_refused_value_leaves_the_optimizer_unchanged(exact_gp, value, error):
    opt = Optimizer(SQUARE, model=exact_gp, seed=0, initial_design=3)
    for params in opt.suggest(4):
        opt.observe(params, bowl(params))
    params = opt.suggest(1)[0]
    with pytest.raises(error):
        opt.observe(params, value)
    with pytest.raises(ValueError):
        opt.observe(params, 1.0, duration="ten seconds")
    assert opt.n_observed == 4 and len(opt._data.objective) == 4 and len(opt._data.durations) == 4
    assert keys(opt, opt.pending) == keys(opt, [params])  # still awaiting its result
    opt.observe(params, bowl(params))
    assert opt.n_observed == 5 and opt.pending == []
    assert len(opt.suggest(2)) == 2  # used to raise IndexError: a point without its value


def test_params_outside_the_space_are_refused_before_anything_is_recorded():
    opt = Optimizer(SQUARE, model="sobol", seed=0)
    with pytest.raises(ConfigError):
        opt.observe({"x": [2.0], "y": [0.5]}, 1.0)
    with pytest.raises(ConfigError):
        opt.observe({"x": [0.5]}, 1.0)
    assert opt.n_observed == 0 and opt.incumbent is None


# ----------------------------------------------------------------------- remembered pending jobs

def test_handed_out_points_are_pending_until_observed(exact_gp):
    opt = Optimizer(SQUARE, model=exact_gp, seed=1, initial_design=3)
    for params in opt.suggest(5):
        opt.observe(params, bowl(params))
    first = opt.suggest(1)
    second = opt.suggest(1)  # the first is running: the model fantasises it and avoids it
    assert keys(opt, first) != keys(opt, second)
    assert keys(opt, opt.pending) == keys(opt, first + second)
    opt.observe(second[0], bowl(second[0]))
    assert keys(opt, opt.pending) == keys(opt, first)
    assert opt.forget(first[0]) and not opt.forget(first[0]) and opt.pending == []


def test_a_point_both_remembered_and_passed_as_pending_counts_once():
    opt = Optimizer(SQUARE, seed=2)  # "auto" switches to DNGO above AUTO_GP_MAX_IN_FLIGHT in flight
    running = opt.suggest(AUTO_GP_MAX_IN_FLIGHT - 1)
    opt.suggest(1, pending=running)  # 19 remembered, the same 19 passed, 1 new: 20 in flight
    assert opt.surrogate_name == "gp"
    assert len(opt.pending) == AUTO_GP_MAX_IN_FLIGHT
    elsewhere = [{"x": [0.5], "y": [0.5]}]
    batch = opt.suggest(1, pending=elsewhere)  # pending passed explicitly are used in addition
    assert keys(opt, batch) != keys(opt, elsewhere) and opt.surrogate_name == "dngo"


def test_points_chosen_before_there_is_anything_to_model_are_labelled_sobol():
    # A daemon's first call fills every worker: past the initial design of 3 nothing is observed
    # yet, so the rest are Sobol points too, and the reports must not credit them to a model.
    opt = Optimizer(SQUARE, seed=2, initial_design=3)
    assert opt.propose(8).chosen_by == ["sobol"] * 8


# ------------------------------------------------------------------------------------ direction

def test_maximize_negates_the_objective_and_reports_in_the_users_sign(exact_gp):
    opt = Optimizer(SQUARE, model=exact_gp, seed=3, initial_design=4, direction="maximize")
    values = []
    for _ in range(14):
        params = opt.suggest(1)[0]
        values.append(5.0 - bowl(params))  # highest, 5, at (0.3, 0.6)
        opt.observe(params, values[-1])
    params, value = opt.incumbent
    assert value == max(values) and 5.0 - bowl(params) == value
    assert value > 4.99  # the search went up, not down


def test_maximize_leaves_constraints_alone_and_accepts_spearmint_dict_values():
    tasks = {"f": "OBJECTIVE", "c": "CONSTRAINT"}
    opt = Optimizer(SQUARE, model="sobol", seed=0, tasks=tasks, direction="MAXIMIZE")
    points = opt.suggest(3)
    opt.observe(points[0], {"f": 10.0, "c": -1.0})  # the highest, but infeasible
    opt.observe(points[1], {"f": 3.0, "c": 0.5})
    opt.observe(points[2], {"f": 7.0, "c": 0.0})
    params, value = opt.incumbent
    assert value == 7.0 and keys(opt, [params]) == keys(opt, points[2:])
    assert opt.settings.direction == "maximize"


# ------------------------------------------------------------------------- tasks and arguments

def test_tasks_as_written_in_config_json_are_accepted_with_their_likelihoods():
    tasks = {"main": {"type": "OBJECTIVE"}, "c": {"type": "CONSTRAINT", "likelihood": "NOISELESS"}}
    opt = Optimizer(SQUARE, model="sobol", tasks=tasks)
    assert opt.settings.tasks == Tasks(objective="main", constraints=("c",), likelihoods={"c": "NOISELESS"})
    # likelihoods= says otherwise for c; a task object's Spearmint run keys are accepted
    tasks["main"]["main-file"] = "wrapper.py"
    opt = Optimizer(SQUARE, model="sobol", tasks=tasks, likelihoods={"c": "gaussian", "main": "NOISELESS"})
    assert opt.settings.tasks.likelihoods == {"c": "GAUSSIAN", "main": "NOISELESS"}
    mixed = Optimizer(SQUARE, model="sobol", tasks={"f": "objective", "c": {"type": "constraint"}})
    assert mixed.settings.tasks.objective == "f" and mixed.settings.tasks.constraints == ("c",)


@pytest.mark.parametrize("kwargs, path", [
    ({"tasks": {"main": {"type": "OBJECTIV"}}}, "tasks.main.type"),
    ({"tasks": {"main": {"likelihood": "NOISELESS"}}}, "tasks.main.type"),
    ({"tasks": {"main": {"type": "OBJECTIVE", "likelihod": "NOISELESS"}}}, "tasks.main.likelihod"),
    ({"tasks": {"main": {"type": "OBJECTIVE", "likelihood": "LOUD"}}}, "tasks.main.likelihood"),
    ({"tasks": {"main": 3}}, "tasks.main"),
    ({"tasks": {"c": "CONSTRAINT"}}, "tasks"),
    ({"tasks": {"a": "OBJECTIVE", "b": "OBJECTIVE"}}, "tasks"),
    ({"tasks": ["main"]}, "tasks"),
    ({"tasks": {}}, "tasks"),
    ({"likelihoods": {"mian": "NOISELESS"}}, "likelihoods.mian"),
    ({"likelihoods": {"main": "LOUD"}}, "likelihoods.main"),
    ({"likelihoods": "NOISELESS"}, "likelihoods"),
    ({"direction": "minimise"}, "direction"),
    ({"direction": -1}, "direction"),
    ({"model": ["gp"]}, "model"),
    ({"fantasies": "3"}, "fantasies"),
    ({"initial_design": -1}, "initial_design"),
    ({"seed": 1.5}, "seed"),
    ({"budget": 0}, "budget"),
    ({"model_options": "fast"}, "model_options"),
])
def test_every_wrong_argument_is_a_config_error_naming_it(kwargs, path):
    with pytest.raises(ConfigError) as error:
        Optimizer(SQUARE, **{"model": "sobol", **kwargs})
    assert error.value.path == path, str(error.value)


def test_variables_that_are_not_a_dict_are_a_config_error():
    with pytest.raises(ConfigError) as error:
        Optimizer([("x", {"type": "FLOAT", "min": 0, "max": 1})])
    assert error.value.path == "variables"


def test_suggest_refuses_a_negative_or_non_integer_count():
    opt = Optimizer(SQUARE, model="sobol", seed=0)
    for n in (-1, 1.5, "2"):
        with pytest.raises(ValueError):
            opt.suggest(n)
    assert opt.suggest(0) == [] and opt.pending == []


# ----------------------------------------------------------------------------------- scalars

def test_size_one_variables_take_plain_numbers():
    opt = Optimizer({"x": {"type": "FLOAT", "min": 0, "max": 2}, "n": {"type": "INT", "min": 0, "max": 5}},
                    model="sobol", seed=0)
    opt.observe({"x": 1.5, "n": 2}, 0.5)
    opt.observe({"x": np.float64(0.5), "n": np.int64(3)}, np.float32(0.25))
    params, value = opt.incumbent
    assert value == 0.25 and float(params["x"][0]) == 0.5 and int(params["n"][0]) == 3
    assert not math.isnan(opt._data.objective[0])



def test_a_tensor_or_array_of_one_element_is_observed_as_its_number():
    """``observe(params, loss)`` for ``loss.item()`` (a tensor was refused)."""
    opt = Optimizer(SQUARE, model="sobol", seed=0, tasks={"main": "OBJECTIVE", "c": "CONSTRAINT"})
    values = [torch.tensor(0.5), torch.tensor([[0.25]], requires_grad=True), np.float32(0.125), np.array([2.0]),
              {"main": torch.tensor(0.75, dtype=torch.float64), "c": np.array(-1.0)}]
    for params, value in zip(opt.suggest(len(values)), values):
        opt.observe(params, value, duration=torch.tensor(3.0))
    assert opt._data.objective == [0.5, 0.25, 0.125, 2.0, 0.75] and opt._data.durations == [3.0] * 5
    assert opt._data.constraints["c"][-1] == -1.0


@pytest.mark.parametrize("value, message", [
    (torch.tensor([1.0, 2.0]),
     "task 'main': expected one number (e.g. loss.item()), NaN or None, got Tensor of 2 values tensor([1., 2.])"),
    (np.zeros(3), "task 'main': expected one number (e.g. loss.item()), NaN or None, got ndarray of 3 values "
                  "array([0., 0., 0.])"),
    ("1.5", "task 'main': expected a number, NaN or None, got str '1.5'"),
    ({"main": [1.0, 2.0]}, "task 'main': expected a number, NaN or None, got list [1.0, 2.0]"),
])
def test_a_value_that_is_not_one_number_is_refused_saying_what_to_give(value, message):
    opt = Optimizer(SQUARE, model="sobol", seed=0)
    params = opt.suggest(1)[0]
    with pytest.raises(ValueError) as error:
        opt.observe(params, value)
    assert str(error.value) == message
    assert opt.n_observed == 0 and keys(opt, opt.pending) == keys(opt, [params])


@pytest.mark.parametrize("duration", [-1.0, math.nan, math.inf, np.float64(-0.5), torch.tensor([1.0, 2.0]), True])
def test_a_duration_that_is_not_seconds_is_refused_and_changes_nothing(duration):
    """As the docstring says (negative and NaN durations used to be recorded)."""
    opt = Optimizer(SQUARE, model="sobol", seed=0)
    params = opt.suggest(1)[0]
    with pytest.raises(ValueError, match=r"^duration: expected a number of seconds >= 0 or None, got "):
        opt.observe(params, 0.5, duration=duration)
    assert opt.n_observed == 0 and opt._data.durations == [] and keys(opt, opt.pending) == keys(opt, [params])
    opt.observe(params, 0.5, duration=0)
    assert opt._data.durations == [0.0]


def test_observing_a_point_again_warns_naming_it_and_keeps_both_values():
    opt = Optimizer(SQUARE, model="sobol", seed=0)
    first, second = opt.suggest(2)
    opt.observe(first, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a new point: no warning
        opt.observe(second, 0.9)
    with pytest.warns(UserWarning) as record:
        opt.observe({"x": float(first["x"][0]), "y": float(first["y"][0])}, 0.7)
    x, y = float(first["x"][0]), float(first["y"][0])
    assert [str(w.message) for w in record] == [
        f"observe: x={x:.6g}, y={y:.6g} was observed before; this value is kept as a repeated measurement of "
        "that point (the models see both)"]
    assert record[0].filename == __file__  # points at the caller's line
    assert opt.n_observed == 3 and opt._data.objective == [0.5, 0.9, 0.7] and opt.incumbent[1] == 0.5

def test_revise_replaces_a_failure_by_its_late_value_and_the_model_refits_to_it(exact_gp):
    """A job first told as failed (NaN), whose value came later: revised in place, the point
    counts once, as a success, and the next proposal's refit sees the value."""
    opt = Optimizer(SQUARE, model=exact_gp, seed=0, initial_design=4)
    design = opt.suggest(4)
    for p in design[:3]:
        opt.observe(p, bowl(p))
    opt.observe(design[3], math.nan, duration=None)
    assert opt.propose(1).refit_seconds is not None
    assert opt.models.objective.X.shape[0] == 3 and not opt.feasible_mask()[3]
    late = -1.0  # lower than every bowl value: the incumbent once revised
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not a repeated measurement
        opt.revise(3, late, duration=12.5)
    assert opt.n_observed == 4 and opt.feasible_mask().all()
    assert opt.incumbent[1] == late and keys(opt, [opt.incumbent[0]]) == keys(opt, [design[3]])
    again = opt.propose(1)
    assert again.refit_seconds is not None  # same count of observations, new data: refitted
    assert opt.models.objective.X.shape[0] == 4
    assert opt._data.durations[3] == 12.5


def test_a_refused_revision_changes_nothing():
    opt = Optimizer(SQUARE, model="sobol", seed=0)
    point = opt.suggest(1)[0]
    opt.observe(point, math.nan)
    for index, value, error in [(1, 0.5, IndexError), (-1, 0.5, IndexError), (0, "0.5", ValueError),
                                (0, {"mian": 0.5}, ValueError)]:
        with pytest.raises(error):
            opt.revise(index, value)
    with pytest.raises(ValueError):
        opt.revise(0, 0.5, duration=-1.0)
    assert opt.n_observed == 1 and math.isnan(opt._data.objective[0]) and math.isnan(opt._data.durations[0])


# ----------------------------------------------------------------------------- torch threads

def _suggestions_with_caller_threads(caller_threads: int, **settings) -> tuple[list[tuple[float, float]], int]:
    """Six DNGO suggestions (five Sobol points, then the model's) made while the caller runs
    with ``caller_threads`` torch threads, and the caller's thread count after them."""
    before = torch.get_num_threads()
    torch.set_num_threads(caller_threads)
    try:
        opt = Optimizer(SQUARE, model="dngo", seed=0, initial_design=5, model_options={"train_steps": 200},
                        **settings)
        points = []
        for _ in range(6):
            params = opt.suggest(1)[0]
            opt.observe(params, bowl(params))
            points.append((float(params["x"][0]), float(params["y"][0])))
        return points, torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_a_seed_gives_the_same_suggestions_whatever_the_callers_torch_threads():
    """The model's work runs on the Optimizer's own one thread: a training loop with two threads
    gets the suggestions a one-thread process gets (the model's sixth differed before), and keeps its two."""
    with_one, after_one = _suggestions_with_caller_threads(1)
    with_two, after_two = _suggestions_with_caller_threads(2)
    assert with_two == with_one
    assert (after_one, after_two) == (1, 2)


def test_torch_threads_applies_to_the_optimizers_work_only(exact_gp, monkeypatch):
    """An explicit count is what the acquisition is maximised with, and the caller's is
    restored after each call (it used to be set for the whole process)."""
    seen, maximize = [], optimizer_module.maximize

    def maximize_counting_threads(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return maximize(*args, **kwargs)

    monkeypatch.setattr(optimizer_module, "maximize", maximize_counting_threads)
    opt = Optimizer(SQUARE, model=exact_gp, seed=0, initial_design=3, torch_threads=2)
    for params in opt.suggest(4):
        opt.observe(params, bowl(params))
    opt.suggest(1)
    assert seen == [2] and torch.get_num_threads() == 1


# ---- the Optimizer's construction -----------------------------------------------------------------

def test_the_optimizer_takes_a_space_and_settings_or_keywords_for_them():
    space = Space.from_config(SQUARE)
    settings = SearchSettings(model="sobol", seed=3)
    opt = Optimizer(space, settings)
    assert opt.space is space and opt.settings is settings
    by_keywords = Optimizer(SQUARE, model="sobol", seed=3)
    assert np.array_equal(space.encode(by_keywords.suggest(4)), space.encode(opt.suggest(4)))
    with pytest.raises(TypeError):
        Optimizer(space, settings, seed=4)  # settings or keywords, not both
    with pytest.raises(ConfigError, match=r"^modle: not a keyword of the Optimizer \(did you mean 'model'\?\)$"):
        Optimizer(space, modle="gp")  # not a setting
    with pytest.raises(TypeError):
        Optimizer(space, state=ModelStore("a"), state_dir="b")


def test_set_budget_replaces_the_setting_and_checks_it():
    opt = Optimizer(SQUARE, model="sobol")
    opt.set_budget(30)
    assert opt.settings.budget == 30 and opt.models.settings is opt.settings  # passed on to the models
    with pytest.raises(ConfigError, match="^budget:"):
        opt.set_budget(0)
    assert opt.settings.budget == 30


# ---- propose's Suggestion --------------------------------------------------------------------------

def test_propose_tells_when_it_refitted_and_suggest_returns_its_points():
    opt = Optimizer(SQUARE, model="gp", seed=0, initial_design=3, model_options=QUICK_GP)
    design = opt.propose(3)
    assert len(design.points) == 3 and design.refit_seconds is None and design.warpings is None
    assert design.n_observed == 0 and design.segment_start == 0 and design.predicted_durations == [None] * 3
    for p in design.points:
        opt.observe(p, bowl(p))
    first = opt.propose(1)
    assert first.refit_seconds is not None and first.refit_seconds == opt.last_fit_seconds
    assert first.warpings == opt.warpings and first.warpings["columns"] == [0, 1]
    assert first.seconds == opt.last_suggest_seconds >= first.refit_seconds
    again = opt.propose(1)  # nothing new observed: no refit, no new warpings
    assert again.refit_seconds is None and again.warpings is None and again.n_observed == 3
    twin = Optimizer(SQUARE, model="gp", seed=0, initial_design=3, model_options=QUICK_GP)
    assert np.array_equal(opt.space.encode(twin.suggest(3)), opt.space.encode(design.points))
