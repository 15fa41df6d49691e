"""What the SLURM and Grid Engine drivers share.

A batch driver writes a job script (kept in the state folder for the user to read), submits it
with an argument list, and learns every job's state with as few scheduler commands as possible.
This module holds the parts that do not depend on the scheduler:

- option checks for the resource options both drivers offer (memory, CPUs, GPUs, setup lines,
  extra arguments, job name prefix);
- the submit command's layout: the scheduler's own head, options passed on as they are, the
  resources asked (each scheduler spells them its own way), ``extra-args``, the script;
- the job script: the user's environment setup lines, exported variables, ``cd`` into the
  experiment and ``exec`` of the runner command, every word of it quoted with :func:`shlex.quote`;
- job arrays: jobs submitted together go as one array (one submit command) whose script maps
  each task to its job (see :meth:`BatchDriver.submit_many`);
- running one scheduler command (an argument list, never a shell string) with a timeout, and
  classifying the scheduler's message as transient or not (a driver never retries nor sleeps:
  the daemon submits again later, see :mod:`spearmint_nn.daemon.submitter`);
- the poll loop around a driver's one status query: final states are remembered (the daemon
  keeps asking about a finished job until its result file shows up), and after a failed query
  the scheduler is left alone for a growing pause instead of being asked again at once.
"""
from __future__ import annotations

import abc
import dataclasses
import logging
import math
import os
import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

from spearmint_nn.errors import ConfigError
from spearmint_nn.files import atomic_write_bytes, atomic_write_json, read_json
from spearmint_nn.job import WARNING_SIGNAL
from spearmint_nn.text import CONTROL

from .base import (Driver, JobSpec, JobStatus, PollError, SchedulerError, SchedulerState, SiteLimitError,
                   SubmitError)

log = logging.getLogger(__name__)

SHARED_OPTIONS: Mapping[str, str] = {
    "account": "account (project) the jobs are charged to",
    "memory": "memory per job: megabytes as a number, or a string such as '4G' or '500M'",
    "cpus": "CPU cores per job (a positive integer)",
    "gpus": "GPUs per job (a non-negative integer)",
    "setup": "list of shell lines run at the top of the job script (module load, conda activate, ...)",
    "extra-args": "list of extra arguments passed as they are to the submit command",
    "name-prefix": "text put in front of every job name (letters, digits, '_', '.', '-')",
    "result-grace": "seconds to wait for a job's result file after the scheduler says it ended on its own, "
                    "before the job is recorded failed (shared filesystems show files late; default 30; a job "
                    "the scheduler killed waits for none; a result that comes later still replaces the failure)",
    "array-size": "most jobs submitted as one job array when several are submitted at once (default "
                  "1000; 1: one submission per job)",
}
# SLURM's default MaxArraySize (1001) takes task indices 0-1000; Grid Engine's max_aj_tasks 75000.
DEFAULT_ARRAY_SIZE = 1000
_ARRAY_SCRIPT = re.compile(r"^array-[0-9]+(\.[0-9]+)?\.sh$")

_MEMORY = re.compile(r"^[0-9]+[KMGT]?$", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9_.-]*$")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---- option checks -----------------------------------------------------------------------------

def check_string(path: str, value: Any, pattern: re.Pattern[str] | None = None, hint: str = "") -> str:
    """A one-line string (no control characters); optionally matching ``pattern``."""
    if not isinstance(value, str) or not value or CONTROL.search(value):
        raise ConfigError(path, f"must be a non-empty one-line string (got {value!r})")
    if pattern is not None and not pattern.match(value):
        raise ConfigError(path, f"{hint} (got {value!r})")
    return value


def check_string_list(path: str, value: Any) -> list[str]:
    """A list of one-line strings."""
    if not isinstance(value, list):
        raise ConfigError(path, f"must be a list of strings (got {value!r})")
    return [check_string(f"{path}[{i}]", item) for i, item in enumerate(value)]


