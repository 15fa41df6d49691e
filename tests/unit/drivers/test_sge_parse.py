"""The Grid Engine driver without a scheduler: parsing real qstat -xml / qacct output, options.

The fixtures were captured from a real Grid Engine 8.1.9 (tests/cluster/sge-up.sh). Job ids in
qacct_cases.txt: 2 exit 0, 3 ``exit 3``, 4 killed by ``h_rt``, 5 qdel while running, 7 a script
that SIGKILLs itself, 8 an output folder that does not exist (``Eqw``, then deleted).
qstat_running.xml: 4 and 5 running, 8 ``Eqw``, 6 held (``hqw``); qstat_deleting.xml: 9 ``dr``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from spearmint_nn.drivers.base import JobSpec, SchedulerState, SubmitError
from spearmint_nn.drivers.batch import CommandResult
from spearmint_nn.drivers.sge import (SgeDriver, parse_error_reasons, parse_qacct, parse_qstat_xml,
                                      qacct_status, queue_status)
from spearmint_nn.errors import ConfigError

from helpers.scheduler_output import FIXTURES, fake_bin, fake_client, read_fixture

S = SchedulerState


def test_qstat_xml_lists_running_pending_and_error_jobs():
    states = parse_qstat_xml(read_fixture("qstat_running.xml"))
    assert states == {"4": "r", "5": "r", "8": "Eqw", "6": "hqw"}
    assert {k: queue_status(v).state for k, v in states.items()} == {
        "4": S.RUNNING, "5": S.RUNNING, "8": S.FAILED, "6": S.QUEUED}
    assert "Eqw" in queue_status("Eqw").reason


def test_qstat_xml_deleting_and_empty():
    states = parse_qstat_xml(read_fixture("qstat_deleting.xml"))
    assert states == {"9": "dr"} and queue_status("dr").state is S.RUNNING  # not final until it leaves
    assert parse_qstat_xml(read_fixture("qstat_empty.xml")) == {}


@pytest.mark.parametrize("letters, expected", [
    ("qw", S.QUEUED), ("hqw", S.QUEUED), ("hRwq", S.QUEUED), ("t", S.RUNNING), ("Rr", S.RUNNING),
    ("s", S.RUNNING), ("S", S.RUNNING), ("dt", S.RUNNING), ("Eqw", S.FAILED), ("hEqw", S.FAILED)])
def test_state_letters(letters, expected):
    assert queue_status(letters).state is expected


def test_qacct_records_map_to_final_states():
    records = parse_qacct(read_fixture("qacct_cases.txt"))
    assert sorted(records, key=int) == ["2", "3", "4", "5", "7", "8"]
    got = {k: qacct_status(r) for k, r in records.items()}
    assert {k: (v.state, v.exit_code) for k, v in got.items()} == {
        "2": (S.COMPLETED, 0), "3": (S.FAILED, 3), "4": (S.TIMEOUT, 137), "5": (S.CANCELLED, 137),
        "7": (S.CANCELLED, 137), "8": (S.FAILED, 0)}
    assert "h_rt" in got["4"].reason
    assert "qdel" in got["5"].reason and "signal 9" in got["5"].reason
    assert "opening input/output file" in got["8"].reason
    assert records["5"]["jobname"] == "run" and records["2"]["taskid"] == "undefined"


def test_qacct_unknown_and_qstat_j_messages_are_what_the_driver_looks_for():
    assert "not found" in read_fixture("qacct_unknown.txt")
    assert "do not exist" in read_fixture("qstat_j_unknown.txt")
    assert parse_error_reasons(read_fixture("qstat_j_error.txt")) == {
        "10": 'error: can\'t open output file "/nonexistent/x": No such file or directory'}


def test_parse_submit(tmp_path):
    driver = SgeDriver({}, tmp_path)
    assert driver.parse_submit(CommandResult(("qsub",), 0, "42\n", "")) == "42"
    assert driver.parse_submit(CommandResult(("qsub",), 0, "43.1-5:1\n", "")) == "43"
    with pytest.raises(SubmitError):
        driver.parse_submit(CommandResult(("qsub",), 0, 'Your job 5 ("x") has been submitted\n', ""))


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        SgeDriver.validate_options({"partition": "all.q"})
    assert err.value.path == "driver.partition"
    for key in ("queue", "project", "parallel-environment", "gpu-resource", "memory-resource", "setup"):
        assert key in str(err.value)


@pytest.mark.parametrize("options, key", [
    ({"gpus": "a100:2"}, "driver.gpus"), ({"parallel-environment": "smp 4"}, "driver.parallel-environment"),
    ({"memory": "lots"}, "driver.memory"), ({"queue": 3}, "driver.queue")])
def test_bad_values(options, key):
    with pytest.raises(ConfigError) as err:
        SgeDriver.validate_options(options)
    assert err.value.path == key


def spec_for(tmp_path: Path, **kw) -> JobSpec:
    fields = dict(job_id=3, command=["/usr/bin/python3", "-m", "spearmint_nn.runner", str(tmp_path), "3"],
                  workdir=tmp_path, stdout=tmp_path / "o/3.out", stderr=tmp_path / "o/3.err",
                  script_path=tmp_path / "s/3.sh", name="2d-3", wall_time=90.0)
    fields.update(kw)
    return JobSpec(**fields)


def test_submit_argv(tmp_path):
    driver = SgeDriver({"queue": "gpu.q", "account": "acc", "project": "p1", "memory": "2G", "cpus": 4,
                        "gpus": 1, "parallel-environment": "mpi", "memory-resource": "mem_free",
                        "extra-args": ["-l", "arch=lx-amd64"]}, tmp_path)
    spec = spec_for(tmp_path)
    name = driver.job_name(spec)
    assert name == "j2d-3"  # qsub refuses names that start with a digit
    argv = driver.submit_argv(spec, name, spec.wall_time)
    assert argv[:2] == ["qsub", "-terse"] and argv[-1] == str(spec.script_path)
    text = " ".join(argv)
    for part in ("-N j2d-3", "-S /bin/bash", f"-wd {tmp_path}", "-r y", "-q gpu.q", "-A acc", "-P p1",
                 "-l h_rt=00:01:30", "-l mem_free=2G", "-pe mpi 4", "-l gpu=1", "-l arch=lx-amd64"):
        assert part in text


def test_paths_qsub_would_misread_are_refused(tmp_path):
    with pytest.raises(SubmitError) as err:
        SgeDriver({}, tmp_path).submit_argv(spec_for(tmp_path, stdout=tmp_path / "a:b/3.out"), "x", None)
    assert not err.value.transient


def test_poll_one_qstat_then_qacct_for_jobs_that_left_and_qdel_for_error_states(tmp_path, monkeypatch):
    bin_dir = fake_bin(tmp_path, monkeypatch)
    log = tmp_path / "calls"
    fake_client(bin_dir, "qstat", f"""echo "qstat $*" >> {log}
