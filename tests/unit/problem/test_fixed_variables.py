"""Fixed variables (``"value"`` instead of a range or options): checked against their type, handed
to every point as a searched value would be, never a column of the encoding, and read against
earlier jobs by the rules of an edited space."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from helpers.experiments import quick_config, write_experiment
from spearmint_nn.daemon.policies.live_config import LiveConfig
from spearmint_nn.errors import ConfigError, ConfigErrors
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.problem.space import ScalarArray, Space
from spearmint_nn.problem.space_edits import EarlierJobs, fit_to_space
from spearmint_nn.search.optimizer import Optimizer

SEARCHED = {"lr": {"type": "FLOAT", "min": 1e-4, "max": 0.1, "scale": "log"},
            "layers": {"type": "INT", "min": 1, "max": 4}}
FIXED = {"batch_size": {"type": "INT", "size": 1, "value": 64},
         "act": {"type": "ENUM", "value": "relu"},
         "widths": {"type": "FLOAT", "size": 2, "value": [0.5, 1]}}


def test_a_fixed_variable_is_no_column_of_the_space():
    space = Space.from_config({**SEARCHED, **FIXED})
    plain = Space.from_config(SEARCHED)
    assert space.dim == plain.dim == 2 and space.n_parameters == 2
    assert [v.name for v in space.variables] == ["lr", "layers"]
    assert [v.name for v in space.fixed] == ["batch_size", "act", "widths"]
    assert space.names == ["lr", "layers", "batch_size", "act", "widths"]
    assert [v.value for v in space.fixed] == [(64,), ("relu",), (0.5, 1.0)]
    assert space.default_initial_design == plain.default_initial_design
    X = space.sobol(4, seed=3)
    assert np.array_equal(X, plain.sobol(4, seed=3))  # the same design as without them


def test_decoding_hands_a_fixed_value_over_in_the_form_of_a_searched_one():
    space = Space.from_config({**SEARCHED, **FIXED, "opt": {"type": "ENUM", "options": ["adam", "sgd"]}})
    point = space.decode(space.sobol(1, seed=0))[0]
    assert list(point) == ["lr", "layers", "batch_size", "act", "widths", "opt"]  # config order
    # an INT of size 1 as a searched INT comes: a ScalarArray of int64; an ENUM a list of strings
    assert type(point["batch_size"]) is type(point["layers"]) is ScalarArray
    assert point["batch_size"].dtype == point["layers"].dtype == np.int64 and int(point["batch_size"]) == 64
    assert point["act"] == ["relu"] and type(point["opt"]) is list
    assert type(point["widths"]) is np.ndarray and point["widths"].tolist() == [0.5, 1.0]
    stored = space.to_json(point)
    assert (stored["batch_size"], stored["act"], stored["widths"]) == ([64], ["relu"], [0.5, 1.0])
    assert type(stored["batch_size"][0]) is type(stored["layers"][0]) is int
    wrapper = space.to_wrapper(space.to_json(point))
    assert type(wrapper["batch_size"]) is ScalarArray and wrapper["act"] == ["relu"]


def test_a_job_gives_every_fixed_variable_at_its_value_and_an_ask_tell_point_may_leave_it_out():
    space = Space.from_config({**SEARCHED, **FIXED})
    given = {"lr": [0.01], "layers": [2]}
    whole = space.completed(given)
    assert whole == {"lr": [0.01], "layers": [2], "batch_size": [64], "act": ["relu"], "widths": [0.5, 1.0]}
    assert space.validate(whole) == space.names and space.active_names(given) == space.names
    assert np.array_equal(space.encode([given]), space.encode([whole]))  # what observe() takes
    with pytest.raises(ConfigError, match=r"^params.batch_size: missing \(its fixed value is 64\)$"):
        space.validate(given)  # a job's params are recorded whole
    with pytest.raises(ConfigError, match=r"^params.batch_size: must be 64, the variable's fixed value \(got 32\)$"):
        space.validate({**whole, "batch_size": [32]})
    with pytest.raises(ConfigError, match=r"^params.act: must be relu, the variable's fixed value \(got tanh\)$"):
        space.encode([{**given, "act": "tanh"}])


@pytest.mark.parametrize("spec, message", [
    ({"type": "INT", "value": 6.5}, "variables.v.value: must hold integers (got 6.5)"),
    ({"type": "FLOAT", "value": "0.1"}, "variables.v.value: must hold finite numbers (got '0.1')"),
    ({"type": "FLOAT", "value": float("nan")}, "variables.v.value: must hold finite numbers (got nan)"),
    ({"type": "ENUM", "value": 3}, "variables.v.value: must hold strings (got 3)"),
    ({"type": "FLOAT", "size": 2, "value": 0.5}, "variables.v.value: must be a list of 2 numbers (got 0.5)"),
    ({"type": "INT", "value": 64, "min": 1, "max": 128},
     "variables.v.value: a fixed variable has no min, max: remove them to hold the variable at its value, or "
     "remove value to search it"),
    ({"type": "ENUM", "value": "relu", "options": ["relu", "tanh"]},
     "variables.v.value: a fixed variable has no options: remove it to hold the variable at its value, or "
     "remove value to search it"),
])
def test_a_wrong_fixed_value_names_its_key(spec, message):
    with pytest.raises(ConfigError) as info:
        Space.from_config({**SEARCHED, "v": spec})
    assert str(info.value) == message


def test_every_variable_fixed_is_refused_and_value_mistakes_come_with_the_others():
    with pytest.raises(ConfigError, match="^variables: every variable is fixed"):
        Space.from_config(FIXED)
    with pytest.raises(ConfigErrors) as info:
        Space.from_config({"lr": {"type": "FLOAT", "min": 1, "max": 0}, "n": {"type": "INT", "value": "8"}})
    assert [problem.path for problem in info.value.each] == ["variables.lr.min", "variables.n.value"]


def test_a_fixed_parent_decides_its_childrens_activity_and_keeps_their_other_branches():
    variables = {"opt": {"type": "ENUM", "value": "sgd"},
                 "momentum": {"type": "FLOAT", "min": 0, "max": 0.99, "when": {"opt": "sgd"}},
                 "beta2": {"type": "FLOAT", "min": 0.9, "max": 0.999, "when": {"opt": "adam"}},
                 "lr": {"type": "FLOAT", "min": 1e-4, "max": 0.1}}
    space = Space.from_config(variables)
    points = space.decode(space.sobol(4, seed=1))
    assert all(set(point) == {"opt", "momentum", "lr"} and point["opt"] == ["sgd"] for point in points)
    assert space.active_names({"lr": [0.01], "momentum": [0.5]}) == ["opt", "momentum", "lr"]
    with pytest.raises(ConfigError, match="^params.beta2: given but inactive"):
        space.encode([{"lr": [0.01], "momentum": [0.5], "beta2": [0.95]}])
    with pytest.raises(ConfigError, match=r"^variables.momentum.when.opt: 3 is not a possible value of opt$"):
        Space.from_config({**variables, "momentum": {**variables["momentum"], "when": {"opt": 3}}})


# ---- earlier jobs: the rules of an edited space ------------------------------------------------

def test_fixing_a_searched_variable_keeps_the_jobs_run_at_its_value():
    space = Space.from_config({**SEARCHED, "batch_size": {"type": "INT", "value": 64}})
    earlier = EarlierJobs(space)
    jobs = [{"lr": [0.01], "layers": [2], "batch_size": [64]}, {"lr": [0.01], "layers": [2], "batch_size": [32]},
            {"lr": [0.02], "layers": [3], "batch_size": [128]}]
    assert [earlier.fit(params) is not None for params in jobs] == [True, False, False]
    assert earlier.outside_line() == (
        "2 earlier jobs lie outside the current variables and are not shown to the model: batch_size not at its "
        "fixed value 64 (2 jobs); they still count against max-finished-jobs")


def test_searching_a_fixed_variable_again_keeps_the_jobs_within_its_range():
    space = Space.from_config({**SEARCHED, "batch_size": {"type": "INT", "min": 16, "max": 128}})
    fit = fit_to_space(space, {"lr": [0.01], "layers": [2], "batch_size": [64]})
    assert fit.params == {"lr": [0.01], "layers": [2], "batch_size": [64]}
    assert fit_to_space(space, {"lr": [0.01], "layers": [2], "batch_size": [256]}).outside == (
        "batch_size above max 128",)


def test_a_new_fixed_variable_needs_a_default_for_the_jobs_run_without_it():
    job = {"lr": [0.01], "layers": [2]}
    assert fit_to_space(Space.from_config({**SEARCHED, "act": {"type": "ENUM", "value": "relu"}}), job).outside == (
        "act missing (no default)",)
    kept = fit_to_space(Space.from_config({**SEARCHED, "act": {"type": "ENUM", "value": "relu", "default": "relu"}}),
                        job)
    assert kept.params == {**job, "act": ["relu"]} and kept.defaulted == ("act",)
    other = fit_to_space(Space.from_config({**SEARCHED, "act": {"type": "ENUM", "value": "relu", "default": "tanh"}}),
                         job)
    assert other.outside == ("act not at its fixed value relu",)  # they ran with tanh


# ---- ask/tell ---------------------------------------------------------------------------------

def test_the_optimizer_suggests_the_fixed_value_and_models_the_searched_ones_only():
    opt = Optimizer({**SEARCHED, **FIXED}, model="gp", seed=0, initial_design=3,
                    model_options={"n_samples": 2, "burn_in": 2, "sweeps_per_fit": 1})
    for _ in range(3):
        (point,) = opt.suggest()
        assert int(point["batch_size"]) == 64 and point["act"] == ["relu"] and point["widths"].tolist() == [0.5, 1.0]
        opt.observe(point, float(np.log10(float(point["lr"]))) ** 2 + float(point["layers"]))
    proposal = opt.propose(1)  # the GP's, fitted on the two searched columns only
    assert proposal.warpings["columns"] == [0, 1] and opt.space.dim == 2
    assert int(proposal.points[0]["batch_size"]) == 64
    best, _ = opt.incumbent
    assert int(best["batch_size"]) == 64 and best["act"] == ["relu"]


def test_a_search_that_gains_a_fixed_variable_proposes_what_it_proposed_without_it():
    def run(variables) -> list[tuple]:
        opt = Optimizer(variables, model="gp", seed=4, initial_design=3,
                        model_options={"n_samples": 2, "burn_in": 2, "sweeps_per_fit": 1})
        points = []
        for _ in range(5):
            (point,) = opt.suggest()
            points.append((float(point["lr"]), int(point["layers"])))
            opt.observe(point, float(np.log10(float(point["lr"])) + 2) ** 2 + float(point["layers"]))
        return points

    assert run({**SEARCHED, **FIXED}) == run(SEARCHED)


def test_a_fixed_value_edited_while_the_daemon_runs_waits_for_a_restart(tmp_path):
    config = quick_config(variables={**SEARCHED, "batch_size": {"type": "INT", "value": 64}})
    folder = write_experiment(tmp_path / "exp", config, {"wrapper.py": "def main(job_id, params):\n    return 0.0\n"})
    live = LiveConfig(ExperimentPaths(folder))
    running = load_config(folder)

    def edit(value, later_s: int) -> list[tuple[str, str]]:
        config["variables"]["batch_size"]["value"] = value
        (folder / "config.json").write_text(json.dumps(config))
        mtime = (folder / "config.json").stat().st_mtime_ns + later_s * 10**9  # seen as changed however fast
        os.utime(folder / "config.json", ns=(mtime, mtime))
        return live.edit(running).lines()

    assert edit(128, 1) == [("warning", "config.json changed variables: noticed but not applied while running; "
                                        "stop the daemon and run again for that")]
    (kind, line), = edit(6.5, 2)
    assert kind == "warning" and "variables.batch_size.value: must hold integers (got 6.5)" in line
