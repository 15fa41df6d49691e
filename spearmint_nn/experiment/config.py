"""Loading and validating an experiment's ``config.json`` into an :class:`ExperimentConfig`.

Spearmint's keys are read as Spearmint writes them (``language``, ``main-file``,
``experiment-name``, ``likelihood``, ``variables``, ``tasks``, ``max-concurrent``,
``max-finished-jobs``, ``polling-time``); our own keys sit beside them. Spearmint's
``resources`` section and the ``main-file``, ``language`` and ``resources`` of a task are
translated into our keys (see :func:`_spearmint_implied`). Every key is declared
once in :data:`KEYS` (default, parser, one-line description). The daemon's own keys are
written there by hand; the search's keys are generated from the fields of
:class:`~spearmint_nn.problem.settings.SearchSettings` that name a key, each of which becomes that
field (:func:`search_settings`). The parsers are :mod:`spearmint_nn.problem.parsers`', so a key
and the Optimizer's keyword accept the same values.

Every problem is a :class:`~spearmint_nn.errors.ConfigError` ``("key.path", "problem")``, raised
before anything is written to the experiment folder. Each key is parsed whatever the others
hold, so that one :class:`~spearmint_nn.errors.ConfigErrors` names every problem of the file (a
step that needs an earlier key to be right is skipped when that key is wrong); all unknown keys
of the file (top level, tasks, variables, resources) are one of them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, make_dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, Problems, closest, did_you_mean, unknown_keys
from .jobs import DEFAULT_IGNORED_FAILURES, FAILURE_KINDS
from .layout import ExperimentPaths
from .resume import ResumeSettings, parse_resume, with_time_limit
from ..stopping.settings import parse_early_stopping
from ..problem.parsers import (Parser, argument_list, as_given, choice, count, duration, folder_list, names_from,
                               optional, seconds, text)
from ..problem.settings import SearchSettings, config_fields
from ..problem.space import Space
from ..problem.variables import unknown_variable_keys
from ..problem.tasks import TASK_KEYS, Tasks, likelihood_name, parse_tasks

LANGUAGES = ("PYTHON", "SHELL")
_RESOURCE_KEYS = ("scheduler", "max-concurrent", "max-finished-jobs")
# Spearmint's scheduler names (any case) -> our driver names.
SCHEDULERS = {"local": "local", "sge": "sge", "slurm": "slurm"}
# Options of Spearmint's cluster schedulers that have no resource key here, and what to write.
_SPEARMINT_RESOURCE_OPTIONS = {
    "scheduler-args": "write the arguments as a list in driver.extra-args instead",
    "environment-file": "write driver.setup: [\"source <file>\"] instead",
    "output-subdir": "not needed: each job's output is kept in .spearmint/output/",
}


@dataclass(frozen=True)
class Key:
    """One top-level config key: its default, its parser and a one-line description."""

    default: Any
    parse: Parser
    doc: str
    setting: str | None = None  # the SearchSettings field it sets


def _setting_keys() -> dict[str, Key]:
    """The rows of the search's keys, one per SearchSettings field that names a key."""
    return {spec.metadata["key"]: Key(spec.default, spec.metadata["parse"], spec.metadata["doc"], spec.name)
            for spec in config_fields()}


