"""Wrappers written for Spearmint run unchanged (apart from Python 2 syntax) under numpy 2.

Spearmint hands every FLOAT/INT variable to ``main`` as a numpy array of its size, and its
users' wrappers treat size-1 values as numbers: ``float(x)``, ``'%f' % x``, ``range(n)``.
numpy 2 refuses those conversions for arrays with ndim > 0; these tests run such wrappers
through the real runner process and check that they still work.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from helpers.experiments import all_jobs, cli, write_experiment
from spearmint_nn.errors import ConfigError
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.runner import command_for
from spearmint_nn.problem.space import Space
from spearmint_nn.files import atomic_write_json

# examples/simple of Spearmint, in Python 3 syntax: the values go into numpy expressions, and
# the size-1 array that comes out is converted with float() and printed with '%f'.
SPEARMINT_BRANIN = """
import numpy as np
import math

def branin(x, y):
  result = np.square(y - (5.1/(4*np.square(math.pi)))*np.square(x) +
       (5/math.pi)*x - 6) + 10*(1-(1./(8*math.pi)))*np.cos(x) + 10
  result = float(result)
  print('Result = %f' % result)
  return result

def main(job_id, params):
  print('Anything printed here will end up in the output directory for job #%d' % job_id)
  print(params)
  return branin(params['x'], params['y'])
"""

SPEARMINT_CONFIG = {
    "language": "PYTHON", "main-file": "branin", "experiment-name": "simple-branin-example",
    "likelihood": "NOISELESS",
    "variables": {"x": {"type": "FLOAT", "size": 1, "min": -5, "max": 10},
                  "y": {"type": "FLOAT", "size": 1, "min": 0, "max": 15}},
}

# Every way the issue lists of treating a size-1 value as a number; the wrapper prints one
# line per expression so that a failure names the expression that broke.
NUMBER_USES = """
import math
import numpy as np

USES = {
    "float(x)": lambda x, n, v: float(x),
    "float(x*2)": lambda x, n, v: float(x * 2),
    "float(1 - x)": lambda x, n, v: float(1 - x),
    "int(x)": lambda x, n, v: int(x),
    "int(n)": lambda x, n, v: int(n),
    "'%f' % x": lambda x, n, v: '%f' % x,
    "'%f' % (x*2)": lambda x, n, v: '%f' % (x * 2),
    "'%f' % (x - 1)": lambda x, n, v: '%f' % (x - 1),
    "'%d' % n": lambda x, n, v: '%d' % n,
    "'%s' % x": lambda x, n, v: '%s' % x,
    "'%g' % x": lambda x, n, v: '%g' % x,
    "'%.2f %d' % (x, n)": lambda x, n, v: '%.2f %d' % (x, n),
    "f'{x:.3f}'": lambda x, n, v: f'{x:.3f}',
    "f'{x}'": lambda x, n, v: f'{x}',
    "format(n, '03d')": lambda x, n, v: format(n, '03d'),
    "'{:e}'.format(x)": lambda x, n, v: '{:e}'.format(x),
    "round(x, 1)": lambda x, n, v: round(x, 1),
    "round(x)": lambda x, n, v: round(x),
    "math.exp(x)": lambda x, n, v: math.exp(x),
    "math.log(x * 4)": lambda x, n, v: math.log(x * 4),
    "list(range(n))": lambda x, n, v: list(range(n)),
    "['a', 'b', 'c', 'd'][n]": lambda x, n, v: ['a', 'b', 'c', 'd'][n],
    "x > 0.5": lambda x, n, v: bool(x > 0.5),
    "min(x, 0.1)": lambda x, n, v: float(min(x, 0.1)),
    "x[0]": lambda x, n, v: float(x[0]),
    "list(x)": lambda x, n, v: [float(e) for e in x],
    "float(np.sum(x))": lambda x, n, v: float(np.sum(x)),
    "type(v)": lambda x, n, v: type(v).__name__,
    "v * 2": lambda x, n, v: (v * 2).tolist(),
    "float(v)": lambda x, n, v: float(v),
}