def check_int(path: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(path, f"must be an integer >= {minimum} (got {value!r})")
    return value


def memory_value(path: str, value: Any) -> str:
    """Memory as the schedulers write it: ``'4096M'`` for 4096 (megabytes), ``'4G'`` as is."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"{value}M"
    if isinstance(value, str) and _MEMORY.match(value) and int(value.rstrip("KMGTkmgt")) > 0:
        return value.upper()
    raise ConfigError(path, f"must be megabytes (a positive integer) or a string such as '4G' or '500M' (got {value!r})")


def check_shared_options(options: Mapping[str, Any]) -> None:
    """Value checks of :data:`SHARED_OPTIONS` (the keys themselves are checked by the base class)."""
    if "account" in options:
        check_string("driver.account", options["account"])
    if "memory" in options:
        memory_value("driver.memory", options["memory"])
    if "cpus" in options:
        check_int("driver.cpus", options["cpus"], 1)
    if "setup" in options:
        check_string_list("driver.setup", options["setup"])
    if "extra-args" in options:
        check_string_list("driver.extra-args", options["extra-args"])
    if "array-size" in options:
        check_int("driver.array-size", options["array-size"], 1)
    if "result-grace" in options:
        grace = options["result-grace"]
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace < math.inf:
            raise ConfigError("driver.result-grace", f"must be a number of seconds >= 0 (got {grace!r})")
    if "name-prefix" in options:
        check_string("driver.name-prefix", options["name-prefix"], _NAME,
                     "may only hold letters, digits, '_', '.' and '-'")


def flag_words(*pairs: tuple[str, Any]) -> list[str]:
    """``[flag, str(value), ...]`` for each ``(flag, value)`` pair whose value is not None."""
    return [word for flag, value in pairs if value is not None for word in (flag, str(value))]


@dataclasses.dataclass(frozen=True)
class Resources:
    """What one job asks of the scheduler, from the driver options; None where nothing is asked."""

    wall_clock: str | None     # wall time as ``[D-]HH:MM:SS`` (see :func:`clock`)
    memory: str | None         # as the schedulers write it: '4096M', '4G' (see :func:`memory_value`)
    cpus: int | None           # CPU cores (slots) per job
    gpus: int | str | None     # GPUs per job, never 0: a count, or SLURM's 'type:count'
    # The warning before the time limit (the experiment's "resume" key), with a wall time only:
    # whole seconds before it, and the soft wall time ``[D-]HH:MM:SS`` at which it comes.
    warning: int | None = None
    soft_wall_clock: str | None = None


def clock(seconds: float) -> str:
    """``[D-]HH:MM:SS`` for a wall time, rounded up to whole seconds (both schedulers read it)."""
    total = math.ceil(seconds)
    days, rest = divmod(total, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


# ---- the job script ----------------------------------------------------------------------------

def _check_env(spec: JobSpec) -> None:
    for key in spec.env:
        if not _ENV_KEY.match(key):
            raise SubmitError(f"environment variable name {key!r} is not a valid shell name", transient=False)


def _script_head(title: str, setup: Sequence[str], submit_argv: Sequence[str],
                 warning_env: Mapping[str, str] | None) -> list[str]:
    lines = [
        "#!/bin/bash",
        f"# {title}, submitted with:",
        "#   " + CONTROL.sub("?", shlex.join(submit_argv)),
        "",
    ]
    if warning_env is not None:
        lines += ["# the warning before the time limit (config.json's resume) is for the runner, which handles it",
                  f"trap '' {WARNING_SIGNAL.name.removeprefix('SIG')}", ""]
        lines += [f"export {key}={shlex.quote(value)}" for key, value in warning_env.items()]
    if setup:
        lines += ["# environment setup (driver.setup in config.json); the job stops if a line fails",
                  "set -e", *setup, "set +e", ""]
    return lines


def _job_lines(spec: JobSpec) -> list[str]:
    """The job's own part of a script: its variables, its folder and the runner."""
    return ([f"export {key}={shlex.quote(value)}" for key, value in spec.env.items()]
            + [f"cd {shlex.quote(str(spec.workdir))} || exit 1",
               "exec " + shlex.join(str(word) for word in spec.command)])


def render_job_script(spec: JobSpec, setup: Sequence[str], submit_argv: Sequence[str],
                      warning_env: Mapping[str, str] | None = None) -> str:
    """The text of a job script that runs ``spec.command`` in ``spec.workdir``.

    ``setup`` lines are the user's own shell code and go in verbatim (stopping the job at the
    first one that fails); everything else is quoted. ``submit_argv`` is shown in a comment so
    the user can see, and repeat, how the script was submitted. ``warning_env`` (not None when
    the scheduler was asked for a warning signal) is exported, and the warning is ignored until
    ``exec`` makes the shell the runner, which handles it: a warning during slow setup lines
    would otherwise kill the job's shell.
    """
    _check_env(spec)
    return "\n".join(_script_head(f"spearmint-nn job {spec.job_id}", setup, submit_argv, warning_env)
                     + _job_lines(spec) + [""])


def render_array_script(specs: Sequence[JobSpec], task_variable: str, first_task: int, setup: Sequence[str],
                        submit_argv: Sequence[str], warning_env: Mapping[str, str] | None = None) -> str:
    """The text of the job script of a job array whose task ``first_task + i`` runs ``specs[i]``
    (the task's index is in ``$task_variable``), as :func:`render_job_script` runs one job.

    The table from task to job is this script's ``case``: it is written before the array is
    submitted and never changed, so a task that starts after a restart of the daemon, or
    after the scheduler requeued it, still runs its own job."""
    for spec in specs:
        _check_env(spec)
    jobs = ", ".join(str(spec.job_id) for spec in specs)
    lines = _script_head(f"spearmint-nn jobs {jobs} as one job array (task {first_task}: job {specs[0].job_id}, "
                         f"and so on)", setup, submit_argv, warning_env)
    lines += ["# the array's task -> the job it runs", f'case "${{{task_variable}:-}}" in']
    for index, spec in enumerate(specs, start=first_task):
        lines += [f"  {index})  # job {spec.job_id}", *("    " + line for line in _job_lines(spec)), "    ;;"]
    lines += [f'  *) echo "spearmint-nn: no job for array task ${{{task_variable}:-(none)}}" >&2; exit 1 ;;',
              "esac", ""]
    return "\n".join(lines)


# ---- running scheduler commands ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CommandResult:
    """What one scheduler command printed."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def message(self) -> str:
        """The scheduler's own words: stderr (else stdout), joined on one line."""
        text = self.stderr.strip() or self.stdout.strip()
        return " ".join(text.split())[:500] or f"exit status {self.returncode}"


class CommandError(SchedulerError):
    """A scheduler command gave no usable answer."""


def run_command(argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None) -> CommandResult:
    """Run ``argv`` (no shell) with a timeout, in ``env`` (default: the daemon's environment);
    raise :class:`CommandError` if it cannot answer."""
    argv = tuple(str(word) for word in argv)
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=timeout_s, env=env)
    except FileNotFoundError:
        raise CommandError(f"{argv[0]}: command not found (is the scheduler's client on PATH?)",
                           transient=False) from None
    except subprocess.TimeoutExpired:
        raise CommandError(f"{argv[0]} gave no answer within {timeout_s:g} s", transient=True) from None
    except OSError as exc:
        raise CommandError(f"{argv[0]}: {exc.strerror}", transient=False) from None
    return CommandResult(argv, done.returncode, done.stdout, done.stderr)


