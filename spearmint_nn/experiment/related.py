"""Reading the experiment folders named in ``related-experiments``, strictly read-only.

A related folder is another search's folder, maybe one whose daemon is still running: it is
never locked, repaired or written (:meth:`Store.load_all` without ``repair`` only reads), so
a daemon there is not disturbed and a folder on a read-only file system works. Its jobs are
read as they are at this daemon's start; a job finishing there later is not seen until the
next start.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..problem.space import Space
from ..problem.tasks import Tasks, parse_tasks
from .config import ExperimentConfig, read_json_strict
from .jobs import JobState
from .layout import ExperimentPaths
from .store import Store


@dataclass(frozen=True)
class RelatedFolder:
    """What a related folder holds: its space, its tasks and the (params, values) of its
    complete jobs. ``name`` is the path as config.json gives it, ``where`` the key path errors name."""

    name: str
    where: str
    space: Space
    tasks: Tasks
    results: list[tuple[dict[str, Any], dict[str, float]]]


def read_related_folders(config: ExperimentConfig) -> list[RelatedFolder]:
    """Every folder of ``related-experiments``, in the order given; ConfigError naming
    ``related-experiments[i]`` for a folder that is missing, is this experiment, or whose
    config.json cannot be read."""
    folders = []
    here = config.paths.experiment.resolve()
    for i, given in enumerate(config.related_experiments):
        where = f"related-experiments[{i}]"
        folder = Path(given).expanduser()
        folder = (folder if folder.is_absolute() else config.paths.experiment / folder).resolve()
        if not folder.is_dir():
            raise ConfigError(where, f"no such folder: {folder}")
        if folder == here:
            raise ConfigError(where, "is this experiment itself")
        raw = read_json_strict(folder / "config.json", f"{where} ({given}): config.json")
        if not isinstance(raw, dict) or "variables" not in raw:
            raise ConfigError(where, f"{folder / 'config.json'} holds no variables: not an experiment folder")
        try:
            space = Space.from_config(raw["variables"])
            tasks = parse_tasks(raw.get("tasks"), default_likelihood=raw.get("likelihood", "GAUSSIAN"))
        except ConfigError as exc:
            raise ConfigError(f"{where} ({given}): {exc.path}", exc.problem) from None
        store = Store(ExperimentPaths(folder)).load_all()
        results = [(job.params, job.values) for job in store.jobs(JobState.COMPLETE)]
        folders.append(RelatedFolder(given, where, space, tasks, results))
    return folders
