"""Experiment folders for tests: a Branin config and wrapper, writing a folder, running the CLI and
a daemon as real processes, reading back every job."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.store import Store

BRANIN_VARIABLES = {
    "x": {"type": "FLOAT", "size": 1, "min": -5, "max": 10},
    "y": {"type": "FLOAT", "size": 1, "min": 0, "max": 15},
}

BRANIN_WRAPPER = """
import math

def main(job_id, params):
    x, y = float(params["x"][0]), float(params["y"][0])
    return ((y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)
"""


def write_experiment(folder: Path, config: dict[str, Any], files: dict[str, str] | None = None) -> Path:
    """Create an experiment folder with ``config.json`` and the given files (dedented text)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    for name, text in (files or {}).items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder


def quick_config(**overrides: Any) -> dict[str, Any]:
    """A Branin config on the Sobol chooser (no model fits), polling often."""
    config = {"language": "PYTHON", "main-file": "wrapper.py", "variables": BRANIN_VARIABLES,
              "model": "sobol", "seed": 1, "max-concurrent": 2, "max-finished-jobs": 5, "polling-time": 0.5}
    config.update(overrides)
    return config


def cli(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run ``python -m spearmint_nn ARGS`` as a real process; text output captured."""
    return subprocess.run([sys.executable, "-m", "spearmint_nn", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def start_daemon(experiment: Path, *extra: str) -> subprocess.Popen:
    """``spearmint-nn run`` in the background; its console lines go to ``<experiment>/console.txt``."""
    log = open(experiment / "console.txt", "ab")
    return subprocess.Popen([sys.executable, "-m", "spearmint_nn", "run", str(experiment), *extra],
                            stdout=log, stderr=subprocess.STDOUT)


def all_jobs(experiment: Path, live: bool = False) -> dict[int, tuple[str, dict[str, Any]]]:
    """job id -> (state folder, parsed job file); asserts each id is in one folder only.

    ``live``: read while a daemon runs, whose move of a job writes its new file before removing
    the old one; a job seen in two folders is then taken in its later state (the folders are
    read in the order of a job's life), and one that left a folder while it was read is skipped."""
    found: dict[int, tuple[str, dict[str, Any]]] = {}
    for state in ("pending", "running", "complete", "failed", "stopped"):
        for path in sorted((experiment / ".spearmint" / "jobs" / state).glob("*.json")):
            try:
                job = json.loads(path.read_text())
            except FileNotFoundError:
                if live:
                    continue
                raise
            assert live or job["id"] not in found, f"job {job['id']} in {found[job['id']][0]} and {state}"
            assert job["state"] == state and path.name == f"{job['id']:06d}.json"
            found[job["id"]] = (state, job)
    return dict(sorted(found.items()))


MIXED_VARIABLES = {
    "lr": {"type": "FLOAT", "min": 1e-5, "max": 1.0, "scale": "log"},
    "layers": {"type": "INT", "min": 1, "max": 8},
    "act": {"type": "ENUM", "options": ["relu", "tanh", "gelu"]},
    "w": {"type": "FLOAT", "size": 2, "min": -1.0, "max": 1.0},
}


def write_finished_experiment(root: Path, n_jobs: int, *, failures: bool = False, constraint: bool = False,
                     running: int = 0, budget: int | None = None, name: str = "demo",
                     seed: int = 0) -> Path:
    """An experiment folder with ``n_jobs`` finished jobs (plus ``running`` running ones).

    Objective: a noisy bowl in the params; with ``failures`` every 7th job failed; with
    ``constraint`` a CONSTRAINT task ``mem`` that is violated (< 0) for about a third of jobs.
    """
    rng = np.random.default_rng(seed)
    exp = root / name
    exp.mkdir(parents=True)
    tasks = {"loss": {"type": "OBJECTIVE"}}
    if constraint:
        tasks["mem"] = {"type": "CONSTRAINT"}
    config = {"language": "PYTHON", "main-file": "wrapper.py", "experiment-name": name,
              "variables": MIXED_VARIABLES, "tasks": tasks, "max-concurrent": 2,
              "max-finished-jobs": budget if budget is not None else max(n_jobs, 1) + 10}
    (exp / "config.json").write_text(json.dumps(config, indent=2))
    (exp / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
    paths = ExperimentPaths(exp)
    Store(paths).create_dirs()
    t0 = 1.7e9
    for i in range(n_jobs + running):
        job_id = i + 1
        params = {"lr": [float(10 ** rng.uniform(-5, 0))], "layers": [int(rng.integers(1, 9))],
                  "act": [str(rng.choice(["relu", "tanh", "gelu"]))],
                  "w": [float(v) for v in rng.uniform(-1, 1, 2)]}
        job: dict[str, Any] = {"id": job_id, "params": params, "source": "optimizer",
                               "created": t0 + 10 * i, "submitted": t0 + 10 * i + 1, "driver": "local"}
        if i >= n_jobs:
            job.update(state="running", scheduler_id=str(1000 + i))
        elif failures and job_id % 7 == 0:
            job.update(state="failed", finished=t0 + 10 * i + 30, duration=29.0,
                       reason="wrapper raised ValueError: <script>alert('x')</script>",
                       failure="exception", stderr_tail="Traceback ...\nValueError: <b>bad</b>")
        else:
            loss = (math.log10(params["lr"][0]) + 3) ** 2 + 0.1 * params["layers"][0] + sum(
                v * v for v in params["w"]) + float(rng.normal(0, 0.1))
            values = {"loss": loss}
            if constraint:
                values["mem"] = float(rng.uniform(-1, 2))
            # jobs finish out of id order: completion order differs from creation order
            finished = t0 + 10 * i + 20 + 15 * ((i * 7) % 3)
            job.update(state="complete", finished=finished, started=finished - 18, ended=finished - 1,
                       host="node01", duration=17.0 + (i % 5), values=values, value=loss)
        (paths.job_file(job["state"], job_id)).write_text(json.dumps(job))
    return exp


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
