"""``results.csv`` and ``best.json``, rewritten after changes at a bounded share of the daemon's time."""
from __future__ import annotations

import time
from typing import Any, Callable

from ..experiment.config import ExperimentConfig
from ..experiment.store import Store

# Rewriting results.csv and best.json, or the progress line, is O(finished jobs): each may take at
# most this share of the daemon's time (see TimeShare).
SUMMARY_TIME_SHARE = 0.1


class TimeShare:
    """Rate-limits a repeated task whose cost grows with the experiment (O(finished jobs)).

    After a run that took t seconds the next one is due ``(1 / share - 1) * t`` later, so the
    task takes at most ``share`` of the time however large the experiment grows: with a few
    hundred jobs that is every event (a run takes milliseconds); with 10,000 jobs, about once a
    second.
    """

    def __init__(self, share: float = SUMMARY_TIME_SHARE):
        self.share = share
        self._next_at = 0.0  # time.monotonic() before which the task waits

    def seconds_until_due(self) -> float:
        return max(0.0, self._next_at - time.monotonic())

    def run(self, task: Callable[[], Any]) -> None:
        start = time.monotonic()
        task()
        end = time.monotonic()
        self._next_at = end + (end - start) * (1.0 / self.share - 1.0)


class SummaryWriter:
    """Rewrites ``results.csv`` and ``best.json`` after changes, rate-limited by :class:`TimeShare`.

    A rewrite reads every finished job of the index, so rewriting on every event would make a
    run of N jobs cost O(N^2). A change marks the summaries stale; a stale summary is rewritten
    when its :class:`TimeShare` allows. :meth:`write` (used at exit) is unconditional.
    """

    def __init__(self, store: Store, config: ExperimentConfig):
        self._store, self._config = store, config
        self._stale = False
        self._limit = TimeShare()
        self.model_best: dict[str, Any] | None = None  # best.json's model_best, set by the daemon

    def mark_stale(self) -> None:
        self._stale = True

    def seconds_until_due(self) -> float | None:
        """How long until a stale summary is due (0 if now), or None when up to date."""
        return self._limit.seconds_until_due() if self._stale else None

    def write_if_due(self) -> None:
        if self.seconds_until_due() == 0.0:
            self.write()

    def write(self) -> None:
        self._limit.run(lambda: self._store.write_summaries(self._config, self.model_best))
        self._stale = False
