"""The warning before the time limit on a real scheduler (tests/cluster/test_slurm.py and
test_sge.py): a SHELL job that traps SIGUSR1, counts the signals it got, saves a checkpoint and
exits 99 is recorded as one checkpointed attempt, warned once, without a result."""
from __future__ import annotations

import time
from pathlib import Path

from helpers.batch_scenarios import Cluster, wait_for
from helpers.experiments import BRANIN_VARIABLES, write_experiment
from spearmint_nn.daemon.driving import make_driver
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
