"""The signals that stop the daemon cleanly, and the exit status that tells a job script why.

SIGINT and SIGTERM (Ctrl-C, ``kill PID``) stop the daemon for good: it exits 0, leaving running
jobs to finish unless ``--cancel-on-exit``. SIGUSR1 is the warning a batch scheduler sends
before the time limit of the daemon's own batch job (SLURM's ``--signal=B:USR1@<s>`` through
the job script, Grid Engine's soft limit ``s_rt``): the daemon stops the same way, never
cancels a job, and exits :data:`TIME_LIMIT_EXIT`, which a job script reads as "run me again"
(README, "Running the daemon as a batch job"); the next run adopts every job left running.

A handler only notes the signal and wakes the loop: the loop stops between two steps, so every
state file is whole (what the daemon does on a stop is in its ``_shutdown``).
"""
from __future__ import annotations

import signal
import threading
from typing import Any

# "Stopped by the time-limit warning, run me again": EX_TEMPFAIL of sysexits.h, a temporary
# failure whose command is meant to be retried. Apart from 0 (finished or stopped by the user),
# 1 (cannot go on), 2 (bad config) and the shell's 128 + N of a process a signal killed.
TIME_LIMIT_EXIT = 75
TIME_LIMIT_SIGNAL = signal.SIGUSR1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, TIME_LIMIT_SIGNAL)


class StopSignals:
    """Catches :data:`STOP_SIGNALS` between :meth:`install` and :meth:`restore` (main thread
    only, as Python's ``signal.signal``); ``wake`` is set on each so the loop sees it at once."""

    def __init__(self, wake: threading.Event) -> None:
        self._wake = wake
        self._previous: dict[int, Any] = {}
        self.received: signal.Signals | None = None  # the first stop signal; a later one changes nothing

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        # The first signal decides: a Ctrl-C after the warning must not turn "run me again"
        # into "done", nor the warning turn a user's stop into a requeue.
        if self.received is None:
            self.received = signal.Signals(signum)
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self.received is not None

    @property
    def time_limit(self) -> bool:
        """Whether the stop is the warning before the daemon's own batch job reaches its time limit."""
        return self.received == TIME_LIMIT_SIGNAL

    def cancels_jobs(self, cancel_on_exit: bool) -> bool:
        """Whether this stop cancels the jobs in flight: with ``--cancel-on-exit``, on SIGINT or
        SIGTERM only; a daemon stopped for its time limit runs again and adopts them."""
        return cancel_on_exit and self.stopping and not self.time_limit

    def why(self) -> str:
        """The reason of the ``stopped`` log line."""
        name = self.received.name if self.received is not None else "no signal"
        if self.time_limit:
            return (f"received {name}, the warning before the time limit of this daemon's batch job: "
                    f"exit status {TIME_LIMIT_EXIT}, run it again to go on")
        return f"received {name}"

    def exit_code(self) -> int:
        return TIME_LIMIT_EXIT if self.time_limit else 0
