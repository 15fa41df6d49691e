"""How many jobs may start now, and how many proposed points may wait for a slot.

A pure function of one snapshot of the experiment (:class:`Capacity`), which the loop takes
before it submits and before it asks for proposals: ``max-concurrent`` under the site's limits
(:class:`~spearmint_nn.daemon.policies.site_limits.SiteLimits` gives the in-flight target), and
``max-finished-jobs`` less what finished, what is in flight and the failures held back until the
first success.
"""
from __future__ import annotations

from dataclasses import dataclass

# Points proposed ahead and kept in memory for the next free slot: a completion then starts the
# next job at once instead of after a refit and a proposal (2 local slots, 3-5 s jobs, the GP:
# busy 87-90% of the time without, 95-97% with; RESULTS.md). One covers the completion that frees a
# slot while the model works on the next point; each more would be chosen without one more
# result and would raise the jobs in flight the optimizer sees (auto's switch, restart rounds).
READY_POINTS = 1


@dataclass(frozen=True)
class Capacity:
    """The experiment as the loop sees it at one moment, and what may start from it.

    ``finished``: the finished jobs that count against max-finished-jobs (held-back failures do
    not, yet: :meth:`Store.finished_count <spearmint_nn.experiment.store.Store.finished_count>`);
    ``target``: the jobs to have in flight, max-concurrent or less while a site's limit holds.
    """

    max_concurrent: int
    max_finished_jobs: int | None
    target: int
    finished: int
    pending: int
    running: int
    held_back: int

    @property
    def budget_left(self) -> int | None:
        """Evaluations still to start: max-finished-jobs - finished - in flight - held back (None: no limit)."""
        if self.max_finished_jobs is None:
            return None
        in_flight = self.pending + self.running
        # Failures held back count once a job succeeds, so jobs start as if they counted already;
        # but one at a time past that, or a small budget would hide a wrapper bug forever.
        left = self.max_finished_jobs - self.finished - in_flight - self.held_back
        if left <= 0 and self.held_back and not in_flight and self.finished < self.max_finished_jobs:
            return 1
        return left

    @property
    def budget_reached(self) -> bool:
        return self.max_finished_jobs is not None and self.finished >= self.max_finished_jobs

    @property
    def free_slots(self) -> int:
        """Jobs that may be added to those in flight now (may be negative: more in flight than the target)."""
        slots = self.target - self.pending - self.running
        budget = self.budget_left
        return slots if budget is None else min(slots, budget)

    @property
    def ready_to_keep(self) -> int:
        """How many proposed points may wait beyond the free slots: READY_POINTS, less where the
        budget has no room for them, none in a sequential search (max-concurrent 1: its point
        would be chosen without the result of the one job running, a batch of two in effect)."""
        if self.max_concurrent < 2:
            return 0
        budget = self.budget_left
        room = READY_POINTS if budget is None else budget - max(0, self.free_slots)
        return max(0, min(READY_POINTS, room))
