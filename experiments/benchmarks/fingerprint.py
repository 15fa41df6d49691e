"""The exact proposals fixed seeds give, to show that a refactor left the search unchanged.

Each case drives the optimizer as the daemon would, from an experiment folder's config.json
(so the config-to-optimizer path is covered too), sequentially or in batches, and records
every proposed point exactly. Two fingerprints of the same machine are compared with
``--compare``::

    python -m experiments.benchmarks.fingerprint --json before.json
    ... change the code ...
    python -m experiments.benchmarks.fingerprint --json after.json --compare before.json

The cases cover each model (GP, DNGO, the default auto rule, random search), sequential and
batch proposals, a constraint with failed jobs, a NOISELESS objective and the duration-aware
acquisition; each model is also restarted from its saved state part way.

One more case, ``daemon-job-ends``, runs the daemon itself (``spearmint-nn run``, a real process
on the local driver, one job at a time) through every way a job ends: a failure held back until
the first success, completions, failures of a crash region, a job early-stopped by the median
rule, a job that checkpoints and is submitted again as its second attempt, and a result that
arrives after its job was recorded failed. It records each job's record (params, state, value,
failure, attempts, stopped step, predicted value), so a change to how the daemon ends jobs that
alters any of them, or any proposal that follows, shows as a difference.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .command_line import benchmark_parser
from .functions import FUNCTIONS
from .provenance import write_json

BRANIN = FUNCTIONS["branin"]
HARTMANN3 = FUNCTIONS["hartmann3"]

# name -> (config.json keys, problem, evaluations, batch size)
CASES: dict[str, tuple[dict[str, Any], Any, int, int]] = {
    "gp-sequential": ({"model": "gp"}, BRANIN, 14, 1),
    "gp-batch": ({"model": "gp"}, HARTMANN3, 20, 5),
    "dngo-sequential": ({"model": "dngo"}, BRANIN, 14, 1),
    "dngo-batch": ({"model": "dngo"}, HARTMANN3, 20, 5),
    "auto-batch": ({}, BRANIN, 16, 4),
    "sobol-batch": ({"model": "sobol"}, BRANIN, 8, 4),
    "gp-constrained-failures": (
        {"model": "gp", "acquisition": "ei-per-second",
         "tasks": {"main": {"type": "OBJECTIVE", "likelihood": "NOISELESS"},
                   "c": {"type": "CONSTRAINT"}}}, BRANIN, 16, 2),
    "dngo-value-constraint": (
        {"model": "dngo", "constraint-model": "value",
         "tasks": {"main": {"type": "OBJECTIVE"}, "c": {"type": "CONSTRAINT"}}}, BRANIN, 14, 2),
}


def _outcome(problem: Any, params: dict[str, Any], tasks: dict[str, Any] | None) -> tuple[Any, float]:
    """The job's result and its duration: a failure in one corner, a constraint on x0 + x1."""
    x = problem.point(params)
    duration = 1.0 + abs(float(x[0]))
    if x[0] + x[1] > 0.8 * sum(hi for _, hi in problem.bounds[:2]):
        return math.nan, duration  # the job crashed
    value = problem(params)
    if not tasks or len(tasks) == 1:
        return value, duration
    return {"main": value, "c": float(x[1] - x[0])}, duration


