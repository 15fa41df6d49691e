"""Where a search keeps its models between runs: :class:`ModelStore`, one folder that the
caller names (the daemon: the experiment's ``.spearmint/model``).

It holds one subfolder per model (``objective``, ``constraint-<task>``), so a restarted search
warm-starts, and ``auto.json``, the record that ``model="auto"`` switched from the GP to DNGO,
so the switch survives a restart. The Optimizer does no file I/O itself: it is given a
ModelStore, or None to keep nothing.

A model's subfolder holds one file, ``state.pt``: ``torch.save`` of the model's ``state_dict()``
(tensors and plain values; :mod:`spearmint_nn.models.base`), replaced atomically
(:func:`save_state`), and read back with ``torch.load(..., weights_only=True)``, which
unpickles nothing but tensors and plain containers (:func:`restore_state`). A folder without it
(nothing saved yet, or files of an earlier version's formats) or with a state this model cannot
continue gives a fresh model.
"""
from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import TypeVar

import torch

from ..files import atomic_write_bytes
from ..models.base import ConstraintModel, DurationPredictor, Surrogate
from ..problem.settings import AUTO_FINAL, AUTO_START

log = logging.getLogger(__name__)

STATE_FILE = "state.pt"
#: The objective model's subfolder (the experiment layout keeps the warpings report in it).
OBJECTIVE_MODEL = "objective"
AUTO_STATE_FILE = "auto.json"  # the switch to DNGO, kept across restarts

Model = TypeVar("Model", Surrogate, ConstraintModel, DurationPredictor)

# What a model raises for a state it cannot continue: a missing entry (KeyError), an entry of the
# wrong type or shape (TypeError, AttributeError, ValueError, or RuntimeError from torch).
_UNUSABLE = (KeyError, TypeError, AttributeError, ValueError, RuntimeError)


def save_state(folder: Path, model: Surrogate | ConstraintModel | DurationPredictor) -> None:
    """Write ``model.state_dict()`` to ``folder/state.pt`` (creating the folder), atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    atomic_write_bytes(folder / STATE_FILE, buffer.getvalue())


def restore_state(folder: Path, fresh: Model, n_inputs: int) -> Model:
    """``fresh``, with the state saved in ``folder`` loaded into it if that state loads cleanly and
    is for ``n_inputs`` inputs; otherwise ``fresh`` as it was.

    A state that fails to load or belongs to another search space (or another kind of model) is
    logged and ignored; the models' ``load_state_dict`` change nothing when they refuse a state.
    """
    path = Path(folder) / STATE_FILE
    if not path.is_file():
        if Path(folder).is_dir():
            log.info("no saved state in %s (nothing saved yet, or an earlier version's format); starting afresh",
                     folder)
        return fresh
    # Any error of the read: a damaged or foreign file makes torch raise OSError, EOFError,
    # RuntimeError (its archive reader) or the unpickler's UnpicklingError (weights_only refusing
    # an object), and none of them may stop a search that can start afresh.
    try:
        state = torch.load(path, weights_only=True)
    except Exception as exc:
        log.warning("ignoring unreadable saved %s model %s (%s); starting afresh", path.parent.name, path, exc)
        return fresh
    if not isinstance(state, dict):
        log.warning("ignoring saved %s model %s (not a model's state); starting afresh", path.parent.name, path)
        return fresh
    if state.get("n_inputs") not in (None, n_inputs):
        log.warning("saved %s model in %s is for another search space; starting afresh", path.parent.name, folder)
        return fresh
    try:
        fresh.load_state_dict(state)
    except _UNUSABLE as exc:
        log.warning("ignoring saved %s model in %s (%s); starting afresh", path.parent.name, folder, exc)
    return fresh


def constraint_model_name(task: str) -> str:
    """The subfolder of a constraint task's model (the implicit "success" constraint included)."""
    return f"constraint-{task}"


class ModelStore:
    """The saved states of a search's models in ``folder`` (created on the first save)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def restore(self, name: str, fresh: Model, n_inputs: int) -> Model:
        """``fresh`` with the state saved under ``name`` loaded into it, if one loads cleanly for
        ``n_inputs`` inputs; else ``fresh`` as it was."""
        return restore_state(self.folder / name, fresh, n_inputs)

    def save(self, name: str, model: Surrogate | ConstraintModel) -> None:
        """Write ``model``'s state under ``name`` (replacing what was there)."""
        save_state(self.folder / name, model)

    def auto_choice(self) -> str:
        """"dngo" if an earlier run switched ``model="auto"`` to it (:meth:`record_auto_switch`), else "gp"."""
        try:
            saved = json.loads((self.folder / AUTO_STATE_FILE).read_text())["model"]
        except (OSError, ValueError, KeyError, TypeError):
            saved = AUTO_START
        return AUTO_FINAL if saved == AUTO_FINAL else AUTO_START

    def record_auto_switch(self, n_observed: int, n_in_flight: int) -> None:
        """Record that ``model="auto"`` switched to DNGO at ``n_observed`` observations with
        ``n_in_flight`` jobs in flight."""
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.folder / AUTO_STATE_FILE, json.dumps(
            {"model": AUTO_FINAL, "observations": n_observed, "in_flight": n_in_flight}).encode())
