"""The warning before the time limit on a real scheduler (tests/cluster/test_slurm.py and
test_sge.py): a SHELL job that traps SIGUSR1, counts the signals it got, saves a checkpoint and
exits 99 is recorded as one checkpointed attempt, warned once, without a result."""
from __future__ import annotations

import time
from pathlib import Path

from helpers.batch_scenarios import Cluster, run_to_end, wait_for
from helpers.experiments import BRANIN_VARIABLES, write_experiment
from spearmint_nn.daemon.build import make_driver
from spearmint_nn.daemon.submitter import job_spec
from spearmint_nn.drivers.base import SchedulerState
from spearmint_nn.experiment.config import load_config
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.experiment.store import Store
from spearmint_nn.files import atomic_write_json, read_json

TRAPPING = """#!/bin/bash
echo "$SPEARMINT_ATTEMPT" >> "$SPEARMINT_CHECKPOINT_DIR/attempts"
warned=0
trap 'warned=$((warned + 1)); echo warned >> "$SPEARMINT_CHECKPOINT_DIR/signals"' USR1
for i in $(seq 1 900); do
    sleep 0.2
    if [ "$warned" -gt 0 ]; then sleep 2; echo "step $i" > "$SPEARMINT_CHECKPOINT_DIR/state"; exit 99; fi
done
echo 1.0
"""


def warned_shell_job(tmp_path: Path, cluster: Cluster, time_limit: float, warning: float) -> None:
    """Submit one such job through the cluster's driver and check what it left."""
    folder = write_experiment(tmp_path / "exp", {
        "language": "SHELL", "command": ["bash", "run.sh"], "variables": BRANIN_VARIABLES,
        "experiment-name": f"warn-{cluster.driver}", "resume": {"warning": warning},
        "driver": {"name": cluster.driver, "name-prefix": "sm-", "time-limit": time_limit,
                   "setup": ["echo setup-line-ran"]}}, {"run.sh": TRAPPING})
    paths = ExperimentPaths(folder)
    Store(paths).create_dirs()
    atomic_write_json(paths.input_file(1), {"x": [1.0], "y": [2.0]})
    config = load_config(folder)
    driver = make_driver(config)
    sid = driver.submit(job_spec(config, driver, 1))
    started = time.monotonic()
    status = wait_for(lambda: (s := driver.poll([sid]).get(sid)) is not None and s.state.finished and s,
                      time_limit + 300, f"{cluster.title} job {sid} to end")
    errors = paths.stderr_file(1).read_text(errors="replace")
    assert status.state is SchedulerState.COMPLETED, (status, errors[-2000:])
    assert time.monotonic() - started < time_limit + 120
    assert not paths.result_file(1).exists()
    record = read_json(paths.attempt_file(1, 1))
    assert record is not None, errors[-2000:]
    assert record["outcome"] == "checkpointed" and record["attempt"] == 1
    assert isinstance(record["warned"], float) and record["started"] <= record["warned"] <= record["ended"]
    assert record["scheduler_ids"]  # the scheduler's own job id, read from the environment
    # exactly one SIGUSR1 reached the command, and the job's shell survived the warning
    assert (paths.checkpoint_dir(1) / "signals").read_text().split() == ["warned"]
    assert (paths.checkpoint_dir(1) / "state").exists()
    assert "setup-line-ran" in paths.stdout_file(1).read_text()


CHECKPOINTING = """
import json, time
from spearmint_nn import job

def main(job_id, params):
    # {steps} steps of one second: a running sum saved in the checkpoint folder on the warning
    state = job.checkpoint_dir() / "state.json"
    saved = json.loads(state.read_text()) if state.exists() else {{"step": 0, "total": 0.0}}
    step, total = saved["step"], saved["total"]
    while step < {steps}:
        time.sleep(1.0)
        total += step * float(params["x"][0])
        step += 1
        if job.should_checkpoint():
            state.write_text(json.dumps({{"step": step, "total": total}}))
            job.resume_later()
    return total
"""


def resumed_until_done(tmp_path: Path, cluster: Cluster, *, work_s: int, time_limit: float, warning: float,
                       at_least: int) -> None:
    """``spearmint-nn run`` of one job of ``work_s`` seconds under a shorter time limit: it
    checkpoints on each warning, the daemon submits it again, and it ends with the value it would
    have had uninterrupted, in at least ``at_least`` attempts, none of them a failure."""
    folder = write_experiment(tmp_path / "exp", {
        "language": "PYTHON", "main-file": "wrapper.py", "variables": BRANIN_VARIABLES, "model": "sobol",
        "experiment-name": f"resume-{cluster.driver}", "max-finished-jobs": 1, "polling-time": 1,
        "resume": {"warning": warning},
        "driver": {"name": cluster.driver, "name-prefix": "sm-", "time-limit": time_limit, "result-grace": 3}},
        {"wrapper.py": CHECKPOINTING.format(steps=work_s)})
    done = run_to_end(folder, work_s * 4 + 600)
    [job] = Store(ExperimentPaths(folder)).load_all().jobs()
    assert job.state.value == "complete", (job.fields, done[-3000:])
    assert job.value == sum(step * job.params["x"][0] for step in range(work_s))  # as if uninterrupted
    outcomes = [(a["attempt"], a["outcome"]) for a in job.fields["attempts"]]
    assert len(outcomes) >= at_least, outcomes
    assert outcomes == [(n, "checkpointed") for n in range(1, len(outcomes))] + [(len(outcomes), "ok")]
    assert all(a["warned"] for a in job.fields["attempts"][:-1])
    assert done.count("submitting it again as attempt") == len(outcomes) - 1
