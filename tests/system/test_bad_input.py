"""A corpus of malformed inputs, each with the exact message a user sees.

Configs: every case goes through ``spearmint-nn run`` and must exit 2 with its one message and
write nothing (tests/unit/experiment/test_config.py holds the first 25 mistakes; none is repeated here).
Wrapper outputs: what a job's wrapper prints or returns, through the real runner; each must
end as a failed result with its kind and message, never as a crash of the runner.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from helpers.experiments import quick_config
from spearmint_nn import cli as cli_module
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.runner import run_job
from spearmint_nn.files import atomic_write_json

FLOAT = {"type": "FLOAT", "min": 0, "max": 1}


def _config(**changes: Any) -> str:
    config = quick_config()
    for key, value in changes.items():
        config[key.replace("_", "-")] = value
    return json.dumps(config)


def _variable(**spec: Any) -> str:
    return _config(variables={"x": spec})


# (case name, config.json as text or bytes, expected message; {dir} is the experiment folder)
CONFIG_CASES = [
    ("empty file", "", "config.json: invalid JSON: Expecting value at line 1 column 1"),
    ("JSON null", "null", "config.json: must hold a JSON object (got NoneType)"),
    ("JSON string", '"variables"', "config.json: must hold a JSON object (got str)"),
    ("byte order mark", "\ufeff{}".encode("utf-8"),
     "config.json: invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1 column 1"),
    ("latin-1 bytes in a key", b'{"vari\xe1bles": {}}', "config.json: is not UTF-8 text (byte 0xe1 at offset 6)"),
    ("UTF-16 file", '{"a": 1}'.encode("utf-16"), "config.json: is not UTF-8 text (byte 0xff at offset 0)"),
    ("nested a hundred thousand deep", "[" * 100_000, "config.json: is nested too deeply to be read"),
    ("a save cut short", '{"language": "PYT',  # the message ends with where, not "starting at"
     "config.json: invalid JSON: Unterminated string starting at line 1 column 14"),
    ("trailing garbage", _config() + " }", f"config.json: invalid JSON: Extra data at line 1 column {len(_config()) + 2}"),
    ("duplicate key in a task", '{"variables": {"x": {"type": "FLOAT", "min": 0, "max": 1}}, '
     '"tasks": {"f": {"type": "OBJECTIVE", "type": "CONSTRAINT"}}}',
     "tasks.f.type: duplicate key (JSON objects must not repeat a key)"),
    ("NaN bound in the JSON text", _config(variables={"x": {**FLOAT, "min": float("nan")}}),
     "variables.x.min: must be finite (got nan)"),
    ("Infinity bound", _config(variables={"x": {**FLOAT, "max": float("inf")}}),
     "variables.x.max: must be finite (got inf)"),
    ("variables as a list", _config(variables=[FLOAT]), "variables: must be an object mapping names to specs (got list)"),
    ("no variable at all", _config(variables={}), "variables: must declare at least one variable"),
    ("empty variable name", _config(variables={"": FLOAT}), "variables: variable names must be non-empty strings (got '')"),
    ("spec as a string", _config(variables={"x": "FLOAT"}), "variables.x: must be an object with a 'type' (got str)"),
    ("type missing", _variable(min=0, max=1), "variables.x.type: must be one of FLOAT, INT, ENUM (got None)"),
    ("type a number", _variable(type=3, min=0, max=1), "variables.x.type: must be one of FLOAT, INT, ENUM (got 3)"),
    ("size zero", _variable(**FLOAT, size=0), "variables.x.size: must be a positive integer (got 0)"),
    ("size a string", _variable(**FLOAT, size="2"), "variables.x.size: must be a positive integer (got '2')"),
    ("size a boolean", _variable(**FLOAT, size=True), "variables.x.size: must be a positive integer (got True)"),
    ("size a float", _variable(**FLOAT, size=2.0), "variables.x.size: must be a positive integer (got 2.0)"),
    ("huge size", _variable(**FLOAT, size=10**30),
     "variables.x.size: must be at most 1000 (got 1000000000000000000000000000000)"),
    ("empty ENUM", _variable(type="ENUM", options=[]), "variables.x.options: must be a non-empty list of strings (got [])"),
    ("ENUM options as one string", _variable(type="ENUM", options="a,b"),
     "variables.x.options: must be a non-empty list of strings (got 'a,b')"),
    ("ENUM option a number", _variable(type="ENUM", options=["a", 2]), "variables.x.options[1]: must be a string (got 2)"),
    ("ENUM option repeated", _variable(type="ENUM", options=["a", "b", "a"]), "variables.x.options: duplicate option 'a'"),
    ("ENUM with a min", _variable(type="ENUM", options=["a"], min=0), "variables.x.min: not allowed for an ENUM (use 'options')"),
    ("FLOAT with options", _variable(**FLOAT, options=["a"]), "variables.x.options: only allowed for an ENUM (this is a FLOAT)"),
    ("FLOAT without max", _variable(type="FLOAT", min=0), "variables.x.max: required for a FLOAT"),
    ("bound as a string", _variable(type="FLOAT", min="0", max=1), "variables.x.min: must be a number (got '0')"),
    ("bound a boolean", _variable(type="FLOAT", min=False, max=1), "variables.x.min: must be a number (got False)"),
    ("min equal to max", _variable(type="FLOAT", min=1, max=1), "variables.x.min: must be < max (got 1 >= 1)"),
    ("scale typo", _variable(**FLOAT, scale="ln"), "variables.x.scale: must be 'linear' or 'log' (got 'ln')"),
    ("log scale below zero", _variable(type="FLOAT", min=-1, max=1, scale="log"),
     "variables.x.min: must be > 0 for a log scale (got -1)"),
    ("INT with a fractional max", _variable(type="INT", min=0, max=2.5), "variables.x.max: must be an integer for an INT (got 2.5)"),
    ("condition not an object", _config(variables={"a": {"type": "ENUM", "options": ["p"]}, "x": {**FLOAT, "when": 3}}),
     "variables.x.when: must be an object mapping a parent variable to its values (got 3)"),
    ("tasks as a list", _config(tasks=["f"]), "tasks: must be a non-empty object mapping task names to types or task objects (got ['f'])"),
    ("tasks empty", _config(tasks={}), "tasks: must be a non-empty object mapping task names to types or task objects (got {{}})"),
    ("only a constraint", _config(tasks={"c": {"type": "CONSTRAINT"}}), "tasks: must have exactly one OBJECTIVE task (got 0: [])"),
    ("task without type", _config(tasks={"f": {}}), "tasks.f.type: required: OBJECTIVE or CONSTRAINT"),
    ("task spec a number", _config(tasks={"f": 3}), "tasks.f: must be OBJECTIVE or CONSTRAINT, or an object with a 'type' (got 3)"),
    ("task unknown key", _config(tasks={"f": {"type": "OBJECTIVE", "weight": 2}}), "tasks.f.weight: unknown key"),
    ("two unknown keys without hints", _config(flavour="red", owner="me"), "flavour, owner: unknown keys"),
    ("unknown keys of two variables", _config(variables={"a": {**FLOAT, "step": 0.1}, "b": {**FLOAT, "maximum": 2}}),
     "variables.a.step, variables.b.maximum: unknown keys (variables.b.maximum: did you mean 'max'?)"),
    ("unknown keys of two tasks", _config(tasks={"f": {"type": "OBJECTIVE", "weight": 2},
                                                 "c": {"type": "CONSTRAINT", "likelihod": "NOISELESS"}}),
     "tasks.f.weight, tasks.c.likelihod: unknown keys (tasks.c.likelihod: did you mean 'likelihood'?)"),
    ("resources as a list", _config(resources=["my-machine"]),
     'resources: must be an object naming one resource, such as {{"my-machine": {{"scheduler": "local", '
     '"max-concurrent": 2}}}} (got [\'my-machine\'])'),
    ("task resources as a number", _config(tasks={"f": {"type": "OBJECTIVE", "resources": 3}}),
     "tasks.f.resources: must be a list of resource names (got 3)"),
    ("max-concurrent fractional", _config(max_concurrent=2.5), "max-concurrent: must be an integer (got 2.5)"),
    ("max-concurrent a boolean", _config(max_concurrent=True), "max-concurrent: must be an integer (got True)"),
    ("polling-time NaN", _config(polling_time=float("nan")), "polling-time: must be a finite number of seconds (got nan)"),
    ("polling-time Infinity", _config(polling_time=float("inf")), "polling-time: must be a finite number of seconds (got inf)"),
    ("polling-time negative", _config(polling_time=-1), "polling-time: must be > 0 (got -1)"),
    ("seed beyond 64 bits", _config(seed=2**70), "seed: must be < 2**63 (got 1180591620717411303424)"),
    ("seed a string", _config(seed="1"), "seed: must be an integer (got '1')"),
    ("fantasies zero", _config(fantasies=0), "fantasies: must be >= 1 (got 0)"),
    ("thompson-every negative", _config(thompson_every=-1), "thompson-every: must be >= 0 (got -1)"),
    ("crowding-share a string", _config(crowding_share="1/4"), "crowding-share: must be a number from 0 to 1 (got '1/4')"),
    ("driver as a list", _config(driver=["local"]), "driver: must be an object such as {{\"name\": \"local\"}} (got ['local'])"),
    ("driver name a number", _config(driver={"name": 3}), "driver.name: must be a driver name such as \"local\" (got 3)"),
    ("time-limit negative", _config(driver={"name": "local", "time-limit": -5}), "driver.time-limit: must be > 0 (got -5)"),
    ("time-limit bad clock", _config(driver={"name": "local", "time-limit": "1:xx:00"}),
     "driver.time-limit: must be seconds or [D-]HH:MM:SS (got '1:xx:00')"),
    ("main-file a number", _config(main_file=3), "main-file: must be a non-empty string (got 3)"),
    ("main-file absolute outside", _config(main_file="/etc/passwd"),
     "main-file: must be inside the experiment folder (got '/etc/passwd' -> /etc/passwd.py)"),
    ("main-file through a symlinked folder", _config(main_file="lib/wrapper.py"),
     "main-file: must be inside the experiment folder (got 'lib/wrapper.py' -> {outside}/wrapper.py)"),
    ("command with an empty argument", _config(language="SHELL", main_file=None, command=["bash", ""]),
     "command[1]: must be a non-empty string (got '')"),
    ("SHELL with a main-file", _config(language="SHELL", command=["bash", "run.sh"]),
     "main-file: not used with language SHELL (the program is given by 'command')"),
    ("PYTHON with a command", _config(command=["bash", "run.sh"]),
     "command: only used with language SHELL (a PYTHON wrapper is given by 'main-file')"),
    ("experiment-name empty", _config(experiment_name=" "), "experiment-name: must be a non-empty string (got ' ')"),
]


def test_corpus_is_large_and_distinct():
    assert len(CONFIG_CASES) + len(OUTPUT_CASES) + len(RETURN_CASES) >= 40
    assert len({message for _, _, message in CONFIG_CASES}) == len(CONFIG_CASES)


@pytest.mark.parametrize("name,text,expected", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_gives_its_message_exit_2_and_no_state(tmp_path, capsys, name, text, expected):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
    os.symlink(outside, folder / "lib")
    (folder / "config.json").write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    before = sorted(p.name for p in folder.iterdir())
    assert cli_module.main(["run", str(folder)]) == 2
    message = expected.format(dir=folder.resolve(), outside=outside.resolve())
    assert capsys.readouterr().err == f"spearmint-nn: {message}\n"
    assert sorted(p.name for p in folder.iterdir()) == before


# ---- wrapper outputs -----------------------------------------------------------------------

def _run(tmp_path: Path, config: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    paths = ExperimentPaths(folder)
    paths.inputs.mkdir(parents=True)
    paths.results.mkdir()
    atomic_write_json(paths.input_file(1), {"x": [0.5], "y": [1.0]})
    code = run_job(folder, 1)
    result = json.loads(paths.result_file(1).read_text())
    assert (code == 0) == (result["status"] == "ok")
    return result


# (case name, what a SHELL wrapper prints on stdout, failure kind, error message)
OUTPUT_CASES = [
    ("NaN", b"NaN\n", "nan", "returned main=nan"),
    ("Infinity", b"-Infinity\n", "nan", "returned main=-inf"),
    ("overflowing float", b"1e999\n", "nan", "returned main=inf"),
    ("integer beyond float range", b"1" + b"0" * 400 + b"\n", "nan", "returned main=inf"),
    ("duplicate keys", b'{"main": 1, "main": 2}\n', "bad_result",
     "result repeats the key(s) ['main']: which value counts is ambiguous"),
    ("a list", b"[1, 2]\n", "bad_result", "returned list [1, 2]; expected a number or a dict of task -> number"),
    ("a boolean", b"true\n", "bad_result", "returned bool True; expected a number or a dict of task -> number"),
    ("a quoted number", b'"3.5"\n', "bad_result", "returned str '3.5'; expected a number or a dict of task -> number"),
    ("two numbers", b"3.5 4.5\n", "bad_result", "result '3.5 4.5' is not a JSON number or object"),
    ("non-UTF-8 bytes", b"\xff\xfe\x80\n", "bad_result", "result '\ufffd\ufffd\ufffd' is not a JSON number or object"),
    ("task value a string", b'{"main": "1"}\n', "bad_result", "task 'main' is str '1', not a number"),
    ("extra task", b'{"main": 1, "extra": 2}\n', "bad_result", "returned keys ['extra', 'main']; expected exactly ['main']"),
    ("empty object", b"{}\n", "bad_result", "returned keys []; expected exactly ['main']"),
    ("nothing", b"", "bad_result", "command printed nothing and wrote no result file"),
    ("deeply nested", b"[" * 100_000 + b"\n", "bad_result", "result '" + "[" * 77 + "...' is not a JSON number or object"),
]


@pytest.mark.parametrize("name,output,failure,error", OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES])
def test_bad_command_output_fails_the_job_with_its_reason(tmp_path, name, output, failure, error):
    config = {**quick_config(), "language": "SHELL", "main-file": None, "command": ["sh", "-c", "cat out.bin", "sh"]}
    result = _run(tmp_path, config, {"out.bin": output})
    assert (result["status"], result["failure"], result["error"]) == ("error", failure, error)


# (case name, what a PYTHON wrapper returns, failure kind, error message)
RETURN_CASES = [
    ("integer beyond float range", "10 ** 400", "nan", "returned main=inf"),
    ("complex number", "1 + 2j", "bad_result", "returned complex (1+2j); expected a number or a dict of task -> number"),
    ("array of two", "np.array([1.0, 2.0])", "bad_result",
     "returned ndarray of 2 values array([1., 2.]); expected one number (e.g. loss.item()) or a dict of task -> number"),
    ("numpy NaN in a dict", "{'main': np.float32('nan')}", "nan", "returned main=nan"),
    ("boolean", "True", "bad_result", "returned bool True; expected a number or a dict of task -> number"),
    ("bytes", "b'1.0'", "bad_result", "returned bytes b'1.0'; expected a number or a dict of task -> number"),
]


@pytest.mark.parametrize("name,expression,failure,error", RETURN_CASES, ids=[c[0] for c in RETURN_CASES])
def test_bad_return_value_fails_the_job_with_its_reason(tmp_path, name, expression, failure, error):
    wrapper = f"import numpy as np\n\ndef main(job_id, params):\n    return {expression}\n"
    result = _run(tmp_path, quick_config(), {"wrapper.py": wrapper.encode()})
    assert (result["status"], result["failure"], result["error"]) == ("error", failure, error)
