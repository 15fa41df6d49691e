"""The local driver's settings as a daemon applies them: the default time limit, GPU slots."""
from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from helpers.experiments import cli, quick_config, start_daemon
from spearmint_nn.experiment.config import load_config


def _wait_for(predicate, what, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _submitted(running: Path) -> int:
    """Running jobs whose scheduler id is recorded (a file moved away meanwhile counts as none)."""
    count = 0
    for path in running.glob("*.json"):
        try:
            count += json.loads(path.read_text()).get("scheduler_id") is not None
        except (OSError, ValueError):
            pass
    return count


def test_the_default_time_limit_is_a_day_and_null_means_none(make_experiment):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 2}))
    assert cli("run", folder, timeout=300).returncode == 0
    assert "driver local (time-limit 86400 s)" in (folder / ".spearmint" / "daemon.log").read_text()
    unlimited = make_experiment(quick_config(driver={"name": "local", "time-limit": None}), name="unlimited")
    assert load_config(unlimited).driver_options == {"time-limit": None}


# Each job records the devices it was given and when it ran, then sleeps so that jobs overlap.
DEVICES_WRAPPER = """
import os, time

def main(job_id, params):
    started = time.time()
    time.sleep(2.0)
    with open(f"ran-{job_id}.txt", "w") as f:
        f.write(f"{os.environ.get('CUDA_VISIBLE_DEVICES')} {started} {time.time()}")
    return float(params["x"][0])
"""


def _runs(folder):
    runs = []
    for path in folder.glob("ran-*.txt"):
        devices, start, end = path.read_text().split()
        runs.append((devices, float(start), float(end)))
    return runs


@pytest.mark.slow
def test_gpu_slots_one_job_each_also_across_a_daemon_killed_and_restarted(make_experiment):
    config = quick_config(**{"max-finished-jobs": 6, "driver": {"name": "local", "gpus": [0, "1,2"]}})
    del config["max-concurrent"]  # the slots decide: two at once
    folder = make_experiment(config, {"wrapper.py": DEVICES_WRAPPER})
    daemon = start_daemon(folder)
    running = folder / ".spearmint" / "jobs" / "running"
    # both submitted: a job moves to running with no scheduler id yet while its submission is under way
    _wait_for(lambda: _submitted(running) == 2, "two jobs running")
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    held = sorted(json.loads(path.read_text())["scheduler_id"].split(":", 2)[2] for path in running.glob("*.json"))
    assert held == ["0", "1,2"]  # each job record names its devices
    assert cli("run", folder, timeout=300).returncode == 0
    runs = _runs(folder)
    assert len(runs) == 6 and {devices for devices, _, _ in runs} == {"0", "1,2"}
    assert "warning" not in (folder / ".spearmint" / "daemon.log").read_text()  # no submission waited on a slot
    for devices in ("0", "1,2"):  # never two jobs at once on a slot, the adopted ones included
        spans = sorted((start, end) for d, start, end in runs if d == devices)
        assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:])), spans
    assert any(a[1] < b[2] and b[1] < a[2] for a in runs for b in runs if a[0] != b[0])  # both slots at once


def test_max_concurrent_is_the_number_of_gpu_slots_unless_it_asks_for_fewer(make_experiment):
    gpus = {"name": "local", "gpus": [0, 1, 2, 3]}
    config = quick_config(driver=gpus)
    del config["max-concurrent"]
    assert load_config(make_experiment(config, name="default")).max_concurrent == 4
    fewer = make_experiment(quick_config(driver=gpus, **{"max-concurrent": 2}), name="fewer")
    assert load_config(fewer).max_concurrent == 2
    capped = make_experiment(quick_config(driver=gpus, **{"max-concurrent": 8, "max-finished-jobs": 1}), name="capped")
    assert load_config(capped).max_concurrent == 4
    assert cli("run", capped, timeout=300).returncode == 0
    assert ("max-concurrent 8 is more than the 4 GPU slots of driver.gpus: 4 jobs run at once"
            in (capped / ".spearmint" / "daemon.log").read_text())
