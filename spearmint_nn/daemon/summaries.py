"""``results.csv`` and ``best.json`` (their format: :mod:`spearmint_nn.experiment.summaries`) and the
live report page ``report.html`` (:mod:`spearmint_nn.views.live_page`), rewritten by the daemon
after changes at a bounded share of its time."""
from __future__ import annotations

import time
from typing import Any

from ..experiment.config import ExperimentConfig
from ..experiment.store import Store
from ..experiment.summaries import write_summaries
from ..time_share import TimeShare
from ..views.live_page import HEARTBEAT_SECONDS, RELOAD_SECONDS, write_live_page
from ..views.status import Snapshot
from .event_log import EventLog

# The page is read by people, not by the daemon: a twentieth of the daemon's time at most (its
# build grows with the jobs, 0.1 s for 1000), on top of the summaries' share.
PAGE_TIME_SHARE = 0.05


class SummaryWriter:
    """Rewrites ``results.csv`` and ``best.json`` after changes, rate-limited by :class:`TimeShare`,
    and the report page after them.

    A rewrite reads every finished job of the index, so rewriting on every event would make a
    run of N jobs cost O(N^2). A change marks the summaries stale; a stale summary is rewritten
    when its :class:`TimeShare` allows. The page follows the summaries it shows, at most every
    RELOAD_SECONDS (its own reload period: a faster rewrite would not be seen) and within its own
    share, and at least every HEARTBEAT_SECONDS, by which an open page tells a live daemon from a
    killed one. :meth:`finish` (at exit) writes both unconditionally, the page as final.
    """

    def __init__(self, store: Store, config: ExperimentConfig, log: EventLog | None = None):
        self._store, self._config, self._log = store, config, log
        self._page_error: str | None = None  # the last error the page met, said once in the log
        self._stale = False
        self._limit = TimeShare()
        self.model_best: dict[str, Any] | None = None  # best.json's model_best, set by the daemon
        self._page_stale = True
        self._page_limit = TimeShare(PAGE_TIME_SHARE)
        self._page_written = -float("inf")  # time.monotonic() of the last page
        self._page_counts: dict[str, int] = {}  # the jobs per state it showed

    def mark_stale(self) -> None:
        self._stale = True

    def seconds_until_due(self) -> float | None:
        """How long until a stale summary or the page is due (0 if now); the page is due at its
        heartbeat at the latest, so this is never None now that it has one."""
        waits = [self._limit.seconds_until_due()] if self._stale else []
        if self._page_due_for_news():
            waits.append(self._seconds_until_page())
        waits.append(max(0.0, HEARTBEAT_SECONDS - (time.monotonic() - self._page_written)))
        return min(waits)

    def _page_due_for_news(self) -> bool:
        """Whether the page shows less than there is: summaries rewritten since, or a job that
        started or was proposed (those change no summary)."""
        return self._page_stale or self._store.counts() != self._page_counts

    def _seconds_until_page(self) -> float:
        since = time.monotonic() - self._page_written
        return max(0.0, RELOAD_SECONDS - since, self._page_limit.seconds_until_due())

    def write_if_due(self) -> None:
        if self._stale and self._limit.seconds_until_due() == 0.0:
            self._write_summaries()
        heartbeat = time.monotonic() - self._page_written >= HEARTBEAT_SECONDS
        if heartbeat or (self._page_due_for_news() and self._seconds_until_page() == 0.0):
            self._page_limit.run(lambda: self._write_page(running=True))

    def finish(self) -> None:
        """Write the summaries and the page as they stand when the daemon stops (the page final)."""
        self._write_summaries()
        self._write_page(running=False)

    def _write_summaries(self) -> None:
        self._limit.run(lambda: write_summaries(self._store, self._config, self.model_best))
        self._stale = False
        self._page_stale = True  # the page shows what they hold (best.json's model's best)

    def _write_page(self, running: bool) -> None:
        snap = Snapshot(self._config.paths.experiment, self._store, self._config)
        self._page_written, self._page_counts = time.monotonic(), snap.counts
        self._page_stale = False
        try:
            write_live_page(snap, self._config.paths.report_html, running)
        except Exception as exc:  # a page for people must never stop the search
            error = f"{type(exc).__name__}: {exc}"
            if error != self._page_error and self._log is not None:
                self._log.event("warning", f"the report page {self._config.paths.report_html} was not "
                                           f"rewritten ({error}); the search goes on")
            self._page_error = error
