"""End-to-end runs of ``spearmint-nn run`` as a real process on real experiment folders."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import signal
import socket
import time
from pathlib import Path

import pytest

from helpers.experiments import all_jobs, cli, quick_config, start_daemon
from helpers.invariant_checks import assert_folder_ok

BRANIN_MIN = 0.397887


def _state_files(folder: Path, state: str) -> list[Path]:
    return sorted((folder / ".spearmint" / "jobs" / state).glob("*.json"))


def _wait_for(predicate, timeout=120.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_branin_two_concurrent_jobs_to_twenty(make_experiment):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 20, "max-concurrent": 2}))
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    state = folder / ".spearmint"
    jobs = all_jobs(folder)
    assert sorted(jobs) == list(range(1, 21))
    assert {s for s, _ in jobs.values()} == {"complete"}
    for job_id, (_, job) in jobs.items():
        stem = f"{job_id:06d}"
        assert json.loads((state / "inputs" / f"{stem}.json").read_text()) == job["params"]
        outcome = json.loads((state / "results" / f"{stem}.json").read_text())
        assert outcome["status"] == "ok" and outcome["values"] == job["values"] == {"main": job["value"]}
        assert (state / "output" / f"{stem}.out").exists() and (state / "output" / f"{stem}.err").exists()
        assert job["source"] == "optimizer" and job["driver"] == "local" and job["scheduler_id"]
        assert job["created"] <= job["submitted"] <= job["finished"]
        assert job["search_start"] == 0
        assert job["chosen_by"] == "sobol"  # the config's model: Sobol points
    # never more than max-concurrent jobs between submission and recording
    events = sorted([(j["submitted"], 1) for _, j in jobs.values()] + [(j["finished"], -1) for _, j in jobs.values()])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert peak == 2
    with open(state / "results.csv") as handle:
        table = list(csv.DictReader(handle))
    assert [int(r["id"]) for r in table] == sorted(jobs)
    for row in table:
        job = jobs[int(row["id"])][1]
        assert float(row["value"]) == job["value"] and float(row["x"]) == job["params"]["x"][0]
        assert float(row["y"]) == job["params"]["y"][0] and row["state"] == "complete"
    best_value = min(j["value"] for _, j in jobs.values())
    best = json.loads((state / "best.json").read_text())
    assert best["value"] == best_value and best["value"] > BRANIN_MIN
    assert float(table[-1]["best_so_far"]) == best_value
    log = (state / "daemon.log").read_text()
    assert log.count(" proposed ") == 20 and log.count(" submitted ") == 20 and log.count(" finished ") == 20
    assert "stopped   budget reached: 20 finished" in log
    assert not any(ch in log for ch in "\r\x1b")
    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["counts"] == {"pending": 0, "running": 0, "complete": 20, "failed": 0, "stopped": 0}
    assert status["best"]["id"] == best["id"] and status["best"]["params"] == best["params"]
    assert status["daemon"]["running"] is False and status["finished"] == 20
    report = list(csv.reader(io.StringIO(cli("report", folder).stdout)))
    assert len(report) == 21 and report[0][:4] == ["id", "state", "source", "value"]
    human = cli("status", folder).stdout
    assert f"(job {best['id']})" in human and "20 complete" in human


@pytest.mark.slow
def test_a_fast_optimizer_fills_every_free_slot_in_one_proposal(make_experiment):
    # The first proposal asks for 10 (the pace is not known yet); Sobol takes far less than 5 s
    # for 30 points, so the next asks for every free slot at once instead of 10 at a time.
    folder = make_experiment(quick_config(**{"max-finished-jobs": 40, "max-concurrent": 40}))
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    sizes = [int(line.split("suggested ")[1].split()[0])
             for line in (folder / ".spearmint" / "daemon.log").read_text().splitlines() if " suggested " in line]
    assert sizes == [10, 30]
    assert len(all_jobs(folder)) == 40


# Job 1 is short, so the two slots' completions alternate (about 0.4 s apart) instead of
# arriving together, when only one of them could find a point ready.
STAGGERED_WRAPPER = """
import time

def main(job_id, params):
    time.sleep(0.4 if job_id == 1 else 0.8)
    return float(params["x"][0] ** 2 + params["y"][0])
