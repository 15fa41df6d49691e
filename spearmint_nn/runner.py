"""Run one job: ``python -m spearmint_nn.runner <experiment_dir> <job_id> [--attempt N]``.

Every driver starts this same command (with ``sys.executable``, so a cluster job uses the
daemon's interpreter). It reads ``config.json`` and ``.spearmint/inputs/<id>.json``, evaluates
the wrapper, and writes ``.spearmint/results/<id>.json`` atomically, a
:class:`~spearmint_nn.experiment.results.JobResult` (its module gives the schema). Before
anything else it claims the job (:mod:`spearmint_nn.experiment.claims`); a second runner of the
same job evaluates nothing, waits for the first and exits with 0 if its result file exists;
another attempt of the same scheduler job (requeued or rescheduled by the scheduler), or the
attempt ``N`` the daemon submitted the job again for, evaluates it, and the result file lists
every attempt. The result file is created once: a job has one result however many attempts ran.
The exit code is 0 when the job produced values and non-zero otherwise; the result file, not
the exit code, is what the daemon records. When the experiment folder refuses the result file
(full, over quota, read-only), or another write of the runner's, the runner keeps what it can
and exits with 75 (:mod:`spearmint_nn.experiment.spare_results`).

PYTHON wrappers: ``main(job_id, params)`` of ``main-file``, imported from the experiment folder
(the working directory), with params in wrapper form (numpy arrays for FLOAT/INT, lists of
strings for ENUM; see :mod:`spearmint_nn.problem.space`). It returns a number, a dict
``{task: number}`` covering exactly the tasks, or NaN; a torch tensor or numpy array of one
element counts as its number (:mod:`spearmint_nn.values`, torch-free).

Failures of a PYTHON wrapper that say nothing about the point (the same code fails the same
way at every point) have the kind "bad_wrapper", which the daemon neither shows to the model
nor counts against the budget:

* any exception, or ``sys.exit``, while the module is imported (a syntax error, a missing
  import, a NameError at module level, ...);
* no callable ``main``, or a ``main`` whose signature cannot bind ``(job_id, params)``
  (checked before the call, so a TypeError raised inside main is not mistaken for it);
* ``main`` returning None (a missing ``return``);
* inside main, a NameError (UnboundLocalError too), ImportError, SyntaxError, or an
  AttributeError looked up on a module (``np.lnspace``): mistakes in the code.

``python -m spearmint_nn.runner --check <experiment_dir>`` finds the first two before any job
runs (:func:`check_wrapper`, by the same code): the daemon starts it before it submits anything.

An ``OSError`` inside main that is the disk refusing a write (full, over quota, read-only) is
kind "storage", which says nothing about the point either. Any other exception inside main is
kind "exception"; ``sys.exit`` inside main is
"exit_code". Every error result carries ``location``: ``"<file>:<line>"`` (the file relative to
the experiment folder when inside it, else absolute) of the innermost traceback frame inside
the experiment folder, of a SyntaxError's own file and line, or of ``main``'s definition for a
bad signature or a None; null when unknown.

The job runs with the config.json that the daemon validated at its start, which the daemon
keeps in ``.spearmint/config.json``, not with the user's file as it is when the job starts (an
edit half saved must not fail the job); without that copy (a job run by hand), config.json.

SHELL wrappers: ``command`` (an argument list) is run with the path of the params JSON file
appended (``{"x": [1.5], "kind": ["a"]}``: every variable as a list). Environment:
``SPEARMINT_JOB_ID``, ``SPEARMINT_PARAMS_FILE`` and ``SPEARMINT_RESULT_FILE``. The program
reports its result either by writing it to ``$SPEARMINT_RESULT_FILE`` or, if it leaves that file
empty, as the last non-empty line of its stdout. Either way the text is a JSON number
(``3.14``, ``NaN``) or a JSON object ``{"task": number, ...}``. A non-zero exit status is a
failure ("exit_code"), whatever was printed.

Every attempt: the job's checkpoint folder ``.spearmint/checkpoints/<id>/`` exists before the
wrapper starts (kept across attempts, never deleted), and the environment of the wrapper and of
all it starts holds ``SPEARMINT_CHECKPOINT_DIR`` (its absolute path), ``SPEARMINT_ATTEMPT`` (the
attempt claimed) and ``SPEARMINT_WARNING_FILE`` (created when the warning before the time limit
comes); :mod:`spearmint_nn.job` reads them. The warning is SIGUSR1 to the runner
(:mod:`spearmint_nn.time_limit`), passed on to a SHELL command as SIGUSR1. A wrapper that asks to
be resumed (PYTHON: ``spearmint_nn.job.resume_later()``; SHELL: exit status 99) ends the attempt
with no result file but ``attempts/<id>-<n>.json`` (:mod:`spearmint_nn.experiment.resume`) and
exit code 0, when config.json has ``resume``; without it, that is an "exit_code" failure.
``--attempt N`` runs the job as attempt N (the daemon's next attempt of such a job); the final
result's ``attempts`` lists the checkpointed attempts before it.

Progress reports (a learning curve): the environment also holds ``SPEARMINT_REPORT_FILE``, the
job's ``.spearmint/reports/<id>.txt`` (its folder exists before the wrapper starts; the first
report creates the file). A PYTHON wrapper calls ``spearmint_nn.job.report(step, value)``; a
SHELL command, or anything it starts, appends lines ``<step> <value>``, each in one write that
ends with its newline (``echo "$epoch $loss" >> "$SPEARMINT_REPORT_FILE"``). The file is kept
across attempts; before attempt n >= 2 the runner appends ``# attempt <n>``. The daemon reads it
as the job runs (format and parser: :mod:`spearmint_nn.experiment.curves`).
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import os
import socket
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any, Callable

from . import job
from .experiment.claims import attempt_record, take_claim, wait_for_holder
from .experiment.config import ExperimentConfig, load_config
from .errors import ConfigError
from .experiment.layout import ExperimentPaths
from .experiment.jobs import BadValues, check_values
from .experiment.results import JobResult, ResultStatus
from .experiment.resume import CheckpointedAttempt
from .experiment.spare_results import STORAGE_FAILURE, UNWRITTEN_EXIT, deliver, is_storage_error, reserved_space
from .files import read_json
from .time_limit import WarningWatch

TRACEBACK_CHARS = 4000
# Exceptions raised inside main that are mistakes in the code rather than answers about the
# point: a misspelt or unassigned name, a module that is not installed, a syntax error in a
# module main imports. (NameError covers UnboundLocalError.)
CODE_ERRORS = (NameError, ImportError, SyntaxError)


class Checkpointed(Exception):
    """The wrapper saved its checkpoint and asked to be resumed: the attempt ends, the job does not."""


def _resume_asked(config: ExperimentConfig, how: str) -> Exception:
    """What a wrapper's request to be resumed (``how``) is: :class:`Checkpointed` when the
    experiment opted in, else a failure, because nothing would ever resume it."""
    if config.resume is None:
        return JobFailure("exit_code", f"the wrapper asked to be resumed later ({how}), but config.json has no "
                          "\"resume\" key: add one to let jobs stop before their time limit and resume")
    return Checkpointed(how)


class JobFailure(Exception):
    """The job produced no values; ``failure`` is the short kind recorded in the job file and
    ``location`` the ``"<file>:<line>"`` it points at (see :func:`_location`), when known."""

    def __init__(self, failure: str, message: str, exit_code: int = 1, tb: str = "", location: str | None = None,
                 depends_on_environment: bool = False):
        super().__init__(message)
        self.failure = failure
        self.exit_code = exit_code
        self.tb = tb
        self.location = location
        # Whether the same code may run where the environment differs (a compute node after its
        # setup lines): see check_wrapper.
        self.depends_on_environment = depends_on_environment


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _place(filename: str | None, line: int | None, experiment: Path) -> str | None:
    """``"<file>:<line>"``, the file relative to the experiment folder when inside it."""
    if not filename or line is None or not os.path.isfile(filename):
        return None
    path = Path(os.path.realpath(filename))
    shown = path.relative_to(experiment) if path.is_relative_to(experiment) else path
    return f"{shown}:{line}"


def _location(exc: BaseException, experiment: Path) -> str | None:
    """Where an exception points in the user's code: the file and line of a SyntaxError, else
    the innermost frame of its traceback inside the experiment folder; None when neither is."""
    if isinstance(exc, SyntaxError):
        place = _place(exc.filename, exc.lineno, experiment)
        if place is not None:
            return place
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        # "<frozen importlib._bootstrap>" and the like name no file (but would resolve inside the
        # working directory, which is the experiment folder)
        if os.path.isfile(frame.filename) and Path(os.path.realpath(frame.filename)).is_relative_to(experiment):
            return _place(frame.filename, frame.lineno, experiment)
    return None


def _definition(function: Any, experiment: Path) -> str | None:
    """The ``"<file>:<line>"`` of a function's ``def``, when it has Python code."""
    code = getattr(function, "__code__", None)
    return None if code is None else _place(code.co_filename, code.co_firstlineno, experiment)


