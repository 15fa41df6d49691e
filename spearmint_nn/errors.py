"""Exceptions shared across the package."""
from __future__ import annotations

import difflib
from typing import Iterable


class ConfigError(ValueError):
    """A config.json (or a params file checked against it) is wrong.

    The message is always ``"<key path>: <problem>"``, e.g.
    ``variables.lr.min: must be < max (got 1.0 >= 0.1)``, so a user can find the key at once.
    """

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
