"""Running independent benchmark runs side by side, each in its own process.

Runs of a benchmark (one seed of one method on one problem) share nothing, so they go to a
process pool; results come back as each run ends, so a script can print progress and rewrite
its JSON file, and an interrupted benchmark keeps every run that finished.
"""
from __future__ import annotations

import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, Sequence

from .provenance import write_json
from .threads import limit_threads


def seed_list(text: str) -> list[int]:
    """Seeds named on the command line: a range "A-B" (A..B) or a list "3,5,8" (one seed: "3")."""
    if "-" in text:
        first, last = (int(part) for part in text.split("-"))
        return list(range(first, last + 1))
    return [int(part) for part in text.split(",") if part.strip()]


def parse_seeds(text: str) -> list[int]:
    """Seeds of a quality benchmark: a plain count N means seeds 0..N-1, anything else is a
    :func:`seed_list`, so a benchmark can add seeds to an earlier report without rerunning it."""
    return list(range(int(text))) if text.strip().isdigit() else seed_list(text)


def run_in_processes(
    function: Callable[..., Any], jobs: Sequence[tuple], workers: int = 1
) -> Iterator[tuple[tuple, Any]]:
    """Yield (job, function(*job)) for every job, in the order the runs end; a run's exception
    is raised at once, after the runs in progress end and with the queued ones cancelled.

    ``function`` must be importable at module level (it is sent to worker processes by name).
    Each worker computes with one thread (:mod:`experiments.benchmarks.threads`): the runs
    themselves are the parallelism.
    """
    with ProcessPoolExecutor(max_workers=workers, initializer=limit_threads) as pool:
        futures = {pool.submit(function, *job): job for job in jobs}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            # A failed run (or a caller that stops reading) ends the benchmark here: the pool's
            # exit would otherwise run every queued job first, for results nobody reads.
            for future in futures:
                future.cancel()


def write_report(path: str, load_before: tuple[float, float, float], start: float, **content: Any) -> None:
    """Write a benchmark's JSON report: its provenance (:mod:`~experiments.benchmarks.provenance`),
    ``machine`` (CPUs, platform, the load average before the
    benchmark started and now, seconds since ``start``, a ``time.time()``) and ``content``."""
    machine = {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average_before": load_before,
               "load_average_now": os.getloadavg(), "elapsed_s": time.time() - start}
    write_json(path, {"machine": machine, **content})


def earlier_runs(paths: Sequence[str], key_fields: Sequence[str]) -> dict[tuple, dict[str, Any]]:
    """Runs of earlier JSON reports (their ``runs`` lists) by the tuple of their ``key_fields``
    (e.g. problem, method, seed); later files win.

    Runs are deterministic given their seed, so a benchmark can take a finished run from an
    earlier report instead of repeating it.
    """
    found = {}
    for path in paths:
        with open(path) as f:
            for run in json.load(f)["runs"]:
                found[tuple(run.get(k) for k in key_fields)] = run  # a field it lacks matches nothing
    return found


#: What identifies a run across reports.
KEY = ("problem", "method", "seed")


def sourced_runs(paths: Sequence[str], problems: Collection[str] | None = None
                 ) -> tuple[dict[tuple, dict[str, Any]], list[dict[str, Any]]]:
    """The runs of the reports at ``paths`` by (problem, method, seed), later files winning,
    each with its ``source`` index into the returned list of sources; with ``problems``, only
    those problems' runs (and only the sources they come from)."""
    sources: list[dict[str, Any]] = []
    found: dict[tuple, dict[str, Any]] = {}
    for path in paths:
        with open(path) as handle:
            report = json.load(handle)
        offset = len(sources)
        sources += report.get("sources", [])  # a merged report's own sources, in their order
        sources.append({"file": Path(path).name, **{k: report.get(k) for k in ("provenance", "arguments", "machine")}})
        for run in report["runs"]:
            if problems is not None and run["problem"] not in problems:
                continue
            index = run.get("source")
            found[tuple(run.get(k) for k in KEY)] = {
                **run, "source": len(sources) - 1 if index is None else offset + index}
    used = sorted({run["source"] for run in found.values()})
    renumber = {old: new for new, old in enumerate(used)}
    return ({key: {**run, "source": renumber[run["source"]]} for key, run in found.items()},
            [sources[old] for old in used])


def reused_and_new(
    planned: Iterable[tuple[tuple, int, tuple]], earlier: dict[tuple, dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[tuple]]:
    """Split planned runs, each (key, evals, job), into the runs ``earlier`` already holds (cut
    to ``evals``, see :func:`first_evaluations`) and the jobs that still have to run."""
    reused, jobs = [], []
    for key, evals, job in planned:
        run = first_evaluations(earlier.get(key), evals)
        if run is not None:
            reused.append(run)
        else:
            jobs.append(job)
    return reused, jobs


def first_evaluations(run: dict[str, Any] | None, evals: int) -> dict[str, Any] | None:
    """``run`` cut to its first ``evals`` evaluations (every list field is per evaluation), or
    None when there is no run or it has fewer evaluations."""
    if run is None or len(run["values"]) < evals:
        return None
    return {k: v[:evals] if isinstance(v, list) else v for k, v in run.items()}
