"""Exceptions shared across the package."""
from __future__ import annotations

import difflib
from typing import Any, Callable, Iterable, Sequence, TypeVar

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

    @property
    def each(self) -> tuple["ConfigError", ...]:
        """The single problems it stands for: itself (several for :class:`ConfigErrors`)."""
        return (self,)


class ConfigErrors(ConfigError):
    """Every problem found in one file, so that a user fixes them all in one go; each one is a
    :class:`ConfigError` in :attr:`each`, in the order they were found.

    A ConfigError itself, so that ``except ConfigError`` sites take it as before; its message is
    still one line (``"2 problems: seed: must be an integer (got '1'); variables.x.min: must be < max
    (got 1 >= 1)"``), for logs; the command line prints each problem on a line of its own.
    """

    def __init__(self, errors: Sequence[ConfigError]):
        self._each = tuple(errors)
        super().__init__(", ".join(error.path for error in self._each), f"{len(self._each)} problems: "
                         + "; ".join(str(error) for error in self._each))

    def __str__(self) -> str:
        return self.problem

    @property
    def each(self) -> tuple[ConfigError, ...]:
        return self._each


T = TypeVar("T")


class Problems:
    """Collects the problems of one file while it is parsed: each step that may raise a
    :class:`ConfigError` (a key's parser, a section's) runs through :meth:`call`, which reports
    the error here and gives a fallback value, so that parsing goes on to the next key;
    :meth:`raise_any` raises what was found, one ConfigError or a :class:`ConfigErrors`.

    A key path is reported once: a problem whose every key path was reported already (the same
    unknown key found by the file's check and by the variables' own) is left out. Steps that
    need an earlier key to be valid ask :meth:`failed` and are skipped, so that one mistake gives
    one message and not its consequences too.
    """

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []
        self._paths: set[str] = set()

    def report(self, error: ConfigError) -> None:
        """Keep ``error`` (each of a ConfigErrors), but for a key path already reported."""
        for one in error.each:
            paths = set(one.path.split(", "))
            if not paths <= self._paths:
                self.errors.append(one)
                self._paths |= paths

    def call(self, step: Callable[..., T], *args: Any, fallback: Any = None) -> T | Any:
        """``step(*args)``, or ``fallback`` when it raised a ConfigError (then reported)."""
        try:
            return step(*args)
        except ConfigError as error:
            self.report(error)
            return fallback

    def failed(self, *keys: str) -> bool:
        """Whether a problem was reported at one of ``keys`` or inside it (``variables`` covers
        ``variables.x.min``)."""
        return any(path == key or path.startswith((f"{key}.", f"{key}[")) for path in self._paths for key in keys)

    def raise_any(self) -> None:
        """Raise the problems found, if any: the one ConfigError, or all as ConfigErrors."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigErrors(self.errors)


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
