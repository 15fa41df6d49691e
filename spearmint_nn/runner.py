"""Run one job: ``python -m spearmint_nn.runner <experiment_dir> <job_id>``.

Every driver starts this same command (with ``sys.executable``, so a cluster job uses the
daemon's interpreter). It reads ``config.json`` and ``.spearmint/inputs/<id>.json``, evaluates
the wrapper, and writes ``.spearmint/results/<id>.json`` atomically (schema in
:mod:`spearmint_nn.layout`; ``failure`` adds the short kind of a failure). Before anything else
it claims the job (:mod:`spearmint_nn.claims`); a second runner of the same job evaluates
nothing, waits for the first and exits with 0 if its result file exists. The exit code is 0
when the job produced values and non-zero otherwise; the result file, not the exit code, is
what the daemon records.

PYTHON wrappers: ``main(job_id, params)`` of ``main-file``, imported from the experiment folder
(the working directory), with params in wrapper form (numpy arrays for FLOAT/INT, lists of
strings for ENUM). It returns a number, a dict ``{task: number}`` covering exactly the tasks,
or NaN.

SHELL wrappers: ``command`` (an argument list) is run with the path of the params JSON file
appended (``{"x": [1.5], "kind": ["a"]}``: every variable as a list). Environment:
``SPEARMINT_JOB_ID``, ``SPEARMINT_PARAMS_FILE`` and ``SPEARMINT_RESULT_FILE``. The program
reports its result either by writing it to ``$SPEARMINT_RESULT_FILE`` or, if it leaves that file
empty, as the last non-empty line of its stdout. Either way the text is a JSON number
(``3.14``, ``NaN``) or a JSON object ``{"task": number, ...}``. A non-zero exit status is a
failure ("exit_code"), whatever was printed.
"""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .claims import take_claim, wait_for_holder
from .config import ExperimentConfig, load_config
from .errors import ConfigError
from .layout import ExperimentPaths
from .store import BadValues, atomic_write_json, check_values, read_json

TRACEBACK_CHARS = 4000


class JobFailure(Exception):
    """The job produced no values; ``failure`` is the short kind recorded in the job file."""

    def __init__(self, failure: str, message: str, exit_code: int = 1, tb: str = ""):
        super().__init__(message)
        self.failure = failure
        self.exit_code = exit_code
        self.tb = tb


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def run_python(config: ExperimentConfig, job_id: int, params_json: dict[str, Any]) -> Any:
    """Import the wrapper module and return ``main(job_id, params)``."""
    wrapper = config.main_file
    sys.path.insert(0, str(wrapper.parent))
    try:
        spec = importlib.util.spec_from_file_location(wrapper.stem, wrapper)
        module = importlib.util.module_from_spec(spec)
        sys.modules[wrapper.stem] = module
        spec.loader.exec_module(module)
        main = getattr(module, "main", None)
        if not callable(main):
            raise JobFailure("bad_wrapper", f"{wrapper.name} has no function main(job_id, params)")
        return main(job_id, config.space.to_wrapper(params_json))
    except JobFailure:
        raise
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        raise JobFailure("exit_code", f"wrapper called sys.exit({exc.code!r})", exit_code=code or 1) from None
    except Exception as exc:
        raise JobFailure("exception", _one_line(f"{type(exc).__name__}: {exc}"),
                         tb=traceback.format_exc()[-TRACEBACK_CHARS:]) from None


def parse_result_text(text: str) -> Any:
    """A command-line wrapper's result text as a JSON value (number, NaN or object)."""
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        if repeated:
            raise JobFailure("bad_result", f"result repeats the key(s) {repeated}: which value counts is ambiguous")
        return dict(pairs)

    try:
        return json.loads(text, object_pairs_hook=no_duplicates)
    except (ValueError, RecursionError):
        raise JobFailure("bad_result", f"result {_one_line(text, 80)!r} is not a JSON number or object") from None


def run_command(config: ExperimentConfig, job_id: int, params_file: Path, result_file: Path) -> Any:
    """Run the SHELL wrapper's command; stream its stdout through; return its parsed result."""
    scratch = result_file.with_name(f".{result_file.stem}.wrapper-out")
    scratch.unlink(missing_ok=True)
    env = {**os.environ, "SPEARMINT_JOB_ID": str(job_id), "SPEARMINT_PARAMS_FILE": str(params_file),
           "SPEARMINT_RESULT_FILE": str(scratch)}
    last_line = ""
    try:
        proc = subprocess.Popen([*config.command, str(params_file)], cwd=config.experiment_dir, env=env,
                                stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise JobFailure("exception", _one_line(f"cannot start {config.command[0]!r}: {exc.strerror}")) from None
    for raw in proc.stdout:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        line = raw.decode("utf-8", errors="replace").strip()
        if line:
            last_line = line
    code = proc.wait()
    try:
        written = scratch.read_text(encoding="utf-8", errors="replace").strip() if scratch.exists() else ""
    finally:
        scratch.unlink(missing_ok=True)
    if code != 0:
        raise JobFailure("exit_code", f"command exited with status {code}", exit_code=code if code > 0 else 1)
    text = written or last_line
    if not text:
        raise JobFailure("bad_result", "command printed nothing and wrote no result file")
    return parse_result_text(text)


def run_job(experiment_dir: str | Path, job_id: int) -> int:
    """Evaluate one job and write its result file; return the process exit code."""
    paths = ExperimentPaths(experiment_dir)
    holder = take_claim(paths, job_id)
    if holder is not None:  # started twice (see spearmint_nn.claims): never evaluate twice
        return 0 if wait_for_holder(paths, job_id, holder) else 1
    started = time.time()
    result: dict[str, Any] = {"id": job_id, "host": socket.gethostname(), "started": started}
    exit_code = 0
    try:
        try:
            config = load_config(paths.experiment, check_driver=False)
        except ConfigError as exc:
            raise JobFailure("bad_config", str(exc)) from None
        params = read_json(paths.input_file(job_id))
        if not isinstance(params, dict):
            raise JobFailure("bad_params", f"cannot read {paths.input_file(job_id)}")
        if config.language == "SHELL":
            raw = run_command(config, job_id, paths.input_file(job_id), paths.result_file(job_id))
        else:
            raw = run_python(config, job_id, params)
        try:
            values = check_values(raw, list(config.tasks))
        except BadValues as exc:
            raise JobFailure(exc.failure, str(exc)) from None
        result.update(status="ok", values=values)
    except JobFailure as exc:
        exit_code = exc.exit_code
        result.update(status="error", failure=exc.failure, error=_one_line(str(exc)), traceback=exc.tb)
        print(f"spearmint-nn runner: job {job_id} failed ({exc.failure}): {exc}", file=sys.stderr)
        if exc.tb:
            print(exc.tb, file=sys.stderr)
    result["ended"] = time.time()
    atomic_write_json(paths.result_file(job_id), result)
    return exit_code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m spearmint_nn.runner <experiment_dir> <job_id>", file=sys.stderr)
        return 2
    return run_job(argv[0], int(argv[1]))


def command_for(experiment_dir: Path, job_id: int) -> list[str]:
    """The argument list every driver runs for one job."""
    return [sys.executable, "-m", "spearmint_nn.runner", str(experiment_dir), str(job_id)]


if __name__ == "__main__":
    sys.exit(main())