def _is_code_error(exc: Exception) -> bool:
    """Whether an exception raised inside main is a mistake in the code (see CODE_ERRORS); an
    AttributeError counts when it was looked up on a module (``np.lnspace``)."""
    if isinstance(exc, CODE_ERRORS):
        return True
    return isinstance(exc, AttributeError) and isinstance(getattr(exc, "obj", None), types.ModuleType)


def _failure(failure: str, exc: BaseException, experiment: Path) -> JobFailure:
    return JobFailure(failure, _one_line(f"{type(exc).__name__}: {exc}"), tb=traceback.format_exc()[-TRACEBACK_CHARS:],
                      location=_location(exc, experiment))


def _load_main(wrapper: Path, experiment: Path) -> Callable[..., Any]:
    """Import the wrapper module and return its ``main``, checked to take (job_id, params)."""
    try:
        spec = importlib.util.spec_from_file_location(wrapper.stem, wrapper)
        module = importlib.util.module_from_spec(spec)
        sys.modules[wrapper.stem] = module
        spec.loader.exec_module(module)
    except (Exception, SystemExit, job.ResumeLater) as exc:  # sys.exit at import time (argparse, say) is no answer either
        failure = _failure("bad_wrapper", exc, experiment)
        # A syntax error or a misspelt name fails wherever the module is imported; a missing
        # module, library or file may be there after a batch job's setup lines.
        failure.depends_on_environment = not isinstance(exc, (SyntaxError, NameError))
        raise failure from None
    main = getattr(module, "main", None)
    if not callable(main):
        raise JobFailure("bad_wrapper", f"{wrapper.name} has no function main(job_id, params)")
    try:
        signature = inspect.signature(main)
    except (TypeError, ValueError):  # no signature to read (some builtins): calling it will tell
        return main
    try:
        signature.bind(0, {})
    except TypeError as exc:
        raise JobFailure("bad_wrapper", f"{wrapper.name}: main{signature} cannot be called as main(job_id, params): {exc}",
                         location=_definition(main, experiment)) from None
    return main


