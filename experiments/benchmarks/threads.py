"""One BLAS/OpenMP thread in every benchmark process, for every method alike.

The benchmarks charge each method's proposal time to the simulated clock and compare seconds per
proposal, so every method must run under the same threads. OpenBLAS, MKL and OpenMP read their
thread counts from the environment once, when numpy, scipy or torch first loads them; setting
the variables afterwards changes nothing in that process (forked workers then inherit a pool of
one thread per core). Hence :func:`limit_threads` runs when the ``experiments.benchmarks``
package is imported, which ``python -m experiments.benchmarks.<name>`` does before the
benchmark module imports numpy; spawned workers import the package again and inherit the
variables. Where a library is already loaded (a benchmark imported by a process that loaded
numpy first, such as a test run), threadpoolctl and ``torch.set_num_threads`` set the running
pools too, and :func:`~experiments.benchmarks.runs.run_in_processes` calls this again in each
worker it starts.

The runs themselves are the parallelism (``--workers``), so one thread each is also the fastest
use of the cores.
"""
from __future__ import annotations

import os
import sys
from typing import Any

#: Variables read by the BLAS and OpenMP runtimes numpy, scipy and torch may load.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS")


def limit_threads() -> None:
    """One thread for BLAS, OpenMP and torch in this process and every process it starts."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    if "numpy" in sys.modules or "scipy" in sys.modules or "torch" in sys.modules:
        # already loaded: the variables came too late for their pools
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def thread_counts() -> dict[str, Any]:
    """The threads this process computes with: each loaded BLAS/OpenMP library's, torch's (when
    loaded) and the variables, for a report's provenance and for the tests."""
    from threadpoolctl import threadpool_info

    counts: dict[str, Any] = {
        "pools": sorted({(pool["internal_api"], pool["num_threads"]) for pool in threadpool_info()}),
        "environment": {name: os.environ.get(name) for name in THREAD_VARIABLES},
    }
    if "torch" in sys.modules:
        counts["torch"] = sys.modules["torch"].get_num_threads()
    return counts
