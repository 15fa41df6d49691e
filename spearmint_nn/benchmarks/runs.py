"""Running independent benchmark runs side by side, each in its own process.

Runs of a benchmark (one seed of one method on one problem) share nothing, so they go to a
process pool; results come back as each run ends, so a script can print progress and rewrite
its JSON file, and an interrupted benchmark keeps every run that finished.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterator, Sequence


def run_in_processes(
    function: Callable[..., Any], jobs: Sequence[tuple], workers: int = 1
) -> Iterator[tuple[tuple, Any]]:
    """Yield (job, function(*job)) for every job, in the order the runs end.

    ``function`` must be importable at module level (it is sent to worker processes by name).
    Each worker uses one thread: the runs themselves are the parallelism.
    """
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(function, *job): job for job in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()