def run_python(config: ExperimentConfig, job_id: int, params_json: dict[str, Any]) -> Any:
    """Import the wrapper module and return ``main(job_id, params)``.

    Failures that say nothing about the point are kind "bad_wrapper" (see the module docstring).
    """
    wrapper, experiment = config.main_file, config.paths.experiment
    sys.path.insert(0, str(wrapper.parent))
    main = _load_main(wrapper, experiment)
    try:
        result = main(job_id, config.space.to_wrapper(params_json))
    except job.ResumeLater:
        raise _resume_asked(config, "spearmint_nn.job.resume_later()") from None
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        raise JobFailure("exit_code", f"wrapper called sys.exit({exc.code!r})", exit_code=code or 1,
                         location=_location(exc, experiment)) from None
    except Exception as exc:
        if is_storage_error(exc):  # the disk refused the wrapper's own write: nothing about the point
            raise _failure(STORAGE_FAILURE, exc, experiment) from None
        raise _failure("bad_wrapper" if _is_code_error(exc) else "exception", exc, experiment) from None
    if result is None:
        raise JobFailure("bad_wrapper", f"{wrapper.name}: main returned None; it must return the objective's "
                         "value or a dict {task: value} (is a return statement missing?)",
                         location=_definition(main, experiment))
    return result


