"""The job runner: wrapper contract, result validation, result file and exit code."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.experiments import quick_config, write_experiment
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.results import JobResult
from spearmint_nn.runner import command_for, run_job
from spearmint_nn.files import atomic_write_json

PARAMS = {"x": [1.5], "y": [2.0]}


def _experiment(tmp_path, wrapper: str, **config):
    folder = write_experiment(tmp_path / "exp", quick_config(**config), {"wrapper.py": wrapper})
    paths = ExperimentPaths(folder)
    paths.inputs.mkdir(parents=True)
    paths.results.mkdir()
    atomic_write_json(paths.input_file(7), PARAMS)
    return paths


def _result(paths):
    """The result file's object, which must be exactly a JobResult's (the daemon reads it so)."""
    obj = json.loads(paths.result_file(7).read_text())
    assert JobResult.read(paths.result_file(7), 7).to_json() == obj
    return obj


def test_wrapper_gets_spearmint_params_and_result_is_written(tmp_path):
    paths = _experiment(tmp_path, """
        import numpy as np

        def main(job_id, params):
            assert job_id == 7
            assert isinstance(params["x"], np.ndarray) and params["x"].dtype == float
            assert isinstance(params["n"], np.ndarray) and params["n"].dtype == np.int64
            assert params["act"] == ["relu", "tanh"]
            return params["x"][0] + params["y"][0] + params["n"][0]
        """, variables={"x": {"type": "FLOAT", "min": 0, "max": 2}, "y": {"type": "FLOAT", "min": 0, "max": 3},
                        "n": {"type": "INT", "min": 1, "max": 4},
                        "act": {"type": "ENUM", "size": 2, "options": ["relu", "tanh"]}})
    atomic_write_json(paths.input_file(7), {**PARAMS, "n": [3], "act": ["relu", "tanh"]})
    assert run_job(paths.experiment, 7) == 0
    result = _result(paths)
    assert result["status"] == "ok" and result["values"] == {"main": 6.5} and result["id"] == 7
    assert result["ended"] >= result["started"] > 0 and result["host"]
    assert [p.name for p in paths.results.iterdir()] == ["000007.json"]


@pytest.mark.parametrize("body,failure,error", [
    ("raise ZeroDivisionError('boom')", "exception", "ZeroDivisionError: boom"),
    ("return float('nan')", "nan", "returned main=nan"),
    ("return 'fast'", "bad_result", "returned str 'fast'; expected a number or a dict of task -> number"),
    ("return {'loss': 1.0}", "bad_result", "returned keys ['loss']; expected exactly ['main']"),
])
def test_bad_wrappers_give_failed_results(tmp_path, body, failure, error):
    paths = _experiment(tmp_path, f"def main(job_id, params):\n    {body}\n")
    assert run_job(paths.experiment, 7) == 1
    result = _result(paths)
    assert (result["status"], result["failure"], result["error"]) == ("error", failure, error)
    if failure == "exception":
        assert "ZeroDivisionError" in result["traceback"]


# What a training loop returns instead of a float: one element of a tensor or array is its number.
ONE_NUMBER_RETURNS = [
    ("torch.tensor(0.5)", {"main": 0.5}),
    ("torch.tensor([0.25], requires_grad=True) * 1", {"main": 0.25}),
    ("torch.tensor([[0.5]], dtype=torch.float16)", {"main": 0.5}),
    ("{'main': torch.tensor(0.5)}", {"main": 0.5}),
    ("np.float32(0.5)", {"main": 0.5}),
    ("np.array([[0.25]])", {"main": 0.25}),
    ("{'main': np.array(0.5)}", {"main": 0.5}),
]


@pytest.mark.parametrize("expression,values", ONE_NUMBER_RETURNS, ids=[case[0] for case in ONE_NUMBER_RETURNS])
def test_a_tensor_or_array_of_one_element_is_its_number(tmp_path, expression, values):
    """``return loss`` for ``return loss.item()`` (a tensor was a bad_result)."""
    paths = _experiment(tmp_path, f"import numpy as np\nimport torch\n\ndef main(job_id, params):\n    return {expression}\n")
    assert run_job(paths.experiment, 7) == 0
    assert _result(paths)["values"] == values


def test_a_job_returning_a_tensor_runs_in_its_own_process(tmp_path):
    paths = _experiment(tmp_path, "import torch\n\ndef main(job_id, params):\n    return torch.tensor(params['x'][0]) ** 2\n")
    proc = subprocess.run(command_for(paths.experiment, 7), cwd=paths.experiment, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _result(paths)["values"] == {"main": 2.25}


@pytest.mark.parametrize("expression,failure,error", [
    ("torch.tensor([1.0, 2.0, 3.0])", "bad_result",
     "returned Tensor of 3 values tensor([1., 2., 3.]); expected one number (e.g. loss.item()) or a dict of task -> number"),
    ("{'main': np.zeros((2, 2))}", "bad_result",
     "task 'main' is ndarray of 4 values array([[0., 0.], [0., 0.]]), not one number (e.g. loss.item())"),
    ("torch.tensor([])", "bad_result",
     "returned Tensor of 0 values tensor([]); expected one number (e.g. loss.item()) or a dict of task -> number"),
    ("torch.tensor(True)", "bad_result",
     "returned Tensor tensor(True); expected one number (e.g. loss.item()) or a dict of task -> number"),
    ("[0.5, 0.25]", "bad_result", "returned list [0.5, 0.25]; expected a number or a dict of task -> number"),
    ("torch.tensor(float('nan'))", "nan", "returned main=nan"),
])
def test_a_tensor_that_is_not_one_number_says_what_to_return(tmp_path, expression, failure, error):
    paths = _experiment(tmp_path, f"import numpy as np\nimport torch\n\ndef main(job_id, params):\n    return {expression}\n")
    assert run_job(paths.experiment, 7) == 1
    result = _result(paths)
    assert (result["status"], result["failure"], result["error"]) == ("error", failure, error)


# (case, files of the experiment folder, failure kind, error, location): wrappers broken in ways
# that say nothing about the point are "bad_wrapper"; the daemon neither models nor counts them.
BROKEN_WRAPPERS = [
    ("syntax error", {"wrapper.py": "def main(job_id, params):\n    return 1 +\n"},
     "bad_wrapper", "SyntaxError: invalid syntax (wrapper.py, line 2)", "wrapper.py:2"),
    ("missing import", {"wrapper.py": "import numpy\nimport no_such_module_xq\n\ndef main(job_id, params):\n    return 1.0\n"},
     "bad_wrapper", "ModuleNotFoundError: No module named 'no_such_module_xq'", "wrapper.py:2"),
    ("name error at import", {"wrapper.py": "SCALE = undefined_scale\n\ndef main(job_id, params):\n    return 1.0\n"},
     "bad_wrapper", "NameError: name 'undefined_scale' is not defined", "wrapper.py:1"),
    ("sys.exit at import", {"wrapper.py": "import sys\nsys.exit('usage: wrapper.py X')\n"},
     "bad_wrapper", "SystemExit: usage: wrapper.py X", "wrapper.py:2"),
    ("no main", {"wrapper.py": "def mian(job_id, params):\n    return 1.0\n"},
     "bad_wrapper", "wrapper.py has no function main(job_id, params)", None),
    ("main with one parameter", {"wrapper.py": "\ndef main(x):\n    return 1.0\n"},
     "bad_wrapper", "wrapper.py: main(x) cannot be called as main(job_id, params): too many positional arguments",
     "wrapper.py:2"),
    ("main returns None", {"wrapper.py": "def main(job_id, params):\n    value = 1.0\n"},
     "bad_wrapper", "wrapper.py: main returned None; it must return the objective's value or a dict {task: value} "
     "(is a return statement missing?)", "wrapper.py:1"),
    ("name error in main", {"wrapper.py": "def main(job_id, params):\n    x = params['x']\n    return y * 2\n"},
     "bad_wrapper", "NameError: name 'y' is not defined", "wrapper.py:3"),
    ("unbound local in main", {"wrapper.py": "def main(job_id, params):\n    if job_id < 0:\n        v = 1.0\n    return v\n"},
     "bad_wrapper", "UnboundLocalError: cannot access local variable 'v' where it is not associated with a value",
     "wrapper.py:4"),
    ("module attribute typo in main", {"wrapper.py": "import math\n\ndef main(job_id, params):\n    return math.tau2\n"},
     "bad_wrapper", "AttributeError: module 'math' has no attribute 'tau2'", "wrapper.py:4"),
    ("syntax error in a module main imports", {
        "wrapper.py": "def main(job_id, params):\n    from lib import model\n    return model.loss()\n",
        "lib/__init__.py": "", "lib/model.py": "def loss():\n    return (1.0\n"},
     "bad_wrapper", "SyntaxError: '(' was never closed (model.py, line 2)", "lib/model.py:2"),
    ("module imported by name in main", {
        "wrapper.py": "import importlib\n\ndef main(job_id, params):\n    importlib.import_module('no_such_backend_xq')\n"},
     "bad_wrapper", "ModuleNotFoundError: No module named 'no_such_backend_xq'", "wrapper.py:4"),
    ("value error in main", {"wrapper.py": "def main(job_id, params):\n    raise ValueError('diverged')\n"},
     "exception", "ValueError: diverged", "wrapper.py:2"),
    ("type error inside main", {"wrapper.py": "def main(job_id, params):\n    return len(5)\n"},
     "exception", "TypeError: object of type 'int' has no len()", "wrapper.py:2"),
    ("attribute error on a value", {"wrapper.py": "def main(job_id, params):\n    return params.loss\n"},
     "exception", "AttributeError: 'dict' object has no attribute 'loss'", "wrapper.py:2"),
    ("error in a helper of the folder", {
        "wrapper.py": "import helper\n\ndef main(job_id, params):\n    return helper.train(params)\n",
        "helper.py": "import numpy as np\n\ndef train(params):\n    return np.log(-1.0) + float('x')\n"},
     "exception", "ValueError: could not convert string to float: 'x'", "helper.py:4"),
]


@pytest.mark.parametrize("case,files,failure,error,location", BROKEN_WRAPPERS, ids=[c[0] for c in BROKEN_WRAPPERS])
def test_broken_wrapper_kind_error_and_location(tmp_path, case, files, failure, error, location):
    paths = _experiment(tmp_path, "")
    for name, text in files.items():
        (paths.experiment / name).parent.mkdir(exist_ok=True)
        (paths.experiment / name).write_text(text)
    proc = subprocess.run(command_for(paths.experiment, 7), cwd=paths.experiment, capture_output=True, text=True, timeout=60)
    result = _result(paths)
    assert proc.returncode != 0 and result["status"] == "error"
    assert (result["failure"], result["error"], result["location"]) == (failure, error, location)
    assert f"job 7 failed ({failure})" in proc.stderr


def test_location_outside_the_experiment_folder_is_absolute(tmp_path):
    library = tmp_path / "site"
    library.mkdir()
    (library / "shared_main.py").write_text("def main(job_id):\n    return 1.0\n")
    paths = _experiment(tmp_path, f"import sys\nsys.path.append({str(library)!r})\nfrom shared_main import main\n")
    assert run_job(paths.experiment, 7) == 1
    result = _result(paths)
    assert result["failure"] == "bad_wrapper"
    assert result["location"] == f"{library.resolve()}/shared_main.py:1"


def test_command_that_cannot_start_stays_an_exception_without_location(tmp_path):
    paths = _experiment(tmp_path, "", language="SHELL", command=["./no-such-program"], **{"main-file": None})
    assert run_job(paths.experiment, 7) == 1
    result = _result(paths)
    assert (result["failure"], result["location"]) == ("exception", None)
    assert result["error"] == "cannot start './no-such-program': No such file or directory"


def test_runner_process_uses_result_file_and_exit_codes(tmp_path):
    paths = _experiment(tmp_path, "import sys\ndef main(job_id, params):\n    print('hello')\n    sys.exit(3)\n")
    command = command_for(paths.experiment, 7)
    assert command[:3] == [sys.executable, "-m", "spearmint_nn.runner"]
    proc = subprocess.run(command, cwd=paths.experiment, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "hello" in proc.stdout
    assert _result(paths)["failure"] == "exit_code"
    assert "job 7 failed (exit_code)" in proc.stderr


SHELL_SCRIPT = """
    # behaviour chosen by the first argument word of the command
    case "$1" in
      print) echo "some log"; echo "  12.5  " ;;
      file) echo 'ignored 1.0'; echo '{"main": 4.25}' > "$SPEARMINT_RESULT_FILE" ;;
      garbage) printf 'result:\\x01\\x02 ok?\\n' ;;
      fail) echo "bad input" >&2; exit 3 ;;
      params) tr -d ' \\n' < "$2" | sed -E 's/.*"x":\\[([^]]*)\\].*/\\1/' ;;
    esac
    """


@pytest.mark.parametrize("mode,status,expected", [
    ("print", "ok", {"main": 12.5}),
    ("file", "ok", {"main": 4.25}),
    ("garbage", "bad_result", None),
    ("fail", "exit_code", None),
])
def test_command_line_wrapper(tmp_path, mode, status, expected):
    paths = _experiment(tmp_path, "", language="SHELL", command=["bash", "run.sh", mode],
                        **{"main-file": None})
    (paths.experiment / "run.sh").write_text(SHELL_SCRIPT)
    code = run_job(paths.experiment, 7)
    result = _result(paths)
    if expected is not None:
        assert code == 0 and result["values"] == expected
    else:
        assert code != 0 and result["failure"] == status
    assert not list(paths.results.glob(".*"))  # the wrapper's scratch result file is removed


def test_command_line_wrapper_reads_params_file(tmp_path):
    paths = _experiment(tmp_path, "", language="SHELL", command=["bash", "run.sh", "params"],
                        tasks={"main": {"type": "OBJECTIVE"}}, **{"main-file": None})
    (paths.experiment / "run.sh").write_text(SHELL_SCRIPT)
    assert run_job(paths.experiment, 7) == 0
    assert _result(paths)["values"] == {"main": 1.5}  # x, read back from the appended params file


def test_a_job_imports_neither_torch_nor_scipy(tmp_path):
    """Every job pays for what the runner imports: torch and scipy cost most of a second."""
    paths = _experiment(tmp_path, "import numpy as np\n\ndef main(job_id, params):\n    return float(np.sum(params['x']))\n")
    check = ("import sys\n"
             "import spearmint_nn.runner\n"
             "heavy = lambda: sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'scipy'})\n"
             "print('imports', heavy())\n"
             "code = spearmint_nn.runner.main([sys.argv[1], '7'])\n"
             "print('job', code, heavy())\n")
    proc = subprocess.run([sys.executable, "-c", check, str(paths.experiment)], cwd=paths.experiment,
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines()[-2:] == ["imports []", "job 0 []"], proc.stderr
    assert _result(paths)["values"] == {"main": 1.5}