"""


def test_a_point_kept_ready_refills_a_slot_without_waiting_for_the_model(make_experiment):
    # Without a ready point a completion is followed by a proposal ("suggested") and only then
    # by the next submission; with one, the next job is submitted first and the proposal that
    # refills the ready point runs while it does. The budget bounds the ready point too.
    folder = make_experiment(quick_config(**{"max-finished-jobs": 8, "max-concurrent": 2}),
                             {"wrapper.py": STAGGERED_WRAPPER})
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    assert sorted(all_jobs(folder)) == list(range(1, 9))
    lines = (folder / ".spearmint" / "daemon.log").read_text().splitlines()
    assert sum(" proposed " in line for line in lines) == 8
    refills = []
    for i, line in enumerate(lines):
        if " finished " not in line:
            continue
        later = lines[i + 1:]
        submitted = next((k for k, other in enumerate(later) if " submitted " in other), None)
        model = next((k for k, other in enumerate(later) if " suggested " in other), len(later))
        if submitted is not None:
            refills.append(submitted < model)
    assert len(refills) == 6  # jobs 3..8 each took a freed slot
    assert sum(refills) >= 4, lines  # (a completion landing during a proposal may find none ready)
    assert_folder_ok(folder)


SLOW_COUNTING_WRAPPER = """
import math
import time

def main(job_id, params):
    with open("runs.txt", "a") as handle:
        handle.write(f"{job_id}\\n")
    time.sleep(0.4)
    return float(params["x"][0] ** 2 + params["y"][0])
"""


def test_sigkill_mid_run_then_restart_loses_nothing_and_runs_nothing_twice(make_experiment):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 12, "max-concurrent": 3}),
                             {"wrapper.py": SLOW_COUNTING_WRAPPER})
    daemon = start_daemon(folder)

    def still_running() -> list[Path]:
        # A state change writes the new file before removing the old one, so a job caught in
        # between has both; the store resolves that as finished (the later state wins).
        finished = {p.name for state in ("complete", "failed") for p in _state_files(folder, state)}
        return [p for p in _state_files(folder, "running") if p.name not in finished]

    try:
        _wait_for(lambda: len(_state_files(folder, "complete")) >= 4 and still_running(),
                  what="4 complete jobs and one running")
    finally:
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
    left_running = [json.loads(p.read_text()) for p in still_running()]
    assert left_running
    restarted = cli("run", folder, timeout=600)  # the killed daemon's lock must not block this
    assert restarted.returncode == 0, restarted.stderr
    jobs = all_jobs(folder)
    # Ids are unique but may have a gap: a kill between handing out an id (persisted first, so
    # it is never reused) and writing the job's file leaves that id unused.
    assert_folder_ok(folder, folder / "runs.txt")
    assert [s for s, _ in jobs.values()].count("complete") == 12 and len(jobs) == 12
    runs = [int(line) for line in (folder / "runs.txt").read_text().split()]
    assert sorted(runs) == sorted(jobs)  # every job ran, and exactly once
    log = (folder / ".spearmint" / "daemon.log").read_text()
    for job in left_running:  # adopted, not resubmitted
        if job["scheduler_id"] is None:
            continue  # killed inside its submission: adopted by its claim or run once (checked above)
        assert jobs[job["id"]][1]["scheduler_id"] == job["scheduler_id"]
        assert f"adopted   job {job['id']} running as local {job['scheduler_id']}" in log


@contextlib.contextmanager
def _two_sleeping_jobs(make_experiment, budget: int, *daemon_args: str, stop_with: signal.Signals):
    """A daemon running two 60 s jobs of ``budget``; yields (folder, daemon process). After the
    block the daemon gets ``stop_with`` and must exit 0; it is killed if the block fails."""
    folder = make_experiment(quick_config(**{"max-finished-jobs": budget, "max-concurrent": 2}),
                             {"wrapper.py": "import time\ndef main(job_id, params):\n    time.sleep(60)\n    return 1.0\n"})
    daemon = start_daemon(folder, *daemon_args)
    try:
        _wait_for(lambda: len(_state_files(folder, "running")) == 2, what="2 running jobs")
        yield folder, daemon
        daemon.send_signal(stop_with)
        assert daemon.wait(timeout=60) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()


@pytest.mark.slow
def test_second_daemon_refused_sigterm_leaves_jobs_and_cancel_kills_them(make_experiment):
    with _two_sleeping_jobs(make_experiment, 4, stop_with=signal.SIGTERM) as (folder, daemon):
        second = cli("run", folder)
        assert second.returncode == 1
        assert f"on host {socket.gethostname()} pid {daemon.pid}" in second.stderr
    jobs = all_jobs(folder)
    running = [j for s, j in jobs.values() if s == "running"]
    assert len(running) == 2 and all(_alive(int(j["scheduler_id"].split(":")[0])) for j in running)
    status = json.loads(cli("status", folder, "--json").stdout)
    assert status["daemon"]["running"] is False and status["counts"]["running"] == 2
    assert [r["id"] for r in status["running"]] == [j["id"] for j in running]
    cancelled = cli("cancel", folder)
    assert cancelled.returncode == 0 and "cancelled 2 job(s)" in cancelled.stdout
    jobs = all_jobs(folder)
    assert [(s, j["failure"]) for s, j in jobs.values()] == [("failed", "cancelled")] * 2
    _wait_for(lambda: not any(_alive(int(j["scheduler_id"].split(":")[0])) for j in running),
              timeout=10, what="cancelled jobs to die")
    assert "received SIGTERM" in (folder / ".spearmint" / "daemon.log").read_text()


def test_cancel_through_a_running_daemon_and_cancel_on_exit(make_experiment):
    with _two_sleeping_jobs(make_experiment, 6, "--cancel-on-exit", stop_with=signal.SIGINT) as (folder, _):
        asked = cli("cancel", folder, "1")
        assert asked.returncode == 0 and asked.stdout.startswith("asked the daemon to cancel jobs 1")
        _wait_for(lambda: (folder / ".spearmint" / "jobs" / "failed" / "000001.json").exists(), what="job 1 cancelled")
        # job 1's running file goes a moment after its failed one is written (the store writes the
        # new state's file first), so it is not counted among the running
        _wait_for(lambda: len([p for p in _state_files(folder, "running") if p.name != "000001.json"]) == 2,
                  what="a replacement job")
    jobs = all_jobs(folder)
    assert [(s, j.get("failure")) for s, j in jobs.values()] == [("failed", "cancelled")] * 3
    assert jobs[1][1]["reason"] == "cancelled by the user"
    assert jobs[3][1]["reason"] == "cancelled at daemon exit (--cancel-on-exit)"
    _wait_for(lambda: not any(_alive(int(j["scheduler_id"].split(":")[0])) for _, j in jobs.values()),
              timeout=10, what="cancelled jobs to die")
    assert not list((folder / ".spearmint" / "requests").iterdir())


FAILING_WRAPPER = """
import math
import os
import sys
import time