def wrapper_params(experiment_dir: str | Path, **values: Any) -> dict[str, Any]:
    """The params of one job exactly as ``main(job_id, params)`` receives them, from plain values
    (``learning_rate=0.01``, a list for a variable of size > 1): to call a wrapper by hand, as
    a job would, since a numpy array of your own is not what the runner passes (its size-1
    values act as numbers: ``float(params["x"])`` works on them and fails on ``np.array([x])``)::

        from spearmint_nn.runner import wrapper_params
        import wrapper
        print(wrapper.main(0, wrapper_params(".", learning_rate=0.01, layers=3, activation="relu")))

    A value outside the variables is a ConfigError naming it."""
    space = load_config(experiment_dir, check_driver=False).space
    space.validate(values)
    return space.to_wrapper(values)


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


def run_command(config: ExperimentConfig, job_id: int, params_file: Path, result_file: Path,
                watch: WarningWatch | None = None) -> Any:
    """Run the SHELL wrapper's command; stream its stdout through; return its parsed result.
    ``watch`` passes the warning before the time limit on to the command while it runs."""
    scratch = result_file.with_name(f".{result_file.stem}.wrapper-out")
    scratch.unlink(missing_ok=True)
    env = {**os.environ, "SPEARMINT_JOB_ID": str(job_id), "SPEARMINT_PARAMS_FILE": str(params_file),
           "SPEARMINT_RESULT_FILE": str(scratch)}
    last_line = ""
    try:
        proc = subprocess.Popen([*config.command, str(params_file)], cwd=config.paths.experiment, env=env,
                                stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise JobFailure("exception", _one_line(f"cannot start {config.command[0]!r}: {exc.strerror}")) from None
    if watch is not None:
        watch.child = proc
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
    if code == job.RESUME_EXIT_STATUS:
        raise _resume_asked(config, f"exit status {code}")
    if code != 0:
        raise JobFailure("exit_code", f"command exited with status {code}", exit_code=code if code > 0 else 1)
    text = written or last_line
    if not text:
        raise JobFailure("bad_result", "command printed nothing and wrote no result file")
    return parse_result_text(text)


def process_started() -> float | None:
    """Unix time at which this process started (Linux's /proc; None elsewhere), so that a job's
    start-up (interpreter, imports, a container) is told apart from its time in the queue."""
    try:
        with open("/proc/self/stat") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])  # field 22: start, in clock ticks since boot
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _prepare_attempt(paths: ExperimentPaths, job_id: int, attempt: int, watch: WarningWatch) -> None:
    """The job's checkpoint folder, and the environment that tells the wrapper (and whatever it
    starts) where it is, which attempt this is and where the warning shows (spearmint_nn.job)."""
    checkpoints = paths.checkpoint_dir(job_id)
    checkpoints.mkdir(parents=True, exist_ok=True)
    watch.attach(paths.warning_file(job_id, attempt))
    _mark_attempt(paths.report_file(job_id), attempt)
    os.environ.update({job.CHECKPOINT_DIR_VARIABLE: str(checkpoints), job.ATTEMPT_VARIABLE: str(attempt),
                       job.WARNING_FILE_VARIABLE: str(paths.warning_file(job_id, attempt)),
                       job.REPORT_FILE_VARIABLE: str(paths.report_file(job_id))})


def _mark_attempt(report_file: Path, attempt: int) -> None:
    """Create the reports folder, and from the second attempt on append ``# attempt <n>`` to the
    job's report file (spearmint_nn.experiment.curves), so that the curve says which attempt
    each report came from. A last line that an earlier attempt left without its newline (it was
    killed mid-write) is ended first, so that the mark is not glued to it."""
    report_file.parent.mkdir(parents=True, exist_ok=True)
    if attempt < 2:
        return
    with open(report_file, "ab+") as handle:
        handle.seek(0, os.SEEK_END)
        unfinished = handle.tell() > 0 and (handle.seek(-1, os.SEEK_END), handle.read(1))[1] != b"\n"
        handle.write((b"\n" if unfinished else b"") + f"# attempt {attempt}\n".encode("ascii"))


