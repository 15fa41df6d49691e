"""Property-based tests of the config parser: whatever config.json holds, loading it either
succeeds or raises ConfigError (never another exception), and a config that loads gives a
space whose decoded points are all valid and survive the JSON round trip.

(The space alone is fuzzed in tests/unit/problem/test_space.py.)
"""
from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers.experiments import quick_config
from spearmint_nn.experiment.config import KEYS, config_values, load_config
from spearmint_nn.errors import ConfigError

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_scalars = (st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True, allow_infinity=True)
            | st.text(max_size=8) | st.sampled_from(["FLOAT", "INT", "ENUM", "log", "local", "wrapper.py", "dngo"]))
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=10)
_numbers = st.integers(-5, 50) | st.floats(-1e6, 1e6) | st.sampled_from([0, 1, float("nan"), float("inf")])
_variable = st.fixed_dictionaries({"type": st.sampled_from(["FLOAT", "INT", "ENUM", "float", "BOOL"])}, optional={
    "size": st.integers(-1, 4) | st.sampled_from([True, "2", 2.0]),
    "min": _numbers, "max": _numbers,
    "options": st.lists(st.text(alphabet="abc", min_size=1, max_size=2), max_size=4),
    "scale": st.sampled_from(["log", "linear", "LOG"]),
    "when": st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(["ab", 1, [2, 3], {">=": 2}]), max_size=2),
})
_tasks = st.dictionaries(st.sampled_from(["f", "c", "g"]), st.fixed_dictionaries(
    {"type": st.sampled_from(["OBJECTIVE", "CONSTRAINT", "objective", "OTHER"])},
    optional={"likelihood": st.sampled_from(["NOISELESS", "GAUSSIAN", "noisy"])}), max_size=3)
_config = st.fixed_dictionaries({
    "variables": st.dictionaries(st.sampled_from(["a", "b", "c", "x"]), _variable, max_size=4),
}, optional={
    "tasks": _tasks,
    "language": st.sampled_from(["PYTHON", "SHELL", "python", "MATLAB"]),
    "main-file": st.sampled_from(["wrapper", "wrapper.py", "../x.py", "missing.py", "", 3]),
    "command": st.sampled_from([["bash", "run.sh"], "bash run.sh", [], [""]]),
    **{key: _json for key in ("max-concurrent", "max-finished-jobs", "polling-time", "seed", "fantasies",
                              "model", "acquisition", "initial-design", "driver", "likelihood")},
    "unknown-key": _scalars,
})


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "exp"
        path.mkdir()
        (path / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
        yield path


def _load(folder: Path, data: bytes):
    (folder / "config.json").write_bytes(data)
    try:
        return load_config(folder)
    except ConfigError as exc:
        assert exc.each and "\n" not in str(exc)  # one line, for logs
        for problem in exc.each:  # several at once: each names its key path
            assert str(problem).startswith(problem.path + ": ") and problem.problem and "\n" not in str(problem)
        return None


def _check_space(config, seed: int) -> None:
    space = config.space
    X = np.random.default_rng(seed).random((6, space.dim))
    for params in space.decode(X):
        assert space.validate(params) == list(params)
        as_json = space.to_json(params)
        json.dumps(as_json, allow_nan=False)  # storable as strict JSON
        row = space.encode([as_json])
        assert np.all((row >= 0) & (row <= 1))
        for var in space.variables:
            if var.name in as_json and var.type != "ENUM":
                assert all(var.min <= v <= var.max and math.isfinite(v) for v in as_json[var.name])


@_SETTINGS
@given(_config, st.integers(0, 2**16))
def test_any_structured_config_loads_or_names_its_error(folder, raw, seed):
    config = _load(folder, json.dumps(raw).encode())
    if config is not None:
        assert set(config_values(config)) == set(KEYS) and config.objective in config.tasks.names
        _check_space(config, seed)


@_SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes_load_or_name_their_error(folder, data):
    config = _load(folder, data)
    assert config is None or isinstance(json.loads(data), dict)


_VALID = json.dumps(quick_config(tasks={"f": {"type": "OBJECTIVE"}, "c": {"type": "CONSTRAINT"}},
                                 variables={"x": {"type": "FLOAT", "min": 0.001, "max": 1, "scale": "log"},
                                            "k": {"type": "ENUM", "options": ["a", "b"], "size": 2},
                                            "n": {"type": "INT", "min": 1, "max": 4, "when": {"k": "a"}}}))


@_SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.sampled_from(list('{}[]",:0-.9eE tn\\\x00\xff'))),
                min_size=1, max_size=4), st.integers(0, 2**16))
def test_mutated_config_text_loads_or_names_its_error(folder, edits, seed):
    text = list(_VALID)
    for position, char in edits:
        text[position] = char
    config = _load(folder, "".join(text).encode("utf-8"))
    if config is not None:
        _check_space(config, seed)
