"""The SLURM driver without a scheduler: parsing real squeue/sacct output, options, job scripts.

The fixtures were captured from a real Slurm 22.05 (tests/cluster/slurm-up.sh). Job ids:
2 exit 0, 3 ``exit 3``, 4 killed by ``--time=1``, 5 scancel while running, 6 scancel while held,
7 a script that SIGKILLs itself; in the *_active files 12 held, 13 running, 14 pending for resources.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from spearmint_nn.drivers.base import JobSpec, PollError, SchedulerState, SubmitError
from spearmint_nn.drivers.batch import CommandResult, clock, render_job_script
from spearmint_nn.drivers.slurm import SlurmDriver, parse_sacct, parse_squeue, slurm_status
from spearmint_nn.errors import ConfigError

from helpers.scheduler_output import FIXTURES, fake_bin, fake_client, read_fixture

S = SchedulerState


def test_squeue_finished_jobs_map_to_final_states_with_exit_codes():
    got = parse_squeue(read_fixture("squeue_finished.txt"))
    assert {k: (v.state, v.exit_code) for k, v in got.items()} == {
        "2": (S.COMPLETED, 0), "3": (S.FAILED, 3), "4": (S.TIMEOUT, 128 + 15),
        "5": (S.CANCELLED, 128 + 15), "6": (S.CANCELLED, 0), "7": (S.FAILED, 128 + 9)}
    assert "NonZeroExitCode" in got["3"].reason and "exit code 3" in got["3"].reason
    assert "TimeLimit" in got["4"].reason
    assert "signal 9" in got["7"].reason
    assert got["2"].reason == ""
    # ended on their own (a result may still show on a shared filesystem) or killed (none can come)
    assert {k: v.killed for k, v in got.items()} == {"2": False, "3": False, "4": True, "5": True, "6": True,
                                                     "7": True}


def test_sacct_finished_jobs_agree_with_squeue():
    got = parse_sacct(read_fixture("sacct_finished.txt"))
    assert {k: v.state for k, v in got.items()} == {
        "2": S.COMPLETED, "3": S.FAILED, "4": S.TIMEOUT, "5": S.CANCELLED, "6": S.CANCELLED, "7": S.FAILED}
    assert got["3"].exit_code == 3 and got["7"].exit_code == 128 + 9
    assert "CANCELLED" in got["5"].reason


def test_active_jobs_are_queued_or_running_with_the_pending_reason():
    got = parse_squeue(read_fixture("squeue_active.txt"))
    assert {k: v.state for k, v in got.items()} == {"12": S.QUEUED, "13": S.RUNNING, "14": S.QUEUED}
    assert "JobHeldUser" in got["12"].reason and "Resources" in got["14"].reason
    assert not any(v.state.finished for v in got.values())
    # sacct lags behind the controller: right after submission it knew only one of three jobs
    assert {k: v.state for k, v in parse_sacct(read_fixture("sacct_active.txt")).items()} == {"13": S.QUEUED}


@pytest.mark.parametrize("state, expected", [
    ("OUT_OF_MEMORY", S.OUT_OF_MEMORY), ("NODE_FAIL", S.NODE_FAIL), ("BOOT_FAIL", S.NODE_FAIL),
    ("DEADLINE", S.TIMEOUT), ("PREEMPTED", S.PREEMPTED), ("COMPLETING", S.RUNNING),
    ("CONFIGURING", S.QUEUED), ("REQUEUED", S.QUEUED), ("SUSPENDED", S.RUNNING),
    ("SOMETHING_NEW", S.RUNNING), ("CANCELLED by 1000", S.CANCELLED)])
def test_states_not_in_the_fixtures(state, expected):
    assert slurm_status(state, "None", 0, 0).state is expected


def test_invalid_id_message_is_what_query_accepts_as_no_jobs():
    # the driver treats this stderr (rc 1) as "none of these ids is known to squeue"
    assert "invalid job id" in read_fixture("squeue_invalid_id.stderr").lower()


def test_parse_submit_reads_parsable_output_and_rejects_anything_else(tmp_path):
    driver = SlurmDriver({}, tmp_path)
    assert driver.parse_submit(CommandResult(("sbatch",), 0, "123\n", "")) == "123"
    assert driver.parse_submit(CommandResult(("sbatch",), 0, "77;cluster2\n", "")) == "77"
    with pytest.raises(SubmitError) as err:
        driver.parse_submit(CommandResult(("sbatch",), 0, "Submitted batch job 5\n", "odd"))
    assert not err.value.transient


# ---- options -------------------------------------------------------------------------------

def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        SlurmDriver.validate_options({"partiton": "gpu"})
    message = str(err.value)
    assert message.startswith("driver.partiton:") and "did you mean 'partition'" in message
    for key in ("account", "qos", "time-limit", "memory", "cpus", "gpus", "setup", "extra-args", "name-prefix"):
        assert key in message


@pytest.mark.parametrize("options, key", [
    ({"memory": "4 GB"}, "driver.memory"), ({"memory": 0}, "driver.memory"), ({"cpus": 0}, "driver.cpus"),
    ({"cpus": True}, "driver.cpus"), ({"gpus": -1}, "driver.gpus"), ({"gpus": "a100:two"}, "driver.gpus"),
    ({"setup": "module load x"}, "driver.setup"), ({"setup": ["ok", "two\nlines"]}, "driver.setup[1]"),
    ({"extra-args": "--exclusive"}, "driver.extra-args"), ({"name-prefix": "a b"}, "driver.name-prefix"),
    ({"partition": ""}, "driver.partition"), ({"time-limit": "1:xx"}, "driver.time-limit")])
def test_bad_values_are_config_errors_naming_the_key(options, key):
    with pytest.raises(ConfigError) as err:
        SlurmDriver.validate_options(options)
    assert err.value.path == key


def spec_for(tmp_path: Path, **kw) -> JobSpec:
    fields = dict(job_id=7, command=["/usr/bin/python3", "-m", "spearmint_nn.runner", str(tmp_path / "exp"), "7"],
                  workdir=tmp_path / "exp", stdout=tmp_path / "exp/out/000007.out",
                  stderr=tmp_path / "exp/out/000007.err", script_path=tmp_path / "exp/scripts/000007.sh",
                  name="branin-7", wall_time=None)
    fields.update(kw)
    return JobSpec(**fields)


def test_submit_argv_carries_every_option_as_separate_words(tmp_path):
    driver = SlurmDriver({"partition": "gpu", "account": "proj-1", "qos": "long", "time-limit": "1-02:03:04",
                          "memory": 4096, "cpus": 4, "gpus": "a100:2", "extra-args": ["--exclusive"],
                          "name-prefix": "sm-"}, tmp_path)
    spec = spec_for(tmp_path, stdout=tmp_path / "100%/o.out")
    argv = driver.submit_argv(spec, driver.job_name(spec), driver.time_limit)
    # requeued jobs run again as further attempts, each adding to the output (see SlurmDriver.submit_head)
    assert argv[:4] == ["sbatch", "--parsable", "--requeue", "--open-mode=append"]
    pairs = dict(zip(argv[4:-2:2], argv[5:-2:2]))
    assert pairs == {"--job-name": "sm-branin-7", "--chdir": str(tmp_path / "exp"),
                     "--output": str(tmp_path / "100%%/o.out"), "--error": str(spec.stderr),
                     "--partition": "gpu", "--account": "proj-1", "--qos": "long", "--time": "1-02:03:04",
                     "--mem": "4096M", "--cpus-per-task": "4", "--gres": "gpu:a100:2"}
    assert argv[-2:] == ["--exclusive", str(spec.script_path)]


def test_clock_rounds_up_to_whole_seconds():
    assert clock(0.2) == "00:00:01"
    assert clock(3600) == "01:00:00"
    assert clock(86400 + 61) == "1-00:01:01"


def test_job_script_quotes_everything_but_the_setup_lines(tmp_path):
    """Run the rendered script with bash: hostile words arrive intact, setup lines run as shell."""
    exp = tmp_path / "it's $HOME `x`"
    exp.mkdir()
    spec = spec_for(tmp_path, workdir=exp, env={"WEIRD": "a'b\"c $(touch pwned)"},
                    command=["/bin/sh", "-c", 'printf "%s|" "$0" "$1" "$WEIRD" "$SETUP" "$(pwd)"',
                             "arg with space", "$(touch pwned2);"])
    text = render_job_script(spec, ["export SETUP=from-setup"], ["sbatch", "--job-name", "x\ny"])
    assert "\nx\ny" not in text  # a control character in the shown command cannot leave the comment
    script = tmp_path / "job.sh"
    script.write_text(text)
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"arg with space|$(touch pwned2);|a'b\"c $(touch pwned)|from-setup|{exp}|"
    assert not list(tmp_path.rglob("pwned*"))


def test_a_failing_setup_line_stops_the_job(tmp_path):
    spec = spec_for(tmp_path, workdir=tmp_path, command=["/bin/echo", "ran"])
    script = tmp_path / "job.sh"
    script.write_text(render_job_script(spec, ["false", "echo after"], ["sbatch"]))
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert out.returncode != 0 and "ran" not in out.stdout and "after" not in out.stdout


def test_env_names_that_are_not_shell_names_are_refused(tmp_path):
    with pytest.raises(SubmitError):
        render_job_script(spec_for(tmp_path, env={"A;rm -rf /": "x"}), [], ["sbatch"])


# ---- commands, retries, backoff (real processes standing in for the scheduler's client) ------

@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    return fake_bin(tmp_path, monkeypatch)


def test_a_transient_submit_failure_is_raised_at_once_for_the_daemon_to_retry(tmp_path, fake_path):
    counter = tmp_path / "calls"
    fake_client(fake_path, "sbatch", f"""echo x >> {counter}
