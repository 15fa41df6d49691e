"""Saving a model's state in a folder and restoring it, for a warm start across restarts.

A model folder holds one file, ``state.pt``: ``torch.save`` of the model's ``state_dict()``
(tensors and plain values; :mod:`spearmint_nn.models.base`), replaced atomically, and read back
with ``torch.load(..., weights_only=True)``, which unpickles nothing but tensors and plain
containers. A folder without it (nothing saved yet, or files of an earlier version's formats) or
with a state this model cannot continue gives a fresh model.
"""
from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import TypeVar

import torch

from ..files import atomic_write_bytes
from ..models.base import ConstraintModel, DurationPredictor, Surrogate

log = logging.getLogger(__name__)

STATE_FILE = "state.pt"

Model = TypeVar("Model", Surrogate, ConstraintModel, DurationPredictor)

# What a model raises for a state it cannot continue: a missing entry (KeyError), an entry of the
# wrong type or shape (TypeError, AttributeError, ValueError, or RuntimeError from torch).
_UNUSABLE = (KeyError, TypeError, AttributeError, ValueError, RuntimeError)


def save(folder: Path, model: Surrogate | ConstraintModel | DurationPredictor) -> None:
    """Write ``model.state_dict()`` to ``folder/state.pt`` (creating the folder), atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    atomic_write_bytes(folder / STATE_FILE, buffer.getvalue())


def restore(folder: Path, fresh: Model, n_inputs: int) -> Model:
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