# ---- the driver base ---------------------------------------------------------------------------

class BatchDriver(Driver):
    """A driver that submits job scripts to a batch scheduler (see the module docstring).

    Subclasses give the scheduler's commands: the submit command's :meth:`submit_head` and
    :meth:`resource_argv` (with ``option_flags``, the options it passes on as they are),
    :meth:`parse_submit`, :meth:`query` (one status query for many ids, through :meth:`call`) and
    :meth:`cancel_argv`, plus ``transient_messages``: lower-case fragments of messages that mean
    "try again later"; ``site_limit_messages``: those that mean "a limit of the site on the
    user's jobs is reached" (raised as :class:`~spearmint_nn.drivers.base.SiteLimitError`). For
    job arrays: :meth:`array_argv`, the ``task_*`` class variables and ``array_id_variable``.
    """

    options: ClassVar[Mapping[str, str]] = {**Driver.options, **SHARED_OPTIONS}
    # (driver option, submit flag): one-line string options the submit command takes as they are
    option_flags: ClassVar[tuple[tuple[str, str], ...]] = ()
    transient_messages: ClassVar[tuple[str, ...]] = ()
    # Refusals of the submit command because a per-user, account or QOS cap on submitted jobs is
    # reached: checked first, before transient_messages.
    site_limit_messages: ClassVar[tuple[str, ...]] = ()
    # Messages of the cancel command about jobs that have already ended (not an error).
    gone_messages: ClassVar[tuple[str, ...]] = ()
    command_timeout_s: ClassVar[float] = 60.0
    # After a failed poll the scheduler is not asked again for this long, doubling per failure.
    # Nothing here sleeps: the daemon's one thread must go on collecting results, so a failed
    # submission is retried by the daemon later (its own back-off) and a failed poll at the next
    # poll after this pause, as submitit's watcher rate-limits by timestamps.
    poll_backoff_s: ClassVar[tuple[float, float]] = (5.0, 120.0)
    # Variables a job script exports when a warning is asked for: how the scheduler delivers it
    # (see spearmint_nn.runner: whether the runner passes it on to a SHELL command).
    warning_env: ClassVar[Mapping[str, str]] = {}
    # Job arrays: the index of an array's first task; the variable that tells a task its index
    # and the one that tells it the array's id; how the submit command's output paths name the
    # task's index; and how a task's scheduler id joins the array's id and the index.
    task_first: ClassVar[int] = 0
    task_variable: ClassVar[str] = ""
    array_id_variable: ClassVar[str] = ""
    task_in_path: ClassVar[str] = ""
    task_separator: ClassVar[str] = ""

    def __init__(self, options: Mapping[str, Any], state_dir: Path, warning: float | None = None,
                 max_concurrent: int | None = None):
        super().__init__(options, state_dir, warning, max_concurrent)
        self.max_batch = int(options.get("array-size", DEFAULT_ARRAY_SIZE))
        self.setup: list[str] = list(options.get("setup", []))
        self.extra_args: list[str] = list(options.get("extra-args", []))
        self.name_prefix: str = options.get("name-prefix", "")
        self.memory: str | None = memory_value("driver.memory", options["memory"]) if "memory" in options else None
        self.result_grace_s = float(options.get("result-grace", self.result_grace_s))
        self._final: dict[str, JobStatus] = {}
        self._cancelled: set[str] = set()
        self._poll_failures = 0
        self._next_poll_at = 0.0

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> None:
        super().validate_options(options)
        check_shared_options(options)
        for key, _ in cls.option_flags:
            if key in options and key not in SHARED_OPTIONS:  # the shared ones are checked above
                check_string(f"driver.{key}", options[key])

    # -- what subclasses provide

    @abc.abstractmethod
    def submit_head(self, spec: JobSpec, name: str, stdout: str, stderr: str) -> list[str]:
        """The submit command with the job's name, working folder and output files (``stdout``
        and ``stderr`` as :meth:`path_word` wrote them); raises :class:`SubmitError` if the
        scheduler cannot take them."""

    def path_word(self, path: Path) -> str:
        """``path`` as the submit command's output options take it (a scheduler that expands
        patterns in them escapes them here); :class:`SubmitError` if it cannot be given."""
        return str(path)

    @abc.abstractmethod
    def array_argv(self, count: int, at_once: int) -> list[str]:
        """The submit command's words for an array of ``count`` tasks, from ``task_first`` on,
        of which at most ``at_once`` run at the same time."""

    @abc.abstractmethod
    def resource_argv(self, asked: Resources) -> list[str]:
        """The submit command's words for the resources asked."""

    @abc.abstractmethod
    def parse_submit(self, result: CommandResult) -> str:
        """The scheduler id from the submit command's output; :class:`SubmitError` if none."""

    @abc.abstractmethod
    def query(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        """States of these jobs with as few commands as possible; may leave out ids it could not
        learn this time. Raises :class:`CommandError` when the scheduler gave no answer."""

    @abc.abstractmethod
    def cancel_argv(self, scheduler_ids: Sequence[str]) -> list[str]:
        """The command that cancels these jobs."""

    @abc.abstractmethod
    def find_argv(self, name: str) -> list[str]:
        """The command that lists the queued and running jobs named ``name``."""

    @abc.abstractmethod
    def parse_found(self, result: CommandResult) -> list[tuple[str, str]]:
        """(scheduler id, working folder) of each job :meth:`find_argv` listed, oldest first."""

    def found_task(self, listed: str, index: int) -> str | None:
        """The id of task ``index`` of the array that :meth:`parse_found` listed as ``listed``,
        or None when that line is not this task (a scheduler that lists each task on a line of
        its own gives its id; one that lists the array once, the task's id in it)."""
        array, _, task = listed.partition(self.task_separator)
        if not task:
            return self.task_id(array, index)
        return listed if task == str(index) else None

    def task_id(self, array_id: str, index: int) -> str:
        """The scheduler id of task ``index`` of array ``array_id`` (``12345_3``, ``12345.3``)."""
        return f"{array_id}{self.task_separator}{index}"

    # -- shared machinery

    def job_name(self, spec: JobSpec) -> str:
        return self.name_prefix + spec.name

    def submit_argv(self, spec: JobSpec, name: str, wall_time: float | None,
                    outputs: tuple[str, str] | None = None, array: Sequence[str] = ()) -> list[str]:
        """The submit command for ``spec.script_path`` (the script is written afterwards); an
        array's command has its output paths (``outputs``) and its :meth:`array_argv`."""
        stdout, stderr = outputs or (self.path_word(spec.stdout), self.path_word(spec.stderr))
        opts = self.config
        gpus = opts.get("gpus")
        warning = math.ceil(self.warning) if self.warning is not None and wall_time is not None else None
        asked = Resources(wall_clock=None if wall_time is None else clock(wall_time), memory=self.memory,
                          cpus=opts.get("cpus"), gpus=None if gpus in (0, "0") else gpus, warning=warning,
                          soft_wall_clock=None if warning is None else clock(max(1.0, wall_time - warning)))
        return (self.submit_head(spec, name, stdout, stderr) + list(array) + flag_words(*((flag, opts.get(key)) for key, flag in self.option_flags))
                + self.resource_argv(asked) + self.extra_args + [str(spec.script_path)])

    def is_site_limit(self, message: str) -> bool:
        """Whether a refusal of the submit command names a limit of the site on the user's jobs."""
        message = message.lower()
        return any(fragment in message for fragment in self.site_limit_messages)

    def is_transient(self, result: CommandResult) -> bool:
        message = result.message.lower()
        return any(fragment in message for fragment in self.transient_messages)

    def submit_environment(self) -> Mapping[str, str] | None:
        """The environment of the submit command (None: the daemon's own, as it is)."""
        return None

    def call(self, argv: Sequence[str], accept: Callable[[CommandResult], bool] = lambda r: r.returncode == 0,
             env: Mapping[str, str] | None = None) -> CommandResult:
        """Run a scheduler command once; :class:`CommandError` (transient or not) unless ``accept``
        takes its result."""
        result = run_command(argv, self.command_timeout_s, env)
        if not accept(result):
            raise CommandError(f"{argv[0]} failed: {result.message}", self.is_transient(result))
        return result

    def submit(self, spec: JobSpec) -> str:
        wall_time = spec.wall_time if spec.wall_time is not None else self.time_limit
        argv = self.submit_argv(spec, self.job_name(spec), wall_time)
        try:
            for path in (spec.stdout, spec.stderr):
                # a missing output folder makes SGE park the job in an error state forever
                path.parent.mkdir(parents=True, exist_ok=True)
            spec.script_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(spec.script_path, render_job_script(
                spec, self.setup, argv, self.warning_env if self.warning is not None else None).encode(), mode=0o755)
        except OSError as exc:
            raise SubmitError(f"cannot write the job script {spec.script_path}: {exc.strerror}", transient=False) from None
        return self.parse_submit(self._call_submit(argv))

    def _call_submit(self, argv: Sequence[str]) -> CommandResult:
        """Run the submit command: a refusal is a :class:`SubmitError`, a
        :class:`SiteLimitError` when its words name a limit of the site."""
        try:
            return self.call(argv, env=self.submit_environment())
        except CommandError as exc:
            if self.is_site_limit(str(exc)):
                raise SiteLimitError(str(exc)) from None
            raise SubmitError(str(exc), exc.transient) from None

    def submit_many(self, specs: Sequence[JobSpec]) -> list[str | SubmitError]:
        """Jobs submitted together go as one job array: one submit command, one queue entry,
        each task one job with a scheduler id of its own (:meth:`task_id`); its failure is each
        job's. One job, or jobs that differ in what the submit command asks for them, go one by
        one (see :meth:`_write_array` for the files an array leaves)."""
        if len(specs) > self.max_batch:  # arrays of at most array-size jobs (1: one submission per job)
            return [answer for at in range(0, len(specs), self.max_batch)
                    for answer in self.submit_many(specs[at:at + self.max_batch])]
        alike = {(spec.wall_time, spec.workdir, spec.stdout.parent, spec.script_path.parent) for spec in specs}
        if len(specs) < 2 or len(alike) > 1:
            return super().submit_many(specs)
        try:
            return self._submit_array(specs)
        except SubmitError as exc:
            return [exc] * len(specs)

    def _submit_array(self, specs: Sequence[JobSpec]) -> list[str]:
        first = specs[0]
        wall_time = first.wall_time if first.wall_time is not None else self.time_limit
        scripts = first.script_path.parent
        base = f"array-{first.job_id:06d}"
        for copy in range(2, 10 ** 6):  # a name of its own: an earlier array may have tasks yet to start
            if not (scripts / f"{base}.json").exists():
                break
            base = f"array-{first.job_id:06d}.{copy}"
        # the name tells the array apart from an earlier one of the same first job (whose
        # submission failed): find_submitted looks a job up by its array's name
        name = self.job_name(first) + "-array" + base.partition(".")[2]
        outputs = tuple(self.path_word(first.stdout.parent / f"{base}-") + self.task_in_path + suffix
                        for suffix in (".out", ".err"))
        array = dataclasses.replace(first, script_path=scripts / f"{base}.sh")
        at_once = min(len(specs), self.max_concurrent or len(specs))
        argv = self.submit_argv(array, name, wall_time, outputs, self.array_argv(len(specs), at_once))
        text = render_array_script(specs, self.task_variable, self.task_first, self.setup, argv,
                                   self.warning_env if self.warning is not None else None)
        try:
            self._write_array(specs, base, name, text)
        except OSError as exc:
            raise SubmitError(f"cannot write the job array's files in {scripts}: {exc.strerror}", transient=False) from None
        result = self._call_submit(argv)
        array_id = self.parse_submit(result)
        return [self.task_id(array_id, index) for index in range(self.task_first, self.task_first + len(specs))]

    def _write_array(self, specs: Sequence[JobSpec], base: str, name: str, text: str) -> None:
        """Everything an array needs, written before it is submitted: its script
        ``scripts/<base>.sh`` (the table from task to job) and ``scripts/<base>.json`` (its name
        and jobs in task order, for :meth:`find_submitted`); each job's ``scripts/<id>.sh`` a
        link to the array's script; and links ``output/<base>-<task>.out/.err`` to each job's
        own output files, which the scheduler opens by the task's index (no pattern names a
        job id), so a task's output, the scheduler's own messages included, is its job's."""
        first = specs[0]
        scripts, output = first.script_path.parent, first.stdout.parent
        output.mkdir(parents=True, exist_ok=True)  # a missing output folder makes SGE park the job forever
        scripts.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(scripts / f"{base}.sh", text.encode(), mode=0o755)
        for index, spec in enumerate(specs, start=self.task_first):
            _link(output / f"{base}-{index}.out", spec.stdout.name)
            _link(output / f"{base}-{index}.err", spec.stderr.name)
            _link(spec.script_path, f"{base}.sh")
        atomic_write_json(scripts / f"{base}.json", {"name": name, "task_first": self.task_first,
                                                     "jobs": [spec.job_id for spec in specs]})

    def _array_task(self, spec: JobSpec) -> tuple[str, int] | None:
        """(the array's name, the task's index) when the latest submission of ``spec`` was a
        task of an array (its script a link to the array's), else None."""
        try:
            target = os.readlink(spec.script_path)
        except OSError:
            return None
        table = read_json(spec.script_path.parent / (target[:-len(".sh")] + ".json")) if _ARRAY_SCRIPT.match(target) else None
        jobs = table.get("jobs") if isinstance(table, dict) else None
        if not isinstance(jobs, list) or spec.job_id not in jobs or not isinstance(table.get("name"), str):
            return None
        return table["name"], int(table.get("task_first", self.task_first)) + jobs.index(spec.job_id)

    def find_submitted(self, spec: JobSpec) -> str | None:
        # Same name and same working folder: another experiment may use the same name, never
        # the same folder. The newest, when a lost answer left several. A job last submitted in
        # an array is that array's task of its index.
        task = self._array_task(spec)
        name = task[0] if task is not None else self.job_name(spec)
        try:
            result = self.call(self.find_argv(name), accept=lambda r: True)
        except CommandError as exc:
            log.warning("could not ask the %s scheduler for job %s: %s", self.name, name, exc)
            return None
        found = [sid for sid, workdir in self.parse_found(result) if workdir == str(spec.workdir)]
        if task is not None:
            found = [sid for sid in (self.found_task(listed, task[1]) for listed in found) if sid is not None]
        return found[-1] if found else None

    def adopt_claim(self, claim: Mapping[str, Any]) -> str | None:
        # an array's task: the array's id and the task's index, both from its environment
        ids = claim.get("scheduler_ids")
        if isinstance(ids, dict) and self.task_variable:
            array, index = ids.get(self.array_id_variable), ids.get(self.task_variable)
            if isinstance(array, str) and array.isdigit() and isinstance(index, str) and index.isdigit():
                return self.task_id(array, int(index))
        return super().adopt_claim(claim)

    def poll(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        ids = list(dict.fromkeys(scheduler_ids))
        known = {sid: self._final[sid] for sid in ids if sid in self._final}
        asked = [sid for sid in ids if sid not in self._final]
        if not asked:
            return known
        now = time.monotonic()
        if now < self._next_poll_at:
            raise PollError(f"the {self.name} scheduler failed to answer {self._poll_failures} time(s) in a row; "
                            f"next try in {self._next_poll_at - now:.0f} s")
        try:
            found = self.query(asked)
        except CommandError as exc:
            self._poll_failures += 1
            base, cap = self.poll_backoff_s
            self._next_poll_at = now + min(cap, base * 2 ** (self._poll_failures - 1))
            raise PollError(str(exc)) from None
        self._poll_failures = 0
        self._next_poll_at = 0.0
        for sid, status in found.items():
            if sid in self._cancelled and status.state is SchedulerState.UNKNOWN:
                # e.g. Grid Engine keeps no record of a job deleted before it started
                status = JobStatus(SchedulerState.CANCELLED, None, "cancelled by spearmint-nn")
            if status.state.finished and status.state is not SchedulerState.UNKNOWN:
                self._final[sid] = status  # the scheduler may forget it; its answer will not change
            known[sid] = status
        return known

    def cancel(self, scheduler_ids: Sequence[str]) -> None:
        """Cancel these jobs; failures are logged, never raised (the daemon must go on)."""
        ids = [sid for sid in dict.fromkeys(scheduler_ids) if sid not in self._final]
        if not ids:
            return
        self._cancelled.update(ids)
        gone = self.gone_messages

        def accept(result: CommandResult) -> bool:
            return result.returncode == 0 or any(g in result.message.lower() for g in gone)
        try:
            self.call(self.cancel_argv(ids), accept)
        except CommandError as exc:
            log.warning("could not cancel %s job(s) %s: %s", self.name, " ".join(ids), exc)


def _link(path: Path, target: str) -> None:
    """Make ``path`` a symbolic link to ``target`` (a name in its folder), replacing what was there."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.link"
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    os.replace(tmp, path)


def exit_code_and_reason(exit_status: int, signal: int) -> tuple[int, str]:
    """One exit code (128 + signal for a killed job, as a shell reports it) and its words."""
    if signal:
        return 128 + signal, f"killed by signal {signal}"
    return exit_status, f"exit code {exit_status}"
