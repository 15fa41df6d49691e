"""Space: parsing, encode/decode round trips, conditional variables."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spearmint_nn.errors import ConfigError
from spearmint_nn.problem.space import Space

CONDITIONAL = {
    "model": {"type": "ENUM", "options": ["additive", "multiplicative"]},
    "factors": {"type": "INT", "min": 2, "max": 64, "scale": "log", "when": {"model": "multiplicative"}},
    "layers": {"type": "INT", "min": 1, "max": 3},
    "width_2": {"type": "INT", "min": 8, "max": 256, "when": {"layers": {">=": 2}}},
    "act_3": {"type": "ENUM", "options": ["relu", "tanh"], "when": {"layers": 3}},
    "slope": {"type": "FLOAT", "min": 0.0, "max": 1.0, "when": {"act_3": "relu"}},  # a chain
    "lr": {"type": "FLOAT", "min": 1e-5, "max": 1.0, "scale": "log", "size": 2},
}


def test_int_values_get_equal_shares_of_the_cube():
    space = Space.from_config({"n": {"type": "INT", "min": 1, "max": 4}})
    counts = np.bincount([p["n"][0] for p in space.decode(space.sobol(1024, seed=0))])
    assert counts[1:].tolist() == [256, 256, 256, 256]


def test_log_scale_is_uniform_in_log_space():
    space = Space.from_config({"lr": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"}})
    values = np.array([p["lr"][0] for p in space.decode(space.sobol(512, seed=1))])
    assert abs(np.mean(values < 1e-2) - 0.5) < 0.02


def test_conditional_decode_has_exactly_the_active_variables():
    space = Space.from_config(CONDITIONAL)
    for params in space.decode(space.sobol(256, seed=3)):
        assert ("factors" in params) == (params["model"] == ["multiplicative"])
        assert ("width_2" in params) == (params["layers"][0] >= 2)
        assert ("act_3" in params) == (params["layers"][0] == 3)
        assert ("slope" in params) == (params.get("act_3") == ["relu"])
        assert space.validate(params) == list(params)


def test_inactive_values_carry_no_information():
    space = Space.from_config(CONDITIONAL)
    rng = np.random.default_rng(0)
    base = {"model": ["additive"], "layers": [1], "lr": [1e-3, 1e-2]}
    row = space.encode([base])[0]
    # Any raw cube row whose active columns agree decodes (and so encodes) to the same point.
    for _ in range(50):
        noisy = row.copy()
        inactive = ~space.active_mask(row[None])[0]
        noisy[inactive] = rng.random(inactive.sum())
        assert np.array_equal(space.project(noisy[None])[0], row)
    assert space.active_mask(row[None])[0][space.value_columns("factors")].sum() == 0


def test_inactive_variable_given_is_rejected():
    space = Space.from_config(CONDITIONAL)
    with pytest.raises(ConfigError, match=r"params.factors: given but inactive"):
        space.encode([{"model": ["additive"], "factors": [4], "layers": [1], "lr": [0.1, 0.1]}])


@pytest.mark.parametrize("variables, message", [
    ({"a": {"type": "INT", "min": 0, "max": 3, "when": {"b": 1}},
      "b": {"type": "INT", "min": 0, "max": 3, "when": {"a": 1}}},
     "variables.a.when: conditions form a cycle (a -> b -> a)"),
    ({"a": {"type": "INT", "min": 0, "max": 3, "when": {"nope": 1}}},
     "variables.a.when.nope: unknown variable"),
    ({"a": {"type": "FLOAT", "min": 0, "max": 3}, "b": {"type": "INT", "min": 0, "max": 3, "when": {"a": 1}}},
     "variables.b.when.a: a condition's parent must be an ENUM or INT of size 1"),
    ({"a": {"type": "ENUM", "options": ["x"]}, "b": {"type": "INT", "min": 0, "max": 3, "when": {"a": "y"}}},
     "variables.b.when.a: 'y' is not a possible value of a"),
    ({"a": {"type": "INT", "min": 0, "max": 3}, "b": {"type": "INT", "min": 0, "max": 3, "when": {"a": {"~": 1}}}},
     "variables.b.when.a.~: unknown comparison; use one of ==, !=, >=, >, <=, <"),
    ({"x": {"type": "FLOAT", "min": 1.0, "max": 0.1}}, "variables.x.min: must be < max (got 1.0 >= 0.1)"),
    ({"x": {"type": "FLOAT", "min": 0, "max": 1, "scale": "log"}}, "variables.x.min: must be > 0 for a log scale (got 0)"),
    ({"x": {"type": "ENUM", "options": []}}, "variables.x.options: must be a non-empty list of strings (got [])"),
    ({"x": {"type": "FLOAT", "min": 0, "maxx": 1}}, "variables.x.maxx: unknown key (did you mean 'max'?)"),
    ({"x": {"type": "FLOAT", "min": float("nan"), "max": 1}}, "variables.x.min: must be finite (got nan)"),
    ({"x": {"type": "INT", "min": 0.5, "max": 3}}, "variables.x.min: must be an integer for an INT (got 0.5)"),
    ({"x": {"type": "FLOAT", "min": 0, "max": 1, "size": 10**6}}, "variables.x.size: must be at most 1000 (got 1000000)"),
    ({"wd": {"type": "FLOAT", "min": 0, "max": 1, "default": 2}}, "variables.wd.default: 2 is outside [0, 1]"),
    ({"n": {"type": "INT", "min": 0, "max": 4, "default": 1.5}}, "variables.n.default: must hold integers (got 1.5)"),
    ({"w": {"type": "FLOAT", "min": 0, "max": 1, "size": 2, "default": 0}},
     "variables.w.default: must be a list of 2 numbers (got 0)"),
    ({"act": {"type": "ENUM", "options": ["relu"], "default": "gelu"}},
     "variables.act.default: 'gelu' is not one of ['relu']"),
])
def test_bad_variables_name_the_key(variables, message):
    with pytest.raises(ConfigError) as err:
        Space.from_config(variables)
    assert str(err.value).startswith(message)


_names = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
_numbers = st.floats(allow_nan=True, allow_infinity=True, width=32) | st.integers(-10**6, 10**6)
_spec = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["FLOAT", "INT", "ENUM", "float", "BOOL", 3]),
    "size": st.integers(-2, 5) | st.just("2"),
    "min": _numbers, "max": _numbers,
    "options": st.lists(st.text(max_size=3), max_size=4) | st.just("a"),
    "scale": st.sampled_from(["log", "linear", "ln"]),
})


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_names, _spec, max_size=4), st.integers(0, 2**16))
def test_any_variables_give_a_config_error_or_a_valid_space(variables, seed):
    try:
        space = Space.from_config(variables)
    except ConfigError:
        return
    X = np.random.default_rng(seed).random((8, space.dim))
    for params in space.decode(X):
        assert space.validate(params) == list(params)
        row = space.encode([space.to_json(params)])
        assert np.all((row >= 0) & (row <= 1))
        assert space.decode(row)[0].keys() == params.keys()
        for var in space.variables:
            if var.type != "ENUM":
                assert np.all((params[var.name] >= var.min) & (params[var.name] <= var.max))
                if var.type == "INT":
                    assert params[var.name].dtype.kind == "i"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=12, max_size=12))
def test_conditional_round_trip_is_stable(row):
    space = Space.from_config(CONDITIONAL)
    x = np.resize(np.array(row), space.dim)[None]
    params = space.to_json(space.decode(x)[0])
    again = space.to_json(space.decode(space.encode([params]))[0])
    assert again.keys() == params.keys()
    for key, value in params.items():
        if isinstance(value[0], str):
            assert again[key] == value
        else:
            assert np.allclose(again[key], value, rtol=1e-9)


def test_the_default_initial_design_spans_a_simplex_of_the_parameters():
    """D + 1 scalar parameters (an ENUM element counts once, whatever its one-hot width), at least 2."""
    assert Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1}}).default_initial_design == 2
    space = Space.from_config({"x": {"type": "FLOAT", "size": 3, "min": 0, "max": 1},
                               "act": {"type": "ENUM", "options": ["relu", "tanh", "gelu"]}})
    assert space.dim > space.n_parameters == 4 and space.default_initial_design == 5


def test_unknown_keys_of_every_variable_in_one_error():
    with pytest.raises(ConfigError) as info:
        Space.from_config({"a": {"type": "FLOAT", "min": 0, "max": 1, "step": 0.1},
                           "b": {"type": "INT", "min": 0, "max": 4, "sise": 2}})
    assert str(info.value) == ("variables.a.step, variables.b.sise: unknown keys "
                               "(variables.b.sise: did you mean 'size'?)")


def test_a_default_is_kept_in_json_form():
    space = Space.from_config({"wd": {"type": "FLOAT", "min": 0, "max": 1, "default": 0},
                               "n": {"type": "INT", "min": 0, "max": 4, "size": 2, "default": [1, 2.0]},
                               "act": {"type": "ENUM", "options": ["relu", "tanh"], "default": ["tanh"]}})
    assert [var.default for var in space.variables] == [(0.0,), (1, 2), ("tanh",)]
    assert isinstance(space.variables[1].default[1], int)
