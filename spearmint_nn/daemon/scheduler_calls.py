"""The calls that ask the scheduler, made off the loop's path.

A scheduler command can hang: with SLURM's controller down, each ``squeue`` or ``sbatch`` keeps
reconnecting for its MessageTimeout (about 10 s) before it fails, and a batch driver allows a
command a minute. Made by the loop itself, such a call would hold back everything else, above
all the results already on disk, which need no scheduler at all.

So the driver's polls and submissions run in one thread of their own, one at a time
(:meth:`SchedulerCalls.run`), while the loop waits for the answer and, every ``polling-time``
meanwhile, records the result files that appeared (the ``meanwhile`` the daemon sets): a
result on disk is recorded at the next poll whatever the controller does. The loop keeps its
order (a submission's answer is recorded before anything else is submitted), and the driver
is never called from two threads at once: ``meanwhile`` does not call it. A call that answers
within one poll period, as every call does while the scheduler is well, changes nothing.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")


class SchedulerCalls:
    """See the module docstring. The daemon sets what the loop does while it waits
    (``meanwhile``) and how often (``every_s``, its polling-time)."""

    def __init__(self, every_s: float = 1.0):
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scheduler-calls")
        self.meanwhile: Callable[[], None] = lambda: None
        self.every_s = every_s

    def run(self, call: Callable[[], T]) -> T:
        """``call()``'s answer (or its exception), made in the scheduler thread."""
        future = self._thread.submit(call)
        while True:
            try:
                return future.result(timeout=self.every_s)
            except TimeoutError:
                self.meanwhile()

    def close(self) -> None:
        """No more calls; one in flight ends on its own timeout (the daemon does not wait for it)."""
        self._thread.shutdown(wait=False)
