"""Every benchmark process computes with one BLAS/OpenMP thread, whatever the method."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import torch
from threadpoolctl import threadpool_info, threadpool_limits

from experiments.benchmarks.runs import run_in_processes
from experiments.benchmarks.threads import THREAD_VARIABLES, thread_counts
from helpers.harness import harness_environment


def _unlimited_environment() -> dict[str, str]:
    """This environment without the thread variables (the test setup sets one of them), finding the harness."""
    return harness_environment({k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES})


def test_a_benchmark_started_from_the_command_line_loads_blas_with_one_thread():
    # what ``python -m experiments.benchmarks.parallel`` imports, then numpy's and torch's pools
    script = ("import experiments.benchmarks.parallel, numpy, scipy.linalg, torch, json\n"
              "from experiments.benchmarks.threads import thread_counts\n"
              "print(json.dumps(thread_counts()))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env=_unlimited_environment())
    counts = json.loads(done.stdout)
    assert counts["pools"] and all(threads == 1 for _, threads in counts["pools"])
    assert counts["torch"] == 1


def test_a_worker_of_the_harness_computes_with_one_thread_when_its_parent_had_more():
    blas_before = [pool["num_threads"] for pool in threadpool_info()]
    torch_before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with threadpool_limits(2):  # a parent that loaded numpy with a pool per core
            assert any(pool["num_threads"] == 2 for pool in threadpool_info())
            [(_, counts)] = list(run_in_processes(thread_counts, [()], workers=1))
    finally:
        torch.set_num_threads(torch_before)
    assert counts["pools"] and all(threads == 1 for _, threads in counts["pools"])
    assert counts["torch"] == 1
    assert all(counts["environment"][name] == "1" for name in THREAD_VARIABLES)
    assert [pool["num_threads"] for pool in threadpool_info()] == blas_before


def _failing_first(k: int, folder: str) -> int:
    if k == 0:
        raise ValueError("run 0 failed")
    time.sleep(0.2)
    (Path(folder) / str(k)).touch()
    return k


def test_a_failed_run_ends_the_benchmark_without_running_the_queued_ones(tmp_path):
    with pytest.raises(ValueError, match="run 0 failed"):
        list(run_in_processes(_failing_first, [(k, str(tmp_path)) for k in range(40)], workers=1))
    # the pool had handed a few to its worker already; the other 30-odd never ran
    assert len(list(tmp_path.iterdir())) < 5
