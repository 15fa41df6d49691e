"""A rate limit for repeated work whose cost grows with the experiment: the daemon's rewrites
of results.csv and best.json, and the progress line of ``spearmint-nn run``."""
from __future__ import annotations

import time
from typing import Any, Callable

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