KEYS: dict[str, Key] = {
    # Spearmint's own keys
    "language": Key("PYTHON", choice(*LANGUAGES), "PYTHON (a main(job_id, params) wrapper) or SHELL (runs `command`)"),
    "main-file": Key(None, optional(text), "the wrapper module in the experiment folder, with or without .py (PYTHON)"),
    "experiment-name": Key(None, optional(text), "a name for logs and reports (default: the folder name)"),
    "likelihood": Key("GAUSSIAN", likelihood_name, "noise model of every task without its own: NOISELESS or GAUSSIAN"),
    "variables": Key(None, as_given, "the search space: name -> {type FLOAT|INT|ENUM, size, min, max, options, scale, when, "
                 "default}, or {type, size, value} for a variable held fixed"),
    "tasks": Key(None, as_given, "name -> {type OBJECTIVE|CONSTRAINT, likelihood} or name -> type; default one "
                 "objective named 'main' (Spearmint's main-file, language and resources of a task are read too)"),
    "resources": Key(None, as_given, "one {scheduler local|SGE|SLURM, max-concurrent, max-finished-jobs}, as "
                     "Spearmint wrote it: becomes driver.name, max-concurrent and max-finished-jobs"),
    "max-concurrent": Key(1, count(1), "jobs in flight at once"),
    "polling-time": Key(3.0, seconds, "seconds between two polls of the driver"),
    # Spearmint's settings of things that do not exist here: accepted so a folder moves as it
    # is, and not used (the experiment folder is the database; the model is chosen by "model").
    "database": Key(None, as_given, "Spearmint's MongoDB settings: not used (the experiment folder holds the jobs)"),
    "chooser": Key(None, as_given, "Spearmint's chooser module: not used (see \"model\" and \"acquisition\")"),
    # our keys
    "driver": Key({"name": "local"}, as_given, "{\"name\": local|slurm|sge|<plugin>, ...driver options}"),
    "command": Key(None, argument_list, "argument list run for a SHELL wrapper; the params file path is appended"),
    "related-experiments": Key((), folder_list, "experiment folders of related searches (paths, relative to this "
                               "one), read and never written: their finished jobs teach the multi-task GP"),
    "stop-after-identical-failures": Key(20, count(1),
                                         "stop the daemon when this many jobs in a row fail the same way (3 for a "
                                         "broken wrapper, 5 times this for NaN results)"),
    "daemon-heartbeat-timeout": Key(None, optional(seconds),
                                    "seconds without a heartbeat in .spearmint/daemon.json after which a daemon on "
                                    "another host is taken for dead (null: max(90, 5 * polling-time))"),
    "max-attempts": Key(5, count(1), "times the cluster may interrupt one job (preempted, its node failed, "
                        "requeued) before it fails \"interrupted\"; attempts that stop at their own checkpoint "
                        "count against resume.max-total-time instead"),
    "resume": Key(None, parse_resume, "{\"warning\": seconds (default 120), \"max-total-time\": seconds or "
                  "[D-]HH:MM:SS (default 10 x driver.time-limit)}: warn each job that long before its time limit "
                  "and let it stop to be resumed from its checkpoint, within max-total-time for all its attempts"),
    "early-stopping": Key(None, parse_early_stopping, "{\"rule\": median|asha|model, \"min-steps\", \"max-steps\", and the "
                          "rule's options}: stop running jobs whose learning curves fall behind (null: never)"),
    "ignore-failures": Key(frozenset(DEFAULT_IGNORED_FAILURES), names_from(FAILURE_KINDS, "failure kind"),
                           "failure kinds that say nothing about the point: not shown to the model, not counted"),
    # the search's keys, max-finished-jobs (its budget) among them
    **_setting_keys(),
}


# Keys a running daemon takes up when config.json changes; any other change needs a restart.
LIVE_KEYS = ("max-finished-jobs", "max-concurrent", "polling-time", "stop-after-identical-failures")


def field_name(key: str) -> str:
    """The attribute of :class:`ExperimentConfig` that holds ``key``'s value: ``max-concurrent``
    is ``max_concurrent``."""
    return key.replace("-", "_")


class _Derived:
    """What :class:`ExperimentConfig` derives from several of its keys (its fields are the keys)."""

    paths: ExperimentPaths
    experiment_name: str | None
    tasks: Tasks
    ignore_failures: frozenset[str]
    driver: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The experiment's name: ``experiment-name``, else the folder's name."""
        return self.experiment_name or self.paths.experiment.name

    @property
    def objective(self) -> str:
        """Name of the one OBJECTIVE task."""
        return self.tasks.objective

    @property
    def constraints(self) -> list[str]:
        return list(self.tasks.constraints)

    @property
    def ignored_failures(self) -> frozenset[str]:
        """Failure kinds not shown to the model and not counted against the budget (``ignore-failures``)."""
        return frozenset(self.ignore_failures)

    @property
    def driver_name(self) -> str:
        return self.driver["name"]

    @property
    def driver_options(self) -> dict[str, Any]:
        """The ``driver`` key's options, its name left out."""
        return {key: value for key, value in self.driver.items() if key != "name"}