def main(job_id, params):
    x, n, v = params['x'], params['n'], params['v']
    for name, use in USES.items():
        try:
            print('%s -> %r' % (name, use(x, n, v)))
        except Exception as exc:
            print('%s -> %s' % (name, type(exc).__name__))
    return float(x) + int(n)
"""

EXPECTED_USES = {
    "float(x)": "0.75", "float(x*2)": "1.5", "float(1 - x)": "0.25", "int(x)": "0", "int(n)": "3",
    "'%f' % x": "'0.750000'", "'%f' % (x*2)": "'1.500000'", "'%f' % (x - 1)": "'-0.250000'",
    "'%d' % n": "'3'", "'%s' % x": "'0.75'", "'%g' % x": "'0.75'", "'%.2f %d' % (x, n)": "'0.75 3'",
    "f'{x:.3f}'": "'0.750'", "f'{x}'": "'0.75'", "format(n, '03d')": "'003'", "'{:e}'.format(x)": "'7.500000e-01'",
    "round(x, 1)": "0.8", "round(x)": "1", "math.exp(x)": repr(np.exp(0.75).item()), "math.log(x * 4)": repr(np.log(3.0).item()),
    "list(range(n))": "[0, 1, 2]", "['a', 'b', 'c', 'd'][n]": "'d'", "x > 0.5": "True", "min(x, 0.1)": "0.1",
    "x[0]": "0.75", "list(x)": "[0.75]", "float(np.sum(x))": "0.75",
    # a variable of size 2 stays a plain array, and numpy's own refusal stands
    "type(v)": "'ndarray'", "v * 2": "[0.5, 1.0]", "float(v)": "TypeError",
}


def _run_job(folder, params, job_id=1):
    paths = ExperimentPaths(folder)
    paths.inputs.mkdir(parents=True)
    paths.results.mkdir()
    atomic_write_json(paths.input_file(job_id), params)
    proc = subprocess.run(command_for(paths.experiment, job_id), cwd=folder, capture_output=True, text=True, timeout=60)
    return proc, json.loads(paths.result_file(job_id).read_text())


def test_spearmints_branin_example_runs_unchanged(tmp_path):
    folder = write_experiment(tmp_path / "simple", SPEARMINT_CONFIG, {"branin.py": SPEARMINT_BRANIN})
    proc, result = _run_job(folder, {"x": [np.pi], "y": [2.275]})
    assert proc.returncode == 0, proc.stderr
    assert result["status"] == "ok" and result["values"]["main"] == pytest.approx(0.397887, abs=1e-6)
    assert "Result = 0.397887" in proc.stdout
    assert "job #1" in proc.stdout


def test_size_one_values_behave_as_numbers_in_a_wrapper(tmp_path):
    config = {"language": "PYTHON", "main-file": "uses.py",
              "variables": {"x": {"type": "FLOAT", "min": 0, "max": 1},
                            "n": {"type": "INT", "min": 1, "max": 3},
                            "v": {"type": "FLOAT", "size": 2, "min": 0, "max": 1}}}
    folder = write_experiment(tmp_path / "uses", config, {"uses.py": NUMBER_USES})
    proc, result = _run_job(folder, {"x": [0.75], "n": [3], "v": [0.25, 0.5]})
    assert result["status"] == "ok" and result["values"] == {"main": 3.75}, proc.stderr
    seen = dict(line.split(" -> ", 1) for line in proc.stdout.splitlines() if " -> " in line)
    assert seen == EXPECTED_USES


SPACE = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 2}, "n": {"type": "INT", "min": 1, "max": 4},
                           "v": {"type": "FLOAT", "size": 2, "min": 0, "max": 1},
                           "act": {"type": "ENUM", "options": ["relu", "tanh"]}})


def test_wrapper_form_values_are_numbers_and_json_form_stays_lists():
    params = SPACE.to_wrapper({"x": [1.5], "n": [2], "v": [0.25, 0.5], "act": ["tanh"]})
    assert float(params["x"]) == 1.5 and range(params["n"]) == range(2) and "%d" % params["n"] == "2"
    assert isinstance(params["x"], np.ndarray) and params["x"].shape == (1,) and params["n"].dtype == np.int64
    assert type(params["v"]) is np.ndarray and params["act"] == ["tanh"]
    assert SPACE.to_json(params) == {"x": [1.5], "n": [2], "v": [0.25, 0.5], "act": ["tanh"]}
    assert json.loads(json.dumps(SPACE.to_json(params))) == SPACE.to_json(params)


def test_decoded_points_are_numbers_for_an_ask_tell_user():
    for params in SPACE.decode(SPACE.sobol(8, seed=0)):
        assert 0 <= float(params["x"]) <= 2 and f"{params['x']:.2f}"
        assert int(params["n"]) in (1, 2, 3, 4) and len(list(range(params["n"]))) == int(params["n"])
        assert type(params["v"]) is np.ndarray and params["v"].shape == (2,)


def test_encode_takes_bare_scalars_and_names_the_variable_of_a_wrong_value():
    bare = {"x": 1.5, "n": np.int64(2), "v": [np.float32(0.25), 0.5], "act": "tanh"}
    listed = {"x": [1.5], "n": [2], "v": [0.25, 0.5], "act": ["tanh"]}
    assert np.array_equal(SPACE.encode([bare]), SPACE.encode([listed]))
    for wrong, message in [
        ({"v": 0.5}, "params.v: must be a list of 2 numbers (got 0.5)"),
        ({"x": [1.0, 1.5]}, "params.x: must be a number or a list of one (got [1.0, 1.5])"),
        ({"x": np.ones((1, 1))}, "params.x: must be a number or a list of one (got array([[1.]]))"),
        ({"x": "1.5"}, "params.x: must hold finite numbers (got '1.5')"),
        ({"act": ["relu", "tanh"]}, "params.act: must be an option or a list of one (got ['relu', 'tanh'])"),
    ]:
        with pytest.raises(ConfigError) as info:
            SPACE.encode([{**listed, **wrong}])
        assert str(info.value) == message


def test_optimizer_suggests_numbers_and_observes_bare_scalars():
    from spearmint_nn.search.optimizer import Optimizer

    opt = Optimizer({"x": {"type": "FLOAT", "min": 0, "max": 2}, "n": {"type": "INT", "min": 1, "max": 4}},
                    model="sobol", seed=0)
    params = opt.suggest(1)[0]
    opt.observe({"x": float(params["x"]), "n": int(params["n"])}, (float(params["x"]) - 1) ** 2 + int(params["n"]))
    assert opt.n_observed == 1
    with pytest.raises(ConfigError, match=r"^params\.n: must be a number or a list of one \(got \[1, 2\]\)$"):
        opt.observe({"x": 1.0, "n": [1, 2]}, 0.0)


def test_a_spearmint_folder_with_resources_runs_to_its_resources_budget(tmp_path):
    config = {**SPEARMINT_CONFIG, "model": "sobol", "polling-time": 0.2,
              "resources": {"my-machine": {"scheduler": "local", "max-concurrent": 2, "max-finished-jobs": 3}},
              "tasks": {"main": {"type": "OBJECTIVE", "likelihood": "NOISELESS", "main-file": "branin",
                                 "resources": ["my-machine"]}}}
    del config["main-file"]
    folder = write_experiment(tmp_path / "simple", config, {"branin.py": SPEARMINT_BRANIN})
    result = cli("run", folder, timeout=120)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    assert [state for state, _ in jobs.values()] == ["complete"] * 3
    assert all(job["driver"] == "local" and job["values"]["main"] > 0.39 for _, job in jobs.values())