def run_case(name: str, extra: dict[str, Any] | None = None) -> list[list[dict[str, Any]]]:
    """The proposals of one case, one list per ``suggest`` call; ``extra``: config.json keys
    added to the case's (the cases' own have no ``early-stopping``: they fingerprint the search
    with early stopping off, as it was before the key existed)."""
    import torch

    from spearmint_nn.experiment.config import load_config
    from spearmint_nn.daemon.proposer import make_optimizer

    torch.set_num_threads(1)
    keys, problem, evals, batch = CASES[name]
    variables = problem.variables
    proposals = []
    with tempfile.TemporaryDirectory() as folder:
        experiment = Path(folder)
        (experiment / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
        config = {"experiment-name": name, "main-file": "wrapper.py", "seed": 3, "variables": variables,
                  "max-finished-jobs": evals, **keys, **(extra or {})}
        (experiment / "config.json").write_text(json.dumps(config))
        observed: list[tuple[dict[str, Any], Any, float]] = []
        for round_ in range(evals // batch):
            if round_ == evals // batch // 2:
                observed_so_far = list(observed)
                optimizer = make_optimizer(load_config(experiment))  # a restarted daemon
                for params, value, duration in observed_so_far:
                    optimizer.observe(params, value, duration)
            elif round_ == 0:
                optimizer = make_optimizer(load_config(experiment))
            points = optimizer.suggest(batch)
            proposals.append([{k: np.asarray(v).tolist() for k, v in p.items()} for p in points])
            for params in points:
                value, duration = _outcome(problem, params, keys.get("tasks"))
                optimizer.observe(params, value, duration)
                observed.append((params, value, duration))
    return proposals


# The daemon case's wrapper. Each job reports 4 steps of a curve that falls toward its Branin
# value, then waits 2.5 s before it returns, so that a daemon polling every 0.2 s judges every
# job once its whole curve is there (min-steps 4: never on part of it, however the lines and the
# polls interleave) and stops it before it returns. Job 1 crashes (a failure held back until job
# 2 succeeds); x1 < -2.5 crashes (failures of their points); job 3 checkpoints in its first attempt
# and finishes in its second; job 5 returns in a forked copy of itself 1.5 s after its process
# exited without a result, so the daemon records it failed and then takes its late result.
DAEMON_WRAPPER = """
import math
import os
import time

from spearmint_nn import job


def main(job_id, params):
    x, y = float(params["x1"][0]), float(params["x2"][0])
    value = (y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2 \\
        + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10
    if job_id == 1 or x < -2.5:
        raise RuntimeError("the crash region")
    if job_id == 5:
        if os.fork() != 0:
            os._exit(0)
        time.sleep(1.5)
        return value
    first = 3 if job_id == 3 and job.attempt() == 2 else 1
    for step in range(first, 5):
        job.report(step, value + 10.0 * (5 - step))
        if job_id == 3 and step == 2 and job.attempt() == 1:
            (job.checkpoint_dir() / "step").write_text("2")
            job.resume_later()
    time.sleep(2.5)
    return value
"""
DAEMON_CASE = "daemon-job-ends"
DAEMON_JOBS = 12
# The fields of a job's record that say how it ended (times and paths are left out).
JOB_FIELDS = ("params", "state", "value", "failure", "reclassified_from", "stopped_step", "predicted_values",
              "attempt", "last_step", "reports")


def run_daemon_case() -> list[dict[str, Any]]:
    """The daemon case (see the module docstring): every job's record, by id."""
    variables = BRANIN.variables
    with tempfile.TemporaryDirectory() as folder:
        experiment = Path(folder)
        (experiment / "wrapper.py").write_text(DAEMON_WRAPPER)
        config = {"experiment-name": DAEMON_CASE, "main-file": "wrapper.py", "seed": 3, "variables": variables,
                  "model": "gp", "max-concurrent": 1, "max-finished-jobs": DAEMON_JOBS, "polling-time": 0.2,
                  "resume": {"warning": 5}, "early-stopping": {"rule": "median", "min-steps": 4, "min-jobs": 3}}
        (experiment / "config.json").write_text(json.dumps(config))
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-m", "spearmint_nn", "run", str(experiment)], capture_output=True,
                              text=True, timeout=600, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"the daemon case's daemon exited {done.returncode}:\n{done.stderr[-3000:]}")
        records = []
        for path in sorted((experiment / ".spearmint" / "jobs").glob("*/*.json")):
            record = json.loads(path.read_text())
            records.append({"id": record["id"], **{key: record.get(key) for key in JOB_FIELDS},
                            "attempts": [entry.get("outcome") for entry in record.get("attempts") or []],
                            "late": (record.get("late_result") or {}).get("failure")})
    return sorted(records, key=lambda record: record["id"])


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("fingerprint", __doc__.splitlines()[0], json_required=True)
    parser.add_argument("--compare", help="an earlier fingerprint: exit 1 unless every proposal is identical")
    parser.add_argument("--cases", default=",".join([*CASES, DAEMON_CASE]), help="comma-separated case names")
    args = parser.parse_args(argv)
    names = [n for n in args.cases.split(",") if n]
    result: dict[str, Any] = {}
    for name in names:
        if name == DAEMON_CASE:
            result[name] = run_daemon_case()
            print(f"{name}: {len(result[name])} jobs", flush=True)
            continue
        result[name] = run_case(name)
        print(f"{name}: {sum(len(p) for p in result[name])} proposals", flush=True)
    write_json(args.json, result)
    if args.compare is None:
        return 0
    earlier = json.loads(Path(args.compare).read_text())
    differing = [n for n in names if earlier.get(n) != result[n]]
    for name in names:
        print(f"{name:34s} {'DIFFERS' if name in differing else 'identical'}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