def run_job(experiment_dir: str | Path, job_id: int, attempt: int | None = None) -> int:
    """Evaluate one job and write its result file; return the process exit code. ``attempt``:
    the daemon runs the job again as that attempt (it ended earlier to be resumed)."""
    # The warning is handled from the start (unhandled, it would kill the runner). The process
    # is left as found (handler, environment): a job may run inside a caller's process.
    watch = WarningWatch(job_id).install()
    names = (job.CHECKPOINT_DIR_VARIABLE, job.ATTEMPT_VARIABLE, job.WARNING_FILE_VARIABLE, job.REPORT_FILE_VARIABLE)
    saved = {name: os.environ.get(name) for name in names}
    paths = ExperimentPaths(experiment_dir)
    try:
        with reserved_space(paths, job_id) as reserved:  # (a disk that fills meanwhile still takes the result)
            return _run_attempt(paths, job_id, attempt, watch, reserved)
    except OSError as exc:
        if not is_storage_error(exc):
            raise
        # Nothing about the point: the daemon runs the job again (spearmint_nn.experiment.spare_results).
        print(f"spearmint-nn runner: job {job_id}: a write was refused ({exc}); the job ends without a result, "
              f"to be run again", file=sys.stderr, flush=True)
        return UNWRITTEN_EXIT
    finally:
        watch.uninstall()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_attempt(paths: ExperimentPaths, job_id: int, attempt: int | None, watch: WarningWatch,
                 reserved: Path | None) -> int:
    """:func:`run_job` once the warning is handled and the result's space reserved."""
    claim = take_claim(paths, job_id, attempt or 1)
    if not claim.ours:  # started twice (see spearmint_nn.experiment.claims): never evaluate twice
        return 0 if wait_for_holder(paths, job_id, claim.holder) else 1
    if claim.earlier:
        why = (claim.holder["restarts"] or "restarted by the scheduler") if attempt is None else f"--attempt {attempt}"
        print(f"spearmint-nn runner: job {job_id}, attempt {claim.attempt}: run again ({why}); evaluating it",
              file=sys.stderr, flush=True)
    host, process_start, started = socket.gethostname(), process_started(), time.time()
    _prepare_attempt(paths, job_id, claim.attempt, watch)
    exit_code = 0
    try:
        try:
            # the settings the daemon validated, whatever config.json holds at this second
            config = load_config(paths.experiment, check_driver=False, in_force=True)
        except ConfigError as exc:
            raise JobFailure("bad_config", str(exc)) from None
        params = read_json(paths.input_file(job_id))
        if not isinstance(params, dict):
            raise JobFailure("bad_params", f"cannot read {paths.input_file(job_id)}")
        watch.forward = config.resume is not None
        if config.language == "SHELL":
            raw = run_command(config, job_id, paths.input_file(job_id), paths.result_file(job_id), watch)
        else:
            raw = run_python(config, job_id, params)
        try:
            values = check_values(raw, list(config.tasks.names))
        except BadValues as exc:
            raise JobFailure(exc.failure, str(exc)) from None
        outcome: dict[str, Any] = {"status": ResultStatus.OK, "values": values}
    except Checkpointed as exc:
        # No result: the job is not finished. The record tells the daemon to run it again.
        CheckpointedAttempt.of_claim(attempt_record(claim.holder, time.time(), "checkpointed"),
                                     job.warned_at()).write(paths, job_id)
        print(f"spearmint-nn runner: job {job_id}, attempt {claim.attempt}: the wrapper saved its checkpoint and "
              f"asked to be resumed ({exc})", file=sys.stderr, flush=True)
        return 0
    except JobFailure as exc:
        exit_code = exc.exit_code
        outcome = {"status": ResultStatus.ERROR, "failure": exc.failure, "error": _one_line(str(exc)),
                   "traceback": exc.tb, "location": exc.location}
        print(f"spearmint-nn runner: job {job_id} failed ({exc.failure}): {exc}", file=sys.stderr)
        if exc.tb:
            print(exc.tb, file=sys.stderr)
    ended = time.time()
    # The earlier attempts ended to be resumed (their own records say when), or were stopped by
    # the scheduler, which says nothing of when.
    checkpointed = [CheckpointedAttempt.read(paths, job_id, earlier.get("attempt", i + 1))
                    for i, earlier in enumerate(claim.earlier)]
    attempts = [record.entry() if record is not None else attempt_record(earlier, None, "requeued")
                for record, earlier in zip(checkpointed, claim.earlier)]
    attempts.append(attempt_record(claim.holder, ended, outcome["status"].value))
    result = JobResult(id=job_id, host=host, process_started=process_start, started=started, ended=ended,
                       attempts=attempts, **outcome)
    written = deliver(paths, result, reserved)
    if written is None:  # kept elsewhere if anywhere: the daemon looks there
        return UNWRITTEN_EXIT
    if not written:
        # An earlier attempt that the scheduler said was gone finished after all: the job keeps
        # the one result that came first.
        print(f"spearmint-nn runner: job {job_id} already has a result (from another attempt); "
              f"this attempt's is not recorded", file=sys.stderr, flush=True)
    return exit_code