if [ "$1" = -xml ]; then cat {FIXTURES}/qstat_running.xml; else sed 's/^job_number: *10/job_number: 8/' {FIXTURES}/qstat_j_error.txt; fi\n""")
    fake_client(bin_dir, "qacct", f"""echo "qacct $*" >> {log}
if [ "$2" = 3 ]; then sed -n '/^jobnumber *3 *$/,$p' {FIXTURES}/qacct_cases.txt | sed '/^====/,$d' | sed '1i qname all.q'; exit 0; fi
echo "error: job id $2 not found" >&2; exit 1\n""")
    fake_client(bin_dir, "qdel", f'echo "qdel $*" >> {log}\n')
    got = SgeDriver({}, tmp_path).poll(["4", "6", "8", "3", "77"])
    calls = log.read_text().splitlines()
    assert calls == ["qstat -xml", "qstat -j 8", "qdel 8", "qacct -j 3", "qacct -j 77"]
    assert got["4"].state is S.RUNNING and got["6"].state is S.QUEUED
    assert got["8"].state is S.FAILED and "can't open output file" in got["8"].reason
    assert "deleted from the queue" in got["8"].reason
    assert got["3"].state is S.FAILED and got["3"].exit_code == 3
    assert got["77"].state is S.UNKNOWN


def test_a_claim_gives_back_the_grid_engine_job_id(tmp_path):
    assert SgeDriver({}, tmp_path).adopt_claim({"scheduler_ids": {"JOB_ID": "44", "SLURM_JOB_ID": "9"}}) == "44"


# ---- job arrays ----------------------------------------------------------------------------------
# qstat_array.xml: array 316 of 4 tasks, one at a time (-tc 1), task 1 running, task 3 deleted
# while it waited (qdel 316.3), 2 and 4 waiting ("2,4"); qacct_array.txt: its tasks 1 and 2 done.

def test_qstat_names_each_task_of_an_array_number_dot_index():
    from spearmint_nn.drivers.sge import task_numbers
    states = parse_qstat_xml(read_fixture("qstat_array.xml"))
    assert states == {"316": "rqw", "316.1": "r", "316.2": "qw", "316.4": "qw"}
    assert task_numbers("4-6:1") == [4, 5, 6] and task_numbers("2,4-8:2") == [2, 4, 6, 8] and task_numbers("") == []
    records = parse_qacct(read_fixture("qacct_array.txt"))
    assert sorted(records) == ["316.1", "316.2"] and qacct_status(records["316.2"]).state is S.COMPLETED


def test_array_argv_ids_and_claims(tmp_path):
    driver = SgeDriver({}, tmp_path)
    assert driver.array_argv(12, 4) == ["-t", "1-12", "-tc", "4"]
    assert driver.task_id("316", 3) == "316.3" and driver.found_task("316", 3) == "316.3"
    claim = {"scheduler_ids": {"JOB_ID": "316", "SGE_TASK_ID": "3"}}
    assert driver.adopt_claim(claim) == "316.3"
    assert driver.adopt_claim({"scheduler_ids": {"JOB_ID": "44", "SGE_TASK_ID": "undefined"}}) == "44"  # no array
    with pytest.raises(SubmitError):
        driver.path_word(tmp_path / "a$b")


def test_poll_of_array_tasks_is_one_qstat_and_one_qacct_per_array(tmp_path, monkeypatch):
    bin_dir = fake_bin(tmp_path, monkeypatch)
    log = tmp_path / "calls"
    fake_client(bin_dir, "qstat", f'echo "qstat $*" >> {log}\ncat {FIXTURES}/qstat_array.xml\n')
    fake_client(bin_dir, "qacct", f'echo "qacct $*" >> {log}\ncat {FIXTURES}/qacct_array.txt\n')
    got = SgeDriver({}, tmp_path).poll(["316.1", "316.2", "316.3", "316.4", "316.5"])
    assert log.read_text().splitlines() == ["qstat -xml", "qacct -j 316"]  # for 316.3 and 316.5 together
    assert {k: v.state for k, v in got.items()} == {
        "316.1": S.RUNNING, "316.2": S.QUEUED, "316.4": S.QUEUED, "316.3": S.UNKNOWN, "316.5": S.UNKNOWN}
    fake_client(bin_dir, "qstat", f'cat {FIXTURES}/qstat_empty.xml\n')  # the array has left the queue
    assert SgeDriver({}, tmp_path).poll(["316.2"])["316.2"].state is S.COMPLETED


def test_jobs_submitted_together_are_one_qsub(tmp_path, monkeypatch):
    bin_dir = fake_bin(tmp_path, monkeypatch)
    calls = tmp_path / "calls"
    fake_client(bin_dir, "qsub", f'printf "%s\\n" "$@" > {calls}\necho 316.1-3:1\n')
    state = tmp_path / ".spearmint"
    specs = [spec_for(tmp_path, job_id=i, stdout=state / "output" / f"{i:06d}.out",
                      stderr=state / "output" / f"{i:06d}.err", script_path=state / "scripts" / f"{i:06d}.sh",
                      name=f"e-{i}") for i in (4, 5, 6)]
    driver = SgeDriver({}, state, max_concurrent=8)
    assert driver.submit_many(specs) == ["316.1", "316.2", "316.3"]
    argv = calls.read_text().splitlines()
    assert " ".join(argv).count("-t 1-3 -tc 3") == 1 and argv[argv.index("-N") + 1] == "e-4-array"
    assert argv[argv.index("-o") + 1] == str(state / "output" / "array-000004-$TASK_ID.out")
    assert (state / "output" / "array-000004-1.out").resolve() == specs[0].stdout  # tasks count from 1
    assert 'case "${SGE_TASK_ID:-}" in' in specs[2].script_path.read_text()