# A validated config.json: one frozen record generated from KEYS, so that a key added to the table
# is a field at once, and every value is read one way, as an attribute (``config.max_concurrent``).
# Each field holds its key's parsed value (defaults filled in), the parsed form of the objects
# read by parsers of their own: ``tasks`` a Tasks, ``resume`` checked against the driver's time
# limit (max_total_time filled in; None there only when read without the driver, as the runner
# reads it), ``driver`` the driver's name and options, ``main_file`` the wrapper's resolved path
# (None for SHELL). Beside the keys: ``paths``, ``space`` (the variables, parsed), ``notes``,
# what loading changed that the user is told once by the daemon at its start, and ``text``, the
# file's text as validated (the daemon hands it to its jobs: layout's config_in_force).
ExperimentConfig = make_dataclass(
    "ExperimentConfig",
    [("paths", ExperimentPaths), *((field_name(key), Any) for key in KEYS), ("space", Space),
     ("notes", "tuple[str, ...]"), ("text", str)],
    bases=(_Derived,), frozen=True)
ExperimentConfig.__module__ = __name__  # (make_dataclass takes module= only from Python 3.12)
ExperimentConfig.__doc__ = """A validated config.json: a field for every key of :data:`KEYS` (by
:func:`field_name`), ``paths``, ``space`` and ``notes``; see the comment above it."""


def config_values(config: ExperimentConfig) -> dict[str, Any]:
    """Every key's value in ``config``, by its JSON name."""
    return {key: getattr(config, field_name(key)) for key in KEYS}


# ---- reading the file -------------------------------------------------------------------------

class _Pairs(list):
    """A JSON object as its list of (key, value) pairs, so duplicate keys can be reported."""


def _objects(value: Any, path: str) -> Any:
    """Turn :class:`_Pairs` into dicts, raising on a duplicate key (with its full path)."""
    if isinstance(value, _Pairs):
        out: dict[str, Any] = {}
        for key, item in value:
            sub = f"{path}.{key}" if path else key
            if key in out:
                raise ConfigError(sub, "duplicate key (JSON objects must not repeat a key)")
            out[key] = _objects(item, sub)
        return out
    if isinstance(value, list):
        return [_objects(item, f"{path}[{i}]") for i, item in enumerate(value)]
    return value