def check_wrapper(experiment_dir: str | Path) -> dict[str, Any]:
    """What every job would record if the PYTHON wrapper cannot run at any point, found without
    evaluating it: the module is imported as a job imports it and must have a ``main`` that
    takes ``(job_id, params)``. Returns ``{"status": "ok"}``, or an error result as in a
    result file (``failure``, ``error``, ``traceback``, ``location``) with
    ``depends_on_environment``: whether the failure came from importing the module and was
    neither a SyntaxError nor a NameError, so that it may not happen where a batch job runs.
    """
    experiment = Path(experiment_dir)
    try:
        try:
            config = load_config(experiment, check_driver=False)
        except ConfigError as exc:
            raise JobFailure("bad_config", str(exc)) from None
        if config.language == "PYTHON":
            sys.path.insert(0, str(config.main_file.parent))
            _load_main(config.main_file, config.paths.experiment)
    except JobFailure as exc:
        return {"status": "error", "failure": exc.failure, "error": _one_line(str(exc)), "traceback": exc.tb,
                "location": exc.location, "depends_on_environment": exc.depends_on_environment}
    return {"status": "ok"}


def _check_main(experiment_dir: str) -> int:
    """``--check``: :func:`check_wrapper`'s answer as one JSON line on stdout (exit 0 when ok, 1
    when not). What the wrapper prints while it is imported goes to stderr, so that the answer
    is the only line on stdout."""
    sys.stdout.flush()
    stdout = os.dup(1)
    os.dup2(2, 1)  # at the descriptor level: output of C extensions too
    try:
        result = check_wrapper(experiment_dir)
    finally:
        sys.stdout.flush()
        os.dup2(stdout, 1)
        os.close(stdout)
    print(json.dumps(result), flush=True)
    return 0 if result["status"] == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--check":
        return _check_main(argv[1])
    attempt = None
    if len(argv) == 4 and argv[2] == "--attempt" and argv[3].isdigit() and int(argv[3]) >= 1:
        attempt, argv = int(argv[3]), argv[:2]
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m spearmint_nn.runner <experiment_dir> <job_id> [--attempt N]\n"
              "       python -m spearmint_nn.runner --check <experiment_dir>", file=sys.stderr)
        return 2
    return run_job(argv[0], int(argv[1]), attempt)


# Every job runs with the daemon's own interpreter: on a cluster, the environment it was started in.
_RUNNER = [sys.executable, "-m", "spearmint_nn.runner"]


def command_for(experiment_dir: Path, job_id: int, attempt: int = 1) -> list[str]:
    """The argument list every driver runs for one job (``attempt``: see run_job)."""
    return [*_RUNNER, str(experiment_dir), str(job_id), *(["--attempt", str(attempt)] if attempt > 1 else [])]


def check_command(experiment_dir: Path) -> list[str]:
    """The argument list of :func:`check_wrapper` in a process of its own, with the jobs' interpreter."""
    return [*_RUNNER, "--check", str(experiment_dir)]


if __name__ == "__main__":
    sys.exit(main())
