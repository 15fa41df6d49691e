"""Exceptions shared across the package."""
from __future__ import annotations

import difflib
from typing import Iterable, Sequence

from .text import escaped


class ConfigError(ValueError):
    """A config.json (or a params file checked against it) is wrong.

    The message is always ``"<key path>: <problem>"``, e.g.
    ``variables.lr.min: must be < max (got 1.0 >= 0.1)``, so a user can find the key at once.
    A problem of several keys names them all, comma-separated, as its key path
    (``max-concurrent, resources.cluster.max-concurrent: ...``). Control characters of a key
    or value the user wrote are shown escaped (``\\n``), so the message stays one line.
    """

    def __init__(self, path: str, problem: str):
        self.path = escaped(path)
        self.problem = escaped(problem)
        super().__init__(f"{self.path}: {self.problem}")


def closest(word: str, choices: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for the closest choice, or ``""`` when none is close. Case is
    ignored in finding it ("Model" is closest to "model") and the choice named as spelt."""
    spelt = {choice.casefold(): choice for choice in choices}
    close = difflib.get_close_matches(word.casefold(), list(spelt), n=1, cutoff=0.6)
    return f"did you mean '{spelt[close[0]]}'?" if close else ""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when none is close."""
    hint = closest(word, choices)
    return f" ({hint})" if hint else ""


def unknown_keys(found: Sequence[tuple[str, str]]) -> ConfigError:
    """One error for every unknown key of a file, so that a user fixes them all in one go.

    ``found`` holds ``(key path, hint)`` pairs, the hint ``""`` or a short text such as
    :func:`closest` gives. One key: ``"tasks.f.wieght: unknown key (did you mean 'weight'?)"``;
    several: ``"colour, tasks.f.wieght: unknown keys (tasks.f.wieght: did you mean 'weight'?)"``.
    """
    if len(found) == 1:
        path, hint = found[0]
        return ConfigError(path, "unknown key" + (f" ({hint})" if hint else ""))
    hints = "; ".join(f"{path}: {hint}" for path, hint in found if hint)
    return ConfigError(", ".join(path for path, _ in found), "unknown keys" + (f" ({hints})" if hints else ""))


class DaemonError(RuntimeError):
    """The daemon cannot go on (e.g. the driver rejects every job, or the optimizer failed)."""