def read_text_strict(path: Path, label: str) -> str:
    """A UTF-8 text file's text; a missing or unreadable file or bad bytes raise ConfigError(label...)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(label, f"not found ({path})") from None
    except OSError as exc:
        raise ConfigError(label, f"cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(label, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def read_json_strict(path: Path, label: str) -> Any:
    """Parse a UTF-8 JSON file; duplicate keys, bad bytes and bad syntax raise ConfigError(label...)."""
    return parse_json_strict(read_text_strict(path, label), label)


def parse_json_strict(text: str, label: str) -> Any:
    """Parse JSON text; duplicate keys and bad syntax raise ConfigError(label...)."""
    try:
        parsed = json.loads(text, object_pairs_hook=_Pairs)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        # ("Unterminated string starting at" is one of json's messages that its position ends)
        said = f"{exc.msg} {where}" if exc.msg.endswith(" at") else f"{exc.msg} at {where}"
        raise ConfigError(label, f"invalid JSON: {said}") from None
    except RecursionError:
        raise ConfigError(label, "is nested too deeply to be read") from None
    try:
        return _objects(parsed, "")
    except RecursionError:
        raise ConfigError(label, "is nested too deeply to be read") from None


def load_config(experiment_dir: str | Path, driver_override: str | None = None,
                check_driver: bool = True, in_force: bool = False) -> ExperimentConfig:
    """Read and validate ``<experiment_dir>/config.json``; raise ConfigError naming the problem,
    or :class:`~spearmint_nn.errors.ConfigErrors` naming each one when there are several.

    ``driver_override`` replaces ``driver.name`` (the ``--driver`` flag). ``check_driver=False``
    skips loading the driver plugin (the runner on a compute node does not need it).
    ``in_force``: read the copy that the daemon validated at its start
    (:attr:`~spearmint_nn.experiment.layout.ExperimentPaths.config_in_force`; what its jobs run
    with) where there is one, instead of the user's file.
    """
    experiment = Path(experiment_dir)
    if not experiment.is_dir():
        raise ConfigError("experiment", f"no such folder: {experiment}")
    paths = ExperimentPaths(experiment)
    source = paths.config_in_force if in_force and paths.config_in_force.exists() else paths.config
    text = read_text_strict(source, "config.json")
    raw = parse_json_strict(text, "config.json")
    if not isinstance(raw, dict):
        raise ConfigError("config.json", f"must hold a JSON object (got {type(raw).__name__})")
    problems = Problems()
    found = _unknown_keys(raw)
    if found:
        problems.report(unknown_keys(found))

    # None when Spearmint's sections are wrong: the wrapper and the driver they may name are then unknown
    implied = problems.call(_spearmint_implied, raw)
    values = {key: problems.call(_key_value, key, raw, implied or {}, fallback=spec.default)
              for key, spec in KEYS.items()}
    values["resources"] = None  # translated into driver, max-concurrent and max-finished-jobs
    space = None
    if "variables" not in raw:
        problems.report(ConfigError("variables", "required: the search space, e.g. "
                                    "{\"x\": {\"type\": \"FLOAT\", \"min\": 0, \"max\": 1}}"))
    else:
        space = problems.call(Space.from_config, raw["variables"])
    if values["initial-design"] is None and space is not None:
        values["initial-design"] = space.default_initial_design
    tasks = problems.call(parse_tasks, raw.get("tasks"), None, values["likelihood"])
    main_file = driver = None
    if implied is not None and not problems.failed("language", "command", "main-file"):
        main_file = problems.call(_parse_wrapper, paths.experiment, values)
    if implied is not None:
        driver = problems.call(_parse_driver, raw, implied, driver_override, check_driver)
    if driver is not None and not problems.failed("resume"):  # resume is checked against the driver's time limit
        values["resume"] = problems.call(_resume, values["resume"], *driver, check_driver)
    problems.raise_any()
    driver_name, driver_options = driver
    values["driver"] = {"name": driver_name, **driver_options}
    gpus = driver_options.get("gpus") if driver_name == "local" else None
    notes: list[str] = []
    if isinstance(gpus, list) and gpus:
        # one job per GPU slot: a workstation user listing four GPUs expects four jobs at once, and a
        # fifth would have no GPU to run on; a smaller max-concurrent leaves some GPUs free, as asked
        given = raw.get("max-concurrent") is not None or "max-concurrent" in implied
        values["max-concurrent"] = min(values["max-concurrent"], len(gpus)) if given else len(gpus)
        asked = raw.get("max-concurrent")
        if isinstance(asked, int) and asked > values["max-concurrent"]:
            notes.append(f"max-concurrent {asked} is more than the {values['max-concurrent']} GPU slots of "
                         f"driver.gpus: {values['max-concurrent']} jobs run at once")
    values["tasks"] = tasks
    values["main-file"] = main_file
    return ExperimentConfig(paths=paths, **{field_name(key): value for key, value in values.items()}, space=space,
                            notes=tuple(notes), text=text)


def _key_value(key: str, raw: Mapping[str, Any], implied: Mapping[str, tuple[str, Any]]) -> Any:
    """A top-level key's parsed value: the one given, the one Spearmint's sections imply (both:
    they must agree), or its default."""
    spec = KEYS[key]
    given = key in raw and raw[key] is not None
    value = spec.parse(key, raw[key]) if given else spec.default
    if key in implied and key != "driver":  # the driver's name joins its options in _driver_spec
        source, implied_value = implied[key]
        parsed = spec.parse(source, implied_value)
        if given and not _same(key, value, parsed):
            raise ConfigError(f"{key}, {source}", f"both given ({raw[key]!r} and {implied_value!r}); keep one")
        value = parsed
    return value


def _unknown_keys(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key path, hint)`` for every unknown key of config.json, in the file's order: top level,
    and inside tasks, variables and resources (driver options are the driver's to check)."""
    found: list[tuple[str, str]] = []
    for key, value in raw.items():
        if key not in KEYS:
            found.append((key, closest(key, KEYS)))
        elif key == "variables" and isinstance(value, Mapping):
            found += unknown_variable_keys(value)
        elif key == "tasks" and isinstance(value, Mapping):
            found += [(f"tasks.{name}.{sub}", closest(sub, TASK_KEYS))
                      for name, spec in value.items() if isinstance(spec, Mapping) for sub in spec if sub not in TASK_KEYS]
        elif key == "resources" and isinstance(value, Mapping):
            found += [(f"resources.{name}.{sub}", _SPEARMINT_RESOURCE_OPTIONS.get(sub) or closest(sub, _RESOURCE_KEYS))
                      for name, spec in value.items() if isinstance(spec, Mapping) for sub in spec
                      if sub not in _RESOURCE_KEYS]
    return found