if [ $(wc -l < {counter}) -lt 2 ]; then echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation" >&2; exit 1; fi
echo 4242\n""")
    driver = SlurmDriver({}, tmp_path)
    spec = spec_for(tmp_path)
    start = time.monotonic()
    with pytest.raises(SubmitError, match="Socket timed out") as err:
        driver.submit(spec)
    assert err.value.transient and time.monotonic() - start < 5  # one try, no sleeping on the daemon's thread
    assert driver.submit(spec) == "4242"  # the daemon's later retry
    assert len(counter.read_text().split()) == 2
    assert spec.script_path.read_text().startswith("#!/bin/bash")


def test_a_daemon_running_as_a_slurm_job_keeps_its_own_restart_count_from_its_jobs(tmp_path, fake_path, monkeypatch):
    # sbatch hands its environment to the job, and SLURM keeps an inherited SLURM_RESTART_COUNT
    # in a job's first run: the daemon's own count would make a requeued job's attempt look old.
    seen = tmp_path / "sbatch-env"
    fake_client(fake_path, "sbatch", f"env > {seen}\necho 4243\n")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    monkeypatch.setenv("SPEARMINT_TEST_MARK", "kept")
    assert SlurmDriver({}, tmp_path).submit(spec_for(tmp_path)) == "4243"
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert "SLURM_RESTART_COUNT" not in env and env["SPEARMINT_TEST_MARK"] == "kept"
    monkeypatch.delenv("SLURM_RESTART_COUNT")
    assert SlurmDriver({}, tmp_path).submit_environment() is None  # no copy made when nothing is to drop


def test_persistent_submit_failure_is_not_transient_and_keeps_the_message(tmp_path, fake_path):
    fake_client(fake_path, "sbatch", 'echo "sbatch: error: Batch job submission failed: Invalid account or '
                                     'account/partition combination specified" >&2; exit 1\n')
    with pytest.raises(SubmitError) as err:
        SlurmDriver({"account": "nope"}, tmp_path).submit(spec_for(tmp_path))
    assert not err.value.transient and "Invalid account" in str(err.value)


def test_missing_client_is_a_clear_permanent_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SubmitError) as err:
        SlurmDriver({}, tmp_path).submit(spec_for(tmp_path))
    assert "sbatch: command not found" in str(err.value) and not err.value.transient


def test_poll_uses_one_squeue_call_and_sacct_only_for_forgotten_jobs(tmp_path, fake_path):
    log = tmp_path / "calls"
    fake_client(fake_path, "squeue", f'echo "squeue $*" >> {log}\ncat {FIXTURES}/squeue_active.txt\n')
    fake_client(fake_path, "sacct", f'echo "sacct $*" >> {log}\necho "99|COMPLETED|0:0"\n')
    got = SlurmDriver({}, tmp_path).poll(["12", "13", "99", "98"])
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and "-j 12,13,99,98" in calls[0] and "-j 99,98" in calls[1]
    assert got["13"].state is S.RUNNING and got["99"].state is S.COMPLETED and got["98"].state is S.UNKNOWN


def test_controller_down_gives_poll_error_then_backs_off(tmp_path, fake_path):
    log = tmp_path / "calls"
    fake_client(fake_path, "squeue", f'echo x >> {log}\n'
                'echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2; exit 1\n')
    driver = SlurmDriver({}, tmp_path)
    with pytest.raises(PollError, match="Unable to contact slurm controller"):
        driver.poll(["1"])
    assert len(log.read_text().split()) == 1  # one try: the next poll asks again
    with pytest.raises(PollError, match="next try in"):
        driver.poll(["1"])  # inside the back-off pause: the controller is not asked
    assert len(log.read_text().split()) == 1


def test_final_states_are_remembered_and_not_asked_again(tmp_path, fake_path):
    log = tmp_path / "calls"
    fake_client(fake_path, "squeue", f'echo x >> {log}\ncat {FIXTURES}/squeue_finished.txt\n')
    driver = SlurmDriver({}, tmp_path)
    first = driver.poll(["2", "3"])
    fake_client(fake_path, "squeue", f'echo x >> {log}\nexit 1\n')
    assert driver.poll(["2", "3"]) == first
    assert len(log.read_text().split()) == 1


def test_cancel_of_finished_jobs_is_quiet_but_other_failures_are_logged(tmp_path, fake_path, caplog):
    fake_client(fake_path, "scancel", 'echo "scancel: error: Kill job error on job id 5: '
                                      'Job/step already completing or completed" >&2; exit 1\n')
    SlurmDriver({}, tmp_path).cancel(["5"])
    assert not caplog.records
    fake_client(fake_path, "scancel", 'echo "scancel: error: Access/permission denied" >&2; exit 1\n')
    SlurmDriver({}, tmp_path).cancel(["6"])  # logged, never raised: the daemon goes on
    assert "permission denied" in caplog.text


def test_a_claim_gives_back_the_slurm_job_id(tmp_path):
    # the runner records the scheduler's id variables in its claim; a restarted daemon adopts by it
    driver = SlurmDriver({}, tmp_path)
    assert driver.adopt_claim({"scheduler_ids": {"SLURM_JOB_ID": "812", "JOB_ID": "3"}}) == "812"
    assert driver.adopt_claim({"scheduler_ids": {}}) is None


# ---- job arrays ----------------------------------------------------------------------------------
# squeue_array.txt / sacct_array.txt: array 366 of 4 tasks, one at a time (%1), task 1 exit 3,
# captured while task 2 ran and task 3 waited (squeue -r, JobArrayID).

def test_array_tasks_are_named_array_underscore_index_by_squeue_and_sacct():
    got = parse_squeue(read_fixture("squeue_array.txt"))
    assert {k: v.state for k, v in got.items()} == {
        "366_0": S.COMPLETED, "366_1": S.FAILED, "366_2": S.RUNNING, "366_3": S.QUEUED}
    assert got["366_1"].exit_code == 3 and "JobArrayTaskLimit" in got["366_3"].reason
    done = parse_sacct(read_fixture("sacct_array.txt"))
    assert {k: (v.state, v.exit_code) for k, v in done.items()} == {"366_0": (S.COMPLETED, 0), "366_1": (S.FAILED, 3)}


def test_array_argv_ids_and_claims(tmp_path):
    driver = SlurmDriver({}, tmp_path)
    assert driver.array_argv(12, 4) == ["--array=0-11%4"]
    assert driver.task_id("366", 3) == "366_3"
    assert driver.parse_submit(CommandResult(("sbatch",), 0, "366\n", "")) == "366"  # an array's id
    # squeue -r lists each task on a line of its own: the task asked for, or no other
    assert driver.found_task("366_3", 3) == "366_3" and driver.found_task("366_2", 3) is None
    # a task's claim names the array and the index (its SLURM_JOB_ID is the task's own number)
    claim = {"scheduler_ids": {"SLURM_JOB_ID": "370", "SLURM_ARRAY_JOB_ID": "366", "SLURM_ARRAY_TASK_ID": "3"}}
    assert driver.adopt_claim(claim) == "366_3"
    assert driver.adopt_claim({"scheduler_ids": {"SLURM_JOB_ID": "370"}}) == "370"
    assert driver.path_word(Path("/a%b/x.out")) == "/a%%b/x.out"


def test_array_size_option():
    assert SlurmDriver({"array-size": 1}, Path("/tmp")).max_batch == 1
    assert SlurmDriver({}, Path("/tmp")).max_batch == 1000
    with pytest.raises(ConfigError) as err:
        SlurmDriver.validate_options({"array-size": 0})
    assert err.value.path == "driver.array-size"


def test_jobs_submitted_together_are_one_sbatch_whose_script_runs_each_tasks_job(tmp_path, fake_path):
    calls = tmp_path / "calls"
    fake_client(fake_path, "sbatch", f'printf "%s\\n" "$@" > {calls}\necho 366\n')
    state = tmp_path / "exp" / ".spearmint"
    specs = [spec_for(tmp_path, job_id=i, command=["echo", f"job {i}", "it's"], workdir=tmp_path,
                      stdout=state / "output" / f"{i:06d}.out", stderr=state / "output" / f"{i:06d}.err",
                      script_path=state / "scripts" / f"{i:06d}.sh", name=f"e-{i}") for i in (5, 6, 8)]
    driver = SlurmDriver({"name-prefix": "p-", "setup": ["echo setup"]}, state, max_concurrent=2)
    assert driver.submit_many(specs) == ["366_0", "366_1", "366_2"]
    argv = calls.read_text().splitlines()
    assert "--array=0-2%2" in argv and argv[argv.index("--job-name") + 1] == "p-e-5-array"
    assert argv[argv.index("--output") + 1] == str(state / "output" / "array-000005-%a.out")
    assert argv[-1] == str(state / "scripts" / "array-000005.sh")
    # each job's script is a link to the array's, each task's output a link to its job's
    assert all(spec.script_path.resolve() == state / "scripts" / "array-000005.sh" for spec in specs)
    assert (state / "output" / "array-000005-2.err").resolve() == state / "output" / "000008.err"
    for task, job in ((0, 5), (2, 8)):
        done = subprocess.run(["bash", str(specs[0].script_path)], env={"SLURM_ARRAY_TASK_ID": str(task), "PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True, timeout=30)
        assert done.stdout == f"setup\njob {job} it's\n"
    stray = subprocess.run(["bash", str(specs[0].script_path)], env={"SLURM_ARRAY_TASK_ID": "7", "PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True, timeout=30)
    assert stray.returncode == 1 and "no job for array task 7" in stray.stderr
    # a second array from the same first job (its first submission failed) gets files and a name
    # of its own: a job of the first array is never taken for the second's task of its index
    assert driver.submit_many(specs[:2]) == ["366_0", "366_1"]
    assert specs[0].script_path.resolve() == state / "scripts" / "array-000005.2.sh"
    assert (state / "scripts" / "array-000005.sh").exists()
    argv = calls.read_text().splitlines()
    assert argv[argv.index("--job-name") + 1] == "p-e-5-array2"
    assert driver._array_task(specs[2]) == ("p-e-5-array", 2)


def test_a_job_last_submitted_in_an_array_is_found_as_its_task(tmp_path, fake_path):
    log = tmp_path / "calls"
    fake_client(fake_path, "sbatch", "echo 366\n")
    state = tmp_path / ".spearmint"
    specs = [spec_for(tmp_path, job_id=i, stdout=state / "output" / f"{i}.out", stderr=state / "output" / f"{i}.err",
                      script_path=state / "scripts" / f"{i:06d}.sh", name=f"e-{i}") for i in (1, 2)]
    driver = SlurmDriver({}, state)
    driver.submit_many(specs)
    fake_client(fake_path, "squeue", f'echo "squeue $*" >> {log}\n'
                f'printf "366_0|/elsewhere\\n366_0|{tmp_path}/exp\\n366_1|{tmp_path}/exp\\n"\n')
    assert [driver.find_submitted(spec) for spec in specs] == ["366_0", "366_1"]
    assert log.read_text().splitlines()[0] == "squeue -h -r --name e-1-array -o %i|%Z"
    fake_client(fake_path, "squeue", f'printf "366_1|{tmp_path}/exp\\n"\n')  # task 0 ended
    assert [driver.find_submitted(spec) for spec in specs] == [None, "366_1"]


def test_a_failed_array_submission_is_each_of_its_jobs_failure(tmp_path, fake_path):
    fake_client(fake_path, "sbatch", 'echo "sbatch: error: Batch job submission failed: Socket timed out on '
                                     'send/recv operation" >&2; exit 1\n')
    state = tmp_path / ".spearmint"
    specs = [spec_for(tmp_path, job_id=i, script_path=state / "scripts" / f"{i}.sh") for i in (1, 2, 3)]
    answers = SlurmDriver({}, state).submit_many(specs)
    assert len(answers) == 3 and all(isinstance(a, SubmitError) and a.transient for a in answers)
    assert SlurmDriver({"array-size": 1}, state).max_batch == 1  # sites without arrays: one sbatch per job