def main(job_id, params):
    if job_id == 1:
        raise RuntimeError("wrapper bug")
    if job_id == 2:
        return math.nan
    if job_id == 3:
        return "0.5"
    if job_id == 4:
        return {"loss": 1.0}
    if job_id == 5:
        sys.stdout.buffer.write(b"\\x00\\xff garbage \\x1b[31m\\n")
        sys.stderr.write("more garbage\\n")
    if job_id == 6:
        os._exit(3)
    if job_id == 7:
        time.sleep(60)
    return float(params["x"][0])
"""


@pytest.mark.slow
def test_failing_wrappers_fail_their_job_and_the_daemon_goes_on(make_experiment):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 9, "max-concurrent": 2,
                                             "driver": {"name": "local", "time-limit": 3}}),
                             {"wrapper.py": FAILING_WRAPPER})
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    outcome = {i: (j.get("failure") or s) for i, (s, j) in jobs.items()}
    assert outcome == {1: "exception", 2: "nan", 3: "bad_result", 4: "bad_result", 5: "complete",
                       6: "exit_code", 7: "timeout", 8: "complete", 9: "complete"}
    assert jobs[1][1]["reason"] == "RuntimeError: wrapper bug" and "wrapper bug" in jobs[1][1]["stderr_tail"]
    assert jobs[6][1]["reason"] == "no result file after the job ended (exit status 3)"
    assert "time limit of 3 s" in jobs[7][1]["reason"]
    log = (folder / ".spearmint" / "daemon.log").read_text()
    assert "failed    job 3 bad_result: returned str '0.5'" in log
    assert not any(ch in log for ch in "\x00\x1b")


def test_command_line_wrapper_through_the_daemon(make_experiment):
    script = """
        case "$SPEARMINT_JOB_ID" in
          1) echo "result: lots of \\x01 noise" ;;
          2) exit 3 ;;
          *) echo 2.5 ;;
        esac
        """
    folder = make_experiment({**quick_config(**{"max-finished-jobs": 3, "max-concurrent": 3}),
                              "language": "SHELL", "command": ["bash", "run.sh"], "main-file": None},
                             {"run.sh": script})
    result = cli("run", folder, timeout=300)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    assert [(j.get("failure"), j.get("value")) for _, j in jobs.values()] == [
        ("bad_result", None), ("exit_code", None), (None, 2.5)]


def test_user_points_imports_and_withdrawals(make_experiment, tmp_path):
    folder = make_experiment(quick_config(**{"max-finished-jobs": 4, "max-concurrent": 1}))
    (tmp_path / "done.json").write_text('{"x": [1.0], "y": [2.0]}')
    (tmp_path / "todo.json").write_text('{"x": [3.0], "y": [4.0]}')
    imported = cli("add", folder, tmp_path / "done.json", "7.5")
    assert imported.returncode == 0 and imported.stdout.strip() == "job 1: complete"
    queued = cli("add", folder, tmp_path / "todo.json")
    assert queued.stdout.strip() == "job 2: pending"
    refused = cli("add", folder, tmp_path / "todo.json", '"seven"')
    assert refused.returncode == 2 and "value: returned str 'seven'" in refused.stderr
    pending = folder / ".spearmint" / "jobs" / "pending"
    (pending / "typo.json").write_text('{"x": [3.0], "z": [4.0]}')
    result = cli("run", folder, timeout=300)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    assert jobs[1][1]["source"] == "import" and jobs[1][1]["value"] == 7.5
    assert jobs[2][0] == "complete" and jobs[2][1]["params"] == {"x": [3.0], "y": [4.0]}
    assert jobs[2][1]["value"] == pytest.approx(_branin(3.0, 4.0))
    assert jobs[3][1]["failure"] == "bad_params" and jobs[3][1]["reason"].startswith("params.z: unknown variable")
    complete = [i for i, (s, _) in jobs.items() if s == "complete"]
    assert len(complete) == 4 and len(jobs) == 5  # bad params are not counted against the budget
    # one job at a time: no point proposed ahead of the running job's result
    log = (folder / ".spearmint" / "daemon.log").read_text()
    proposals = [line for line in log.splitlines() if " suggested " in line]
    assert proposals and all(line.endswith("(0 pending)") for line in proposals), proposals


def _branin(x, y):
    return ((y - 5.1 / (4 * math.pi ** 2) * x ** 2 + 5 / math.pi * x - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10)


@pytest.mark.slow
def test_default_model_end_to_end(make_experiment):
    config = quick_config(**{"max-finished-jobs": 12, "max-concurrent": 2})
    del config["model"]
    folder = make_experiment(config)
    result = cli("run", folder, timeout=1200)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    assert [s for s, _ in jobs.values()].count("complete") == 12
    log = (folder / ".spearmint" / "daemon.log").read_text()
    assert "model refit" in log and "started   experiment exp" in log and "model auto" in log


CONDITIONAL_VARIABLES = {
    "layers": {"type": "INT", "min": 1, "max": 3},
    "kind": {"type": "ENUM", "options": ["add", "mul"]},
    "factors": {"type": "INT", "min": 1, "max": 8, "when": {"kind": "mul"}},
    "width_2": {"type": "FLOAT", "min": 1.0, "max": 100.0, "scale": "log", "when": {"layers": {">=": 2}}},
    "width_3": {"type": "FLOAT", "min": 1.0, "max": 100.0, "scale": "log", "when": {"layers": 3}},
    # a chain: active only when factors is, and then only for factors >= 4
    "factor_decay": {"type": "FLOAT", "min": 0.0, "max": 1.0, "when": {"factors": {">=": 4}}},
}

# The wrapper fails the job (an exception) if it gets an inactive variable or misses an active one.
CONDITIONAL_WRAPPER = '''
def main(job_id, params):
    expected = {"layers", "kind"}
    if params["kind"][0] == "mul":
        expected.add("factors")
        if params["factors"][0] >= 4:
            expected.add("factor_decay")
    if params["layers"][0] >= 2:
        expected.add("width_2")
    if params["layers"][0] == 3:
        expected.add("width_3")
    if set(params) != expected:
        raise ValueError(f"got {sorted(params)}, expected {sorted(expected)}")
    return float(params["layers"][0]) + (params["factors"][0] if "factors" in params else 0.0)
'''


def test_conditional_space_passes_only_active_variables_and_shows_inactive_as_empty(make_experiment):
    folder = make_experiment(quick_config(variables=CONDITIONAL_VARIABLES, **{"max-finished-jobs": 12}),
                             {"wrapper.py": CONDITIONAL_WRAPPER})
    result = cli("run", folder, timeout=600)
    assert result.returncode == 0, result.stderr
    jobs = all_jobs(folder)
    assert len(jobs) == 12 and {s for s, _ in jobs.values()} == {"complete"}  # no wrapper refused its params
    layer_counts = {job["params"]["layers"][0] for _, job in jobs.values()}
    kinds = {job["params"]["kind"][0] for _, job in jobs.values()}
    assert layer_counts == {1, 2, 3} and kinds == {"add", "mul"}  # every branch was exercised
    assert any("factor_decay" in job["params"] for _, job in jobs.values())
    with open(folder / ".spearmint" / "results.csv") as handle:
        table = {int(r["id"]): r for r in csv.DictReader(handle)}
    for job_id, (_, job) in jobs.items():
        row, params = table[job_id], job["params"]
        for name in ("factors", "factor_decay", "width_2", "width_3"):
            if name in params:
                assert float(row[name]) == params[name][0]
            else:
                assert row[name] == ""  # inactive: empty, not a value that never mattered
