"""Every line the daemon says: one plain line per event, to the console and ``daemon.log``."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from ..text import plain


class _ConsoleHandler(logging.Handler):
    """Hands each formatted line to ``log.console`` (replaceable, e.g. by a live line)."""

    def __init__(self, log: "EventLog"):
        super().__init__()
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._log.console(self.format(record))
        except Exception:
            self.handleError(record)


class EventLog:
    """Every line the daemon says: one plain line per event, to the console and ``daemon.log``.

    The ``spearmint_nn`` logger goes through the same handlers, so warnings of the optimizer and
    models land in the same log. Two hooks for richer consoles: ``console`` is the function
    that prints one finished line (default: write it to ``stream``), and ``add_listener(fn)``
    registers ``fn(kind, message, fields)``, called after each event is logged.
    """

    def __init__(self, log_file: Path | None, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self.console: Callable[[str], None] = self._write_line
        self._logger = logging.getLogger("spearmint_nn")
        # Restored by close(): an in-process daemon (tests, notebooks) must not leave the
        # package's logging cut off from the application's.
        self._saved_logger_state = (self._logger.level, self._logger.propagate)
        self._logger.setLevel(logging.INFO)
        self._logger.propagate = False
        formatter = logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S")
        self._handlers: list[logging.Handler] = [_ConsoleHandler(self)]
        if log_file is not None:
            # delay: the file is opened at the first line, so a daemon built but not yet holding
            # the folder writes nothing to it (spearmint_nn.daemon.build)
            self._handlers.append(logging.FileHandler(log_file, encoding="utf-8", delay=True))
        for handler in self._handlers:
            handler.setFormatter(formatter)
            self._logger.addHandler(handler)
        self._listeners: list[Callable[[str, str, Mapping[str, Any]], None]] = []

    def _write_line(self, line: str) -> None:
        self._stream.write(line + "\n")
        self._stream.flush()

    def add_listener(self, listener: Callable[[str, str, Mapping[str, Any]], None]) -> None:
        self._listeners.append(listener)

    def event(self, kind: str, message: str, **fields: Any) -> None:
        """Log ``"<kind> <message>"``; ``fields`` (job id, value, ...) go to listeners only."""
        level = logging.WARNING if kind in ("warning", "error") else logging.INFO
        self._logger.log(level, "%-9s %s", kind, plain(message))
        for listener in self._listeners:
            listener(kind, message, fields)

    def close(self) -> None:
        for handler in self._handlers:
            self._logger.removeHandler(handler)
            handler.close()
        self._logger.level, self._logger.propagate = self._saved_logger_state
