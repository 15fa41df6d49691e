"""The local driver with real processes: exit states, time limit, cancel, adoption after restart."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from spearmint_nn.drivers.base import JobSpec, SchedulerState
from spearmint_nn.drivers.local import LocalDriver


def _spec(tmp_path: Path, script: str, job_id: int = 1) -> JobSpec:
    return JobSpec(job_id=job_id, command=["bash", "-c", script], workdir=tmp_path,
                   stdout=tmp_path / f"{job_id}.out", stderr=tmp_path / f"{job_id}.err",
                   script_path=tmp_path / f"{job_id}.sh", name=f"job-{job_id}")


def _wait_end(driver, sid, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = driver.poll([sid])[sid]
        if status.state.finished:
            return status
        time.sleep(0.05)
    raise AssertionError(f"{sid} still running after {timeout} s")


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _dies(pid: int, timeout=5.0) -> bool:
    """Whether pid is gone within timeout (a killed process takes a moment to exit)."""
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _wait_file(path: Path, timeout=10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def test_outputs_and_exit_states(tmp_path):
    driver = LocalDriver({}, tmp_path)
    ok = driver.submit(_spec(tmp_path, "echo out; echo err >&2", 1))
    bad = driver.submit(_spec(tmp_path, "exit 3", 2))
    assert _wait_end(driver, ok).state is SchedulerState.COMPLETED
    status = _wait_end(driver, bad)
    assert (status.state, status.exit_code, status.reason) == (SchedulerState.FAILED, 3, "exit status 3")
    assert (tmp_path / "1.out").read_text() == "out\n" and (tmp_path / "1.err").read_text() == "err\n"
    pid, start = ok.split(":")
    assert int(pid) > 0 and int(start) > 0


def test_own_session_and_cancel_kills_the_group(tmp_path):
    driver = LocalDriver({}, tmp_path)
    sid = driver.submit(_spec(tmp_path, f"sleep 60 & echo $! > {tmp_path}/child; wait"))
    child = int(_wait_file(tmp_path / "child"))
    leader = int(sid.split(":")[0])
    assert os.getpgid(child) == leader and os.getsid(leader) == leader
    assert driver.poll([sid])[sid].state is SchedulerState.RUNNING
    driver.cancel([sid])
    assert driver.poll([sid])[sid].state is SchedulerState.CANCELLED
    assert _dies(child) and _dies(leader)


def test_time_limit_kills_the_group_and_reports_timeout(tmp_path):
    driver = LocalDriver({"time-limit": 1}, tmp_path)
    sid = driver.submit(_spec(tmp_path, f"sleep 60 & echo $! > {tmp_path}/child; wait"))
    child = int(_wait_file(tmp_path / "child"))
    status = _wait_end(driver, sid)
    assert status.state is SchedulerState.TIMEOUT and "time limit of 1 s" in status.reason
    assert _dies(child)


def test_restarted_driver_adopts_by_pid_and_start_time(tmp_path):
    first = LocalDriver({}, tmp_path)
    sid = first.submit(_spec(tmp_path, f"sleep 1.5"))
    restarted = LocalDriver({}, tmp_path)  # knows nothing but the id string
    assert restarted.poll([sid])[sid].state is SchedulerState.RUNNING
    pid, start = sid.split(":")
    recycled = f"{pid}:{int(start) - 1}"  # same pid, another process start: not our job
    assert restarted.poll([recycled])[recycled].state is SchedulerState.UNKNOWN
    impostor = f"{os.getpid()}:1"
    assert restarted.poll([impostor])[impostor].state is SchedulerState.UNKNOWN
    first.poll([sid])  # reap the child once it exits, as the old daemon's parent would
    status = _wait_end(restarted, sid)
    assert status.state is SchedulerState.UNKNOWN and status.exit_code is None
    _wait_end(first, sid)


def test_adopted_job_still_gets_its_time_limit(tmp_path):
    first = LocalDriver({}, tmp_path)
    sid = first.submit(_spec(tmp_path, "sleep 60"))
    restarted = LocalDriver({"time-limit": 0.5}, tmp_path)
    time.sleep(0.6)
    assert restarted.poll([sid])[sid].state is SchedulerState.TIMEOUT
    assert first.poll([sid])[sid].state.finished  # the process really died


def test_unstartable_command_is_a_permanent_submit_error(tmp_path):
    from spearmint_nn.drivers.base import SubmitError

    spec = JobSpec(job_id=1, command=[str(tmp_path / "missing")], workdir=tmp_path, stdout=tmp_path / "o",
                   stderr=tmp_path / "e", script_path=tmp_path / "s", name="x")
    with pytest.raises(SubmitError) as info:
        LocalDriver({}, tmp_path).submit(spec)
    assert not info.value.transient


def test_a_job_gets_the_default_time_limit_and_null_means_none(tmp_path, monkeypatch):
    from spearmint_nn.drivers import local

    assert LocalDriver({}, tmp_path).time_limit == local.DEFAULT_TIME_LIMIT_S == 24 * 3600
    assert LocalDriver({"time-limit": None}, tmp_path).time_limit is None
    monkeypatch.setattr(LocalDriver, "default_time_limit", 0.5)  # the default's mechanism, made quick
    limited, unlimited = LocalDriver({}, tmp_path), LocalDriver({"time-limit": None}, tmp_path)
    hung = limited.submit(_spec(tmp_path, "sleep 60", 1))
    free = unlimited.submit(_spec(tmp_path, "sleep 60", 2))
    status = _wait_end(limited, hung)
    assert status.state is SchedulerState.TIMEOUT and "time limit of 0.5 s" in status.reason
    assert unlimited.poll([free])[free].state is SchedulerState.RUNNING
    unlimited.cancel([free])


def test_each_job_runs_on_the_devices_of_a_free_gpu_slot(tmp_path, monkeypatch):
    from spearmint_nn.drivers import local
    from spearmint_nn.drivers.base import SubmitError

    monkeypatch.setattr(local, "SLOT_WAIT_S", 0.2)

    driver = LocalDriver({"gpus": [0, "1,2"]}, tmp_path)
    script = f'echo "$CUDA_VISIBLE_DEVICES" > {tmp_path}/$JOB.devices; sleep 60'
    spec = lambda n: JobSpec(job_id=n, command=["bash", "-c", script], workdir=tmp_path, stdout=tmp_path / f"{n}.out",
                             stderr=tmp_path / f"{n}.err", script_path=tmp_path / f"{n}.sh", name=f"job-{n}",
                             env={"JOB": str(n)})
    first, second = driver.submit(spec(1)), driver.submit(spec(2))
    assert _wait_file(tmp_path / "1.devices") == "0\n" and _wait_file(tmp_path / "2.devices") == "1,2\n"
    assert first.endswith(":0") and second.endswith(":1,2")  # the job record keeps its devices
    assert not driver.has_room() and LocalDriver({}, tmp_path).has_room()  # the daemon keeps job 3 pending
    with pytest.raises(SubmitError, match="all 2 GPU slots of driver.gpus are taken") as info:
        driver.submit(spec(3))
    assert info.value.transient
    driver.cancel([first])
    assert driver.has_room()
    third = driver.submit(spec(3))  # the cancelled job's slot, free again
    assert _wait_file(tmp_path / "3.devices") == "0\n"

    restarted = LocalDriver({"gpus": [0, "1,2", 3]}, tmp_path)  # a new daemon, one GPU more
    assert {status.state for status in restarted.poll([second, third]).values()} == {SchedulerState.RUNNING}
    fourth = restarted.submit(spec(4))  # the adopted jobs keep 0 and 1,2
    assert _wait_file(tmp_path / "4.devices") == "3\n"
    driver.cancel([second, third])
    restarted.cancel([fourth])


@pytest.mark.parametrize("gpus,message", [
    (2, 'driver.gpus: must be a list of devices, one per job slot, such as [0, 1] or ["0,1", "2,3"] for two devices a job (got 2)'),
    ([0, "1, 2"], 'driver.gpus[1]: must be a device number such as 0, or devices such as "0,1" (got \'1, 2\')'),
    ([-1], 'driver.gpus[0]: must be a device number such as 0, or devices such as "0,1" (got -1)'),
])
def test_a_bad_gpus_option_names_its_entry(tmp_path, gpus, message):
    from spearmint_nn.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        LocalDriver({"gpus": gpus}, tmp_path)
    assert str(info.value) == message


def test_the_warning_waits_until_the_job_handles_it(tmp_path):
    """SIGUSR1's default action kills: a runner still starting up (not handling it yet) is not
    warned until it does, and then is, once."""
    script = ("import pathlib, signal, sys, time\n"
              "time.sleep(1.5)  # starting up: SIGUSR1 would kill it here\n"
              "signal.signal(signal.SIGUSR1, lambda *a: pathlib.Path('warned').open('a').write('w'))\n"
              "time.sleep(2.5)\n")
    spec = JobSpec(job_id=1, command=[sys.executable, "-c", script], workdir=tmp_path, stdout=tmp_path / "o",
                   stderr=tmp_path / "e", script_path=tmp_path / "s", name="w")
    driver = LocalDriver({"time-limit": 10}, tmp_path, warning=9.5)  # due 0.5 s after the start
    sid = driver.submit(spec)
    while not (status := driver.poll([sid])[sid]).state.finished:
        time.sleep(0.1)
    assert status.state is SchedulerState.COMPLETED, (tmp_path / "e").read_text()
    assert (tmp_path / "warned").read_text() == "w"
