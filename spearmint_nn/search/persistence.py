"""Where a search keeps its models between runs: :class:`ModelStore`, one folder that the
caller names (the daemon: the experiment's ``.spearmint/model``).

It holds one subfolder per model (``objective``, ``constraint-<task>``), each the model's state
as :mod:`spearmint_nn.search.model_state` writes and restores it, so a restarted search
warm-starts, and ``auto.json``, the record that ``model="auto"`` switched from the GP to
DNGO, so the switch survives a restart. The Optimizer does no file I/O itself: it is given a
ModelStore, or None to keep nothing.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..files import atomic_write_bytes
from ..models.base import ConstraintModel, Surrogate
from .model_state import Model, restore, save

#: The objective model's subfolder (the experiment layout keeps the warpings report in it).
OBJECTIVE_MODEL = "objective"
AUTO_STATE_FILE = "auto.json"  # the switch to DNGO, kept across restarts


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
        return restore(self.folder / name, fresh, n_inputs)

    def save(self, name: str, model: Surrogate | ConstraintModel) -> None:
        """Write ``model``'s state under ``name`` (replacing what was there)."""
        save(self.folder / name, model)

    def auto_choice(self) -> str:
        """"dngo" if an earlier run switched ``model="auto"`` to it (:meth:`record_auto_switch`), else "gp"."""
        try:
            saved = json.loads((self.folder / AUTO_STATE_FILE).read_text())["model"]
        except (OSError, ValueError, KeyError, TypeError):
            saved = "gp"
        return "dngo" if saved == "dngo" else "gp"

    def record_auto_switch(self, n_observed: int, n_in_flight: int) -> None:
        """Record that ``model="auto"`` switched to DNGO at ``n_observed`` observations with
        ``n_in_flight`` jobs in flight."""
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.folder / AUTO_STATE_FILE, json.dumps(
            {"model": "dngo", "observations": n_observed, "in_flight": n_in_flight}).encode())