def _spearmint_implied(raw: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """Top-level keys that Spearmint's ``resources`` and task-level keys stand for: key -> (the
    key path it came from, its JSON value).

    Spearmint ran each task's ``main-file`` (in its ``language``) on the ``resources`` it named,
    each resource with its own scheduler, max-concurrent and max-finished-jobs. We run one
    wrapper that returns every task's value, on one driver: so a ``main-file`` or ``language``
    shared by every task that names one is the top-level key, and the one resource gives
    ``driver`` (its scheduler), ``max-concurrent`` and ``max-finished-jobs``. Anything that
    cannot be translated raises ConfigError saying what to write instead.
    """
    implied: dict[str, tuple[str, Any]] = {}
    tasks = raw.get("tasks")
    specs = {name: spec for name, spec in tasks.items() if isinstance(spec, Mapping)} if isinstance(tasks, Mapping) else {}
    for key in ("main-file", "language"):
        given = {f"tasks.{name}.{key}": spec[key] for name, spec in specs.items() if key in spec}
        if len({json.dumps(value) for value in given.values()}) > 1:
            raise ConfigError(", ".join(given), f"differ ({', '.join(repr(v) for v in given.values())}); spearmint-nn "
                              f"runs one wrapper for every task: write one top-level {key} whose main returns "
                              "{task: value}")
        if given:
            implied[key] = next(iter(given.items()))
    resources = raw.get("resources")
    for name, spec in specs.items():
        if "resources" in spec:
            _check_task_resources(f"tasks.{name}.resources", spec["resources"], resources)
    if resources is None:
        return implied
    example = '{"my-machine": {"scheduler": "local", "max-concurrent": 2}}'
    if not isinstance(resources, Mapping) or not resources:
        raise ConfigError("resources", f"must be an object naming one resource, such as {example} (got {resources!r})")
    if len(resources) > 1:
        raise ConfigError("resources", f"declares {len(resources)} resources ({', '.join(resources)}); spearmint-nn "
                          "runs one driver per experiment: keep one, or remove resources and write \"driver\": "
                          "{\"name\": \"slurm\"} (or sge, local) with max-concurrent and max-finished-jobs at the top level")
    name, spec = next(iter(resources.items()))
    path = f"resources.{name}"
    if not isinstance(spec, Mapping):
        raise ConfigError(path, f"must be an object such as {{\"scheduler\": \"local\", \"max-concurrent\": 2}} (got {spec!r})")
    implied["driver"] = (f"{path}.scheduler", _scheduler_driver(f"{path}.scheduler", spec.get("scheduler", "local")))
    for key in ("max-concurrent", "max-finished-jobs"):
        if key in spec:
            implied[key] = (f"{path}.{key}", spec[key])
    return implied


def _check_task_resources(path: str, names: Any, resources: Any) -> None:
    """A task's ``resources``: names (or one name) of resources the file declares."""
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(path, f"must be a list of resource names (got {names!r})")
    declared = list(resources) if isinstance(resources, Mapping) else []
    for n in names:
        if n not in declared:
            where = f"declared: {', '.join(declared)}" if declared else "config.json has no resources section"
            raise ConfigError(path, f"names {n!r}, which is not a resource ({where}){did_you_mean(n, declared)}")


def _scheduler_driver(path: str, scheduler: Any) -> str:
    """The driver that runs a Spearmint resource's scheduler."""
    known = "local, SGE, SLURM"
    if isinstance(scheduler, str) and scheduler.lower() == "pbs":
        raise ConfigError(path, f"PBS is not supported (spearmint-nn drives {known}): write \"SGE\" or \"SLURM\" "
                          "if the cluster offers one, or \"local\" to run the jobs on the daemon's machine")
    if not isinstance(scheduler, str) or scheduler.lower() not in SCHEDULERS:
        hint = did_you_mean(scheduler.lower(), SCHEDULERS) if isinstance(scheduler, str) else ""
        raise ConfigError(path, f"must be one of {known} (got {scheduler!r}){hint}")
    return SCHEDULERS[scheduler.lower()]


def _same(key: str, given: Any, implied: Any) -> bool:
    """Whether a top-level value and the one Spearmint's sections imply agree."""
    if key == "main-file" and isinstance(given, str) and isinstance(implied, str):
        return given.removesuffix(".py") == implied.removesuffix(".py")
    return given == implied


def _driver_spec(raw: Mapping[str, Any], implied: Mapping[str, tuple[str, Any]]) -> Any:
    """The ``driver`` value, with the name a resource's scheduler implies (a conflict raises)."""
    if "driver" not in implied:
        return raw.get("driver", KEYS["driver"].default)
    source, name = implied["driver"]
    spec = raw.get("driver")
    if spec is None:
        return {"name": name}
    if isinstance(spec, Mapping) and "name" not in spec:
        return {**spec, "name": name}
    given = spec if isinstance(spec, str) else spec.get("name") if isinstance(spec, Mapping) else name
    if given != name:
        raise ConfigError(f"driver.name, {source}", f"both given ({given!r} and {name!r}); keep one")
    return spec


def _parse_wrapper(experiment: Path, values: dict[str, Any]) -> Path | None:
    """The wrapper module's path (PYTHON) or None (SHELL, which runs ``command``)."""
    if values["language"] == "SHELL":
        if values["command"] is None:
            raise ConfigError("command", "required for language SHELL: an argument list such as [\"bash\", \"run.sh\"]")
        if values["main-file"] is not None:
            raise ConfigError("main-file", "not used with language SHELL (the program is given by 'command')")
        return None
    if values["command"] is not None:
        raise ConfigError("command", "only used with language SHELL (a PYTHON wrapper is given by 'main-file')")
    name = values["main-file"]
    if name is None:
        raise ConfigError("main-file", "required for language PYTHON: the wrapper module, e.g. \"branin.py\"")
    if not name.endswith(".py"):
        name += ".py"
    candidate = experiment / name
    resolved = candidate.resolve()
    if not resolved.is_relative_to(experiment.resolve()):
        raise ConfigError("main-file", f"must be inside the experiment folder (got {values['main-file']!r} -> {resolved})")
    if not resolved.is_file():
        raise ConfigError("main-file", f"no such file: {candidate}")
    return resolved


def _parse_driver(raw: Mapping[str, Any], implied: Mapping[str, tuple[str, Any]], override: str | None,
                  check_driver: bool) -> tuple[str, dict[str, Any]]:
    """The driver's name and options (checked by the driver unless ``check_driver`` is False)."""
    spec = _driver_spec(raw, implied)
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, dict):
        raise ConfigError("driver", f"must be an object such as {{\"name\": \"local\"}} (got {spec!r})")
    name = override if override is not None else spec.get("name", "local")
    if not isinstance(name, str) or not name:
        raise ConfigError("driver.name", f"must be a driver name such as \"local\" (got {name!r})")
    options = {k: v for k, v in spec.items() if k != "name"}
    if check_driver:
        from spearmint_nn.drivers.base import driver_class  # loads plugins only when needed
        driver_class(name).validate_options(options)
    return name, options


def _resume(resume: ResumeSettings | None, driver_name: str, driver_options: Mapping[str, Any],
            check_driver: bool) -> ResumeSettings | None:
    """The ``resume`` key against the driver's time limit (its option, else its default)."""
    if resume is None:
        return None
    from spearmint_nn.drivers.base import driver_class  # loads plugins only when needed

    if driver_options.get("time-limit") is not None:
        limit = duration("driver.time-limit", driver_options["time-limit"])
    elif "time-limit" in driver_options or not check_driver:
        limit = None  # an explicit null: no limit; without the driver: not known here
    else:
        limit = driver_class(driver_name).default_time_limit
    if limit is None and not check_driver:
        return resume
    return with_time_limit("resume", resume, limit)


def search_settings(config: ExperimentConfig) -> SearchSettings:
    """The search's settings: the tasks, and each key's value whose :attr:`Key.setting` names a field."""
    return SearchSettings(tasks=config.tasks, **{spec.setting: getattr(config, field_name(key))
                                                 for key, spec in KEYS.items() if spec.setting})
