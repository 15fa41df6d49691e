"""Where a benchmark result comes from, recorded in every JSON file a benchmark writes.

A result is read beside others made on other days, commits and machines, and the references'
behaviour changes between their releases (Optuna's GPSampler, for one, takes running trials into
account only in its later versions). So every report carries, under ``provenance``: the date
(UTC), the machine (host name, CPUs, platform, Python, the load average when the report was
written), the git commit of the checkout the package runs from and whether its tracked files
differed from that commit, the versions of the package and of the numerical and reference
libraries installed (a library that is not installed is left out), and the threads the writing
process computes with (:mod:`experiments.benchmarks.threads`).
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from .threads import thread_counts

#: Distributions whose versions a report records when they are installed.
LIBRARIES = ("spearmint-nn", "torch", "numpy", "scipy", "botorch", "gpytorch", "optuna", "smac", "ConfigSpace",
             "scikit-learn", "coco-experiment", "ioh")


def provenance() -> dict[str, Any]:
    """The provenance block of a report written now (see the module docstring)."""
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or cpu_model(), "python": platform.python_version(),
                    "load_average": list(os.getloadavg())},
        "git": git_state(),
        "versions": library_versions(),
        "threads": thread_counts(),
    }


@functools.lru_cache(maxsize=1)
def git_state() -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the checkout this package runs from, None outside one.

    Read once per process: a benchmark that rewrites its own result file inside the checkout
    must not mark its later reports dirty."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=30)
        if commit.returncode != 0:
            return None
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                                 capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):  # no git on this machine
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(changed.stdout.strip())}


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The processor's model name from /proc/cpuinfo (Linux, where ``platform.processor()`` is
    empty), or "" where there is none."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")


def library_versions() -> dict[str, str]:
    """Installed version of each of :data:`LIBRARIES` that is installed."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def write_json(path: str | os.PathLike, report: dict[str, Any]) -> None:
    """Write ``report`` with its ``provenance`` first (see :func:`dump_json`)."""
    dump_json(path, {"provenance": provenance(), **report})


def dump_json(path: str | os.PathLike, report: dict[str, Any]) -> None:
    """Write ``report`` as indented JSON, but each of its ``runs`` on one line without spaces,
    last: a file of hundreds of runs stays readable, its diffs say which runs changed, and the
    runs take an eighth less room."""
    runs = report.get("runs")
    if not isinstance(runs, list):
        text = json.dumps(report, indent=1)
    else:
        head = json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1)
        body = ",\n".join("  " + json.dumps(run, separators=(",", ":")) for run in runs)
        text = (head[:-2] + ",\n" if head != "{}" else "{\n") + ' "runs": [\n' + body + "\n ]\n}"
    with open(path, "w") as handle:
        handle.write(text + "\n")
