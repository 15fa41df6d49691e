"""Earlier jobs read against an edited search space: which ones the model can still use, and why not."""
from spearmint_nn.problem.space import Space
from spearmint_nn.problem.space_edits import EarlierJobs, fit_to_space

EDITED = {
    "lr": {"type": "FLOAT", "min": 1e-4, "max": 0.1, "scale": "log"},
    "layers": {"type": "INT", "min": 2, "max": 4},
    "act": {"type": "ENUM", "options": ["relu", "tanh"]},
    "opt": {"type": "ENUM", "options": ["adam", "sgd"], "default": "adam"},
    "momentum": {"type": "FLOAT", "min": 0, "max": 1, "when": {"opt": "sgd"}},  # new, no default needed
}


def test_a_job_inside_the_edited_space_is_kept_with_defaults_and_without_removed_variables():
    fit = fit_to_space(Space.from_config(EDITED), {"lr": [0.01], "layers": [3], "act": ["relu"], "dropout": [0.5]})
    assert fit.params == {"lr": [0.01], "layers": [3], "act": ["relu"], "opt": ["adam"]}
    assert fit.dropped == ("dropout",) and fit.defaulted == ("opt",) and fit.outside == ()


def test_a_new_variable_without_a_default_keeps_the_job_out_unless_it_is_inactive():
    space = Space.from_config({**EDITED, "wd": {"type": "FLOAT", "min": 0, "max": 1}})
    assert fit_to_space(space, {"lr": [0.01], "layers": [3], "act": ["relu"]}).outside == ("wd missing (no default)",)
    conditional = Space.from_config({**EDITED, "opt": {**EDITED["opt"], "default": "sgd"}})
    assert fit_to_space(conditional, {"lr": [0.01], "layers": [3], "act": ["relu"]}).outside == (
        "momentum missing (no default)",)  # active under the default parent: a child needs a value too


def test_one_line_names_each_variable_and_bound_with_its_jobs():
    earlier = EarlierJobs(Space.from_config(EDITED))
    jobs = [{"lr": [0.5], "layers": [3], "act": ["relu"]}, {"lr": [0.2], "layers": [1], "act": ["relu"]},
            {"lr": [0.01], "layers": [3], "act": ["gelu"]}, {"lr": [0.01], "layers": [2], "act": ["tanh"]}]
    kept = [earlier.fit(params) for params in jobs]
    assert kept[:3] == [None, None, None] and kept[3] is not None
    assert earlier.outside_line() == (
        "3 earlier jobs lie outside the current variables and are not shown to the model: lr above max 0.1 "
        "(2 jobs), layers below min 2 (1 job), act option 'gelu' no longer offered (1 job); they still count "
        "against max-finished-jobs")
    assert earlier.adapted_line() == "opt is taken at its default adam for 1 earlier job"


def test_a_changed_type_or_size_is_named_too():
    space = Space.from_config({"w": {"type": "FLOAT", "size": 2, "min": 0, "max": 1},
                               "n": {"type": "INT", "min": 0, "max": 9}})
    assert fit_to_space(space, {"w": [0.5], "n": [1.5]}).outside == ("w has 1 element(s), now size 2",
                                                                     "n is not an integer")
