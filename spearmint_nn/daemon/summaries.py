"""``results.csv`` and ``best.json`` (their format: :mod:`spearmint_nn.experiment.summaries`),
rewritten by the daemon after changes at a bounded share of its time."""
from __future__ import annotations

from typing import Any

from ..experiment.config import ExperimentConfig
from ..experiment.store import Store
from ..experiment.summaries import write_summaries
from ..time_share import TimeShare


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
        self._limit.run(lambda: write_summaries(self._store, self._config, self.model_best))
        self._stale = False
