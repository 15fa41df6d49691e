"""The job runner: wrapper contract, result validation, result file and exit code."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import quick_config, write_experiment
from spearmint_nn.layout import ExperimentPaths
from spearmint_nn.runner import command_for, run_job
from spearmint_nn.store import atomic_write_json

PARAMS = {"x": [1.5], "y": [2.0]}


def _experiment(tmp_path, wrapper: str, **config):
    folder = write_experiment(tmp_path / "exp", quick_config(**config), {"wrapper.py": wrapper})
    paths = ExperimentPaths(folder)
    paths.inputs.mkdir(parents=True)
    paths.results.mkdir()
    atomic_write_json(paths.input_file(7), PARAMS)
    return paths


def _result(paths):
    return json.loads(paths.result_file(7).read_text())


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
    ("return None", "bad_result", "returned NoneType None; expected a number or a dict of task -> number"),
])
def test_bad_wrappers_give_failed_results(tmp_path, body, failure, error):
    paths = _experiment(tmp_path, f"def main(job_id, params):\n    {body}\n")
    assert run_job(paths.experiment, 7) == 1
    result = _result(paths)
    assert (result["status"], result["failure"], result["error"]) == ("error", failure, error)
    if failure == "exception":
        assert "ZeroDivisionError" in result["traceback"]


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

