"""Restoring a model saved under the experiment's state folder, for a warm start across restarts."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def restore(folder: Path, fresh: Any, n_inputs: int) -> Any:
    """The model saved in ``folder`` if one loads cleanly and has ``n_inputs`` inputs, else ``fresh``.

    ``fresh.load`` may restore in place (returning None) or return a new model; a model class
    without ``load`` is always fresh. A folder that fails to load or holds a model of another
    search space is logged and ignored.
    """
    if not folder.is_dir() or not hasattr(fresh, "load"):
        return fresh
    try:
        restored = fresh.load(folder)
    except (OSError, RuntimeError, KeyError, ValueError) as exc:
        log.warning("ignoring saved %s model in %s (%s); starting afresh", folder.name, folder, exc)
        return fresh
    restored = fresh if restored is None else restored
    if getattr(restored, "n_inputs", n_inputs) != n_inputs:
        log.warning("saved %s model in %s is for another search space; starting afresh", folder.name, folder)
        return fresh
    return restored
