"""The Grid Engine driver: ``qsub`` to submit, ``qstat -xml`` then ``qacct`` to poll, ``qdel``.

A poll runs ``qstat -xml`` once (it lists all of the user's queued and running jobs). A job in
an error state (``Eqw``: typically an output or working folder the execution host cannot
open) would stay in the queue forever: it counts as failed, with the error reason from one
``qstat -j`` call for all such jobs, and is deleted with one ``qdel``. Jobs that left the queue
are looked up with ``qacct -j ID``, which takes one id at a time; a job needs it once, since
its final state is remembered, and at most ``max_qacct_per_poll`` are asked per poll.

Jobs submitted together go as one job array (``qsub -t 1-N -tc K``); task 3 of array 12345 is
the job ``12345.3``, as ``qdel`` takes it (``qdel 12345.3`` deletes that task alone). ``qstat
-xml`` lists a running task on a line of its own and pending ones as ranges (``4-6:1``), so the
same one call covers them; ``qacct -j 12345`` prints every task's record (``taskid``), so the
tasks of one array need one ``qacct`` call between them.

Grid Engine's accounting does not say who killed a job: ``failed 100`` with exit status 137
is a ``qdel`` or a SIGKILL from the system (e.g. the kernel out of memory), and is reported as
cancelled with those words.

Jobs get Grid Engine's default environment, not the login shell's: put what they need in the
``setup`` lines (the runner itself is started by its absolute interpreter path).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from spearmint_nn.time_limit import WARNING_TO_GROUP_VARIABLE

from .base import JobSpec, JobStatus, SchedulerState, SubmitError
from .batch import (BatchDriver, CommandError, CommandResult, Resources, check_int, check_string,
                    exit_code_and_reason, log)

_JOB_ID = re.compile(r"^([0-9]+)(\.[0-9]+-[0-9]+:[0-9]+)?$")
_RESOURCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
FAILED_LIMIT = 37   # qacct "failed 37 : qmaster enforced h_rt, h_cpu, or h_vmem limit"
FAILED_AFTER_JOB = 100  # "failed 100 : assumedly after job": the job was killed by a signal


def queue_status(state: str) -> JobStatus:
    """A job still in ``qstat``, from its state letters (``qw``, ``hqw``, ``r``, ``dr``, ``Eqw``, ...)."""
    if "E" in state:
        return JobStatus(SchedulerState.FAILED, None, f"Grid Engine error state {state}")
    if "d" in state:
        return JobStatus(SchedulerState.RUNNING, None, f"{state} (being deleted)")
    if any(letter in state for letter in "rtsST"):
        return JobStatus(SchedulerState.RUNNING, None, state)
    return JobStatus(SchedulerState.QUEUED, None, state)


def task_numbers(text: str) -> list[int]:
    """The task indices of ``qstat``'s ``tasks`` field: ``3``, ``4-6:1``, ``2,4-6:1``."""
    numbers: list[int] = []
    for part in text.split(","):
        span, _, step = part.strip().partition(":")
        low, _, high = span.partition("-")
        if low.isdigit() and (not high or high.isdigit()) and (not step or step.isdigit()):
            numbers += range(int(low), int(high or low) + 1, int(step or 1) or 1)
    return numbers


def parse_qstat_xml(text: str) -> dict[str, str]:
    """State letters from ``qstat -xml`` (running and pending lists alike) by job number, and
    by ``number.task`` for each task of an array."""
    root = ElementTree.fromstring(text)
    states: dict[str, str] = {}
    for job in root.iter("job_list"):
        number = (job.findtext("JB_job_number") or "").strip()
        if number:
            state = (job.findtext("state") or "").strip()
            # array tasks share a number; a running task makes the whole job running
            states[number] = states.get(number, "") + state
            for task in task_numbers(job.findtext("tasks") or ""):
                states[f"{number}.{task}"] = state
    return states


def parse_qacct(text: str) -> dict[str, dict[str, str]]:
    """``qacct -j`` blocks (separated by ``=====`` lines) as job number (``number.task`` for an
    array's task) -> {key: value}."""
    records: dict[str, dict[str, str]] = {}
    for block in re.split(r"^=+\s*$", text, flags=re.MULTILINE):
        record = {}
        for line in block.splitlines():
            key, _, value = line.strip().partition(" ")
            if key:
                record[key] = value.strip()
        if record.get("jobnumber"):
            task = record.get("taskid", "")
            key = f"{record['jobnumber']}.{task}" if task.isdigit() else record["jobnumber"]
            records[key] = record  # the last record of a number is the newest run
    return records


def qacct_status(record: Mapping[str, str]) -> JobStatus:
    """The final state of a job from its ``qacct`` record (``failed`` and ``exit_status``)."""
    code_text, _, failed_why = record.get("failed", "0").partition(":")
    failed = int(code_text.strip()) if code_text.strip().isdigit() else 0
    exit_words = record.get("exit_status", "0").split()
    exit_status = int(exit_words[0]) if exit_words and exit_words[0].isdigit() else 0
    code, words = exit_code_and_reason(exit_status, 0)
    failed_text = f"failed {failed} : {failed_why.strip()}"
    if failed == 0:
        if exit_status == 0:
            return JobStatus(SchedulerState.COMPLETED, 0, "")
        return JobStatus(SchedulerState.FAILED, code, f"Grid Engine: {words}")
    if failed == FAILED_LIMIT:
        return JobStatus(SchedulerState.TIMEOUT, code, f"Grid Engine: {failed_text}, {words}")
    if failed == FAILED_AFTER_JOB and exit_status > 128:
        signal = exit_status - 128
        return JobStatus(SchedulerState.CANCELLED, code,
                         f"Grid Engine: killed by signal {signal} (deleted with qdel, or killed by "
                         f"the system, e.g. for memory); {failed_text}", signal=signal)
    return JobStatus(SchedulerState.FAILED, code, f"Grid Engine: {failed_text}, {words}")


def parse_error_reasons(text: str) -> dict[str, str]:
    """Job number -> first ``error reason`` line of ``qstat -j ID[,ID...]`` output."""
    reasons: dict[str, str] = {}
    number = ""
    for line in text.splitlines():
        if line.startswith("job_number:"):
            number = line.split(":", 1)[1].strip()
        elif line.startswith("error reason") and number and number not in reasons:
            # "error reason    1:      11/21/2026 10:10:39 [0:15330]: error: can't open ..."
            reasons[number] = line.split("]:", 1)[-1].strip() if "]:" in line else line.split(":", 1)[1].strip()
    return reasons


class SgeDriver(BatchDriver):
    """Submits job scripts with ``qsub`` (see the module docstring)."""

    name = "sge"
    job_id_variable = "JOB_ID"  # read back from a job's claim (Driver.adopt_claim)
    # a task's index; a single job's SGE_TASK_ID is "undefined"
    task_first, task_variable, array_id_variable = 1, "SGE_TASK_ID", "JOB_ID"
    task_in_path, task_separator = "$TASK_ID", "."
    options: ClassVar[Mapping[str, str]] = {
        **BatchDriver.options,
        "queue": "queue (qsub -q)",
        "project": "project (qsub -P)",
        "account": "account string (qsub -A)",
        "memory": "memory per slot as Grid Engine counts it: megabytes, or a string such as '4G' "
                  "(qsub -l <memory-resource>=...)",
        "memory-resource": "resource that limits memory (default 'h_vmem'; some sites use 'mem_free')",
        "cpus": "slots per job, taken from the parallel environment (qsub -pe <parallel-environment> N)",
        "parallel-environment": "parallel environment for cpus > 1 (default 'smp')",
        "gpus": "GPUs per job (qsub -l <gpu-resource>=N)",
        "gpu-resource": "consumable resource that counts GPUs (default 'gpu')",
    }
    transient_messages = (
        "unable to contact qmaster", "unable to send message to qmaster", "commlib error",
        "failed receiving gdi request", "can't connect", "connection refused", "got no connection",
        "timed out", "timeout", "try later", "qmaster is not alive",
    )
    # qsub over the global configuration's max_u_jobs ("Unable to run job: job rejected: only 3
    # jobs are allowed per user (current job count: 3)") or max_jobs ("... only 3 jobs are
    # allowed per cluster"); SGE 8.1.9 counts a user's jobs until they leave the qmaster.
    site_limit_messages = ("jobs are allowed per user", "jobs are allowed per cluster")
    option_flags = (("queue", "-q"), ("account", "-A"), ("project", "-P"))
    gone_messages = ("does not exist",)
    max_qacct_per_poll: ClassVar[int] = 20
    # Grid Engine's soft-limit SIGUSR1 reaches every process of the job's process group, a SHELL
    # command too (tried on the project's Grid Engine): the runner must not send it a second one.
    warning_env = {WARNING_TO_GROUP_VARIABLE: "1"}

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> None:
        super().validate_options(options)
        for key in ("memory-resource", "parallel-environment", "gpu-resource"):
            if key in options:
                check_string(f"driver.{key}", options[key], _RESOURCE, "must be a Grid Engine name (letters, digits, _ . -)")
        if "gpus" in options:
            check_int("driver.gpus", options["gpus"], 0)

    def job_name(self, spec: JobSpec) -> str:
        name = super().job_name(spec)
        return name if name[:1].isalpha() else f"j{name}"  # qsub refuses names that start with a digit

    def path_word(self, path: Path) -> str:
        # qsub reads "host:path" in -o/-e and expands $JOB_ID, $TASK_ID etc.; such paths cannot be passed
        if ":" in str(path) or "$" in str(path):
            raise SubmitError(f"Grid Engine cannot use a path containing ':' or '$': {path}", transient=False)
        return str(path)

    def array_argv(self, count: int, at_once: int) -> list[str]:
        return ["-t", f"1-{count}", "-tc", str(at_once)]

    def submit_head(self, spec: JobSpec, name: str, stdout: str, stderr: str) -> list[str]:
        self.path_word(spec.workdir)
        # -r y: a rerunnable job, which Grid Engine runs again after a host crash or qmod -rj
        # (for a queue with rerun FALSE, its default, it would not) as another attempt of the
        # same job (see spearmint_nn.experiment.claims); each attempt appends to -o and -e.
        return ["qsub", "-terse", "-N", name, "-S", "/bin/bash", "-wd", str(spec.workdir), "-r", "y",
                "-o", stdout, "-e", stderr]

    def resource_argv(self, asked: Resources) -> list[str]:
        opts = self.config
        argv = []
        if asked.wall_clock is not None:
            argv += ["-l", f"h_rt={asked.wall_clock}"]
        if asked.soft_wall_clock is not None:
            # at the soft limit Grid Engine sends SIGUSR1 to the job's whole process group
            argv += ["-l", f"s_rt={asked.soft_wall_clock}"]
        if asked.memory is not None:
            argv += ["-l", f"{opts.get('memory-resource', 'h_vmem')}={asked.memory}"]
        if asked.cpus is not None and asked.cpus > 1:  # one slot needs no parallel environment
            argv += ["-pe", opts.get("parallel-environment", "smp"), str(asked.cpus)]
        if asked.gpus is not None:
            argv += ["-l", f"{opts.get('gpu-resource', 'gpu')}={asked.gpus}"]
        return argv

    def find_argv(self, name: str) -> list[str]:
        return ["qstat", "-j", name]

    def parse_found(self, result: CommandResult) -> list[tuple[str, str]]:
        # one block of "key: value" lines per job; "cwd" is the -wd the job was submitted with
        found = []
        for block in result.stdout.split("=" * 20):
            fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
            number = fields.get("job_number", "").strip()
            workdir = fields.get("cwd", fields.get("sge_o_workdir", "")).strip()
            if number.isdigit():
                found.append((number, workdir))
        return sorted(found, key=lambda pair: int(pair[0]))

    def parse_submit(self, result: CommandResult) -> str:
        # -terse prints "JOBID" (an array: "JOBID.1-5:1"; its tasks are JOBID.1 ... JOBID.5)
        first = next((line for line in result.stdout.splitlines() if line.strip()), "").strip()
        match = _JOB_ID.match(first)
        if match is None:
            raise SubmitError(f"qsub printed no job id: {result.message}", transient=False)
        return match.group(1)

    def query(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        result = self.call(["qstat", "-xml"])
        try:
            in_queue = parse_qstat_xml(result.stdout)
        except ElementTree.ParseError as exc:
            raise CommandError(f"qstat -xml printed unreadable XML ({exc})", transient=True) from None
        found = {sid: queue_status(in_queue[sid]) for sid in scheduler_ids if sid in in_queue}
        errored = [sid for sid, status in found.items() if status.state is SchedulerState.FAILED]
        if errored:
            found.update(self._delete_errored(errored, found))
        left: dict[str, list[str]] = {}  # job number -> the ids asked of it (an array's tasks)
        for sid in scheduler_ids:
            if sid not in found:
                left.setdefault(sid.partition(".")[0], []).append(sid)
        for number in list(left)[:self.max_qacct_per_poll]:
            found.update(self._accounting(number, left[number]))
        return found

    def _delete_errored(self, scheduler_ids: Sequence[str], found: Mapping[str, JobStatus]) -> dict[str, JobStatus]:
        """Failed statuses for jobs in an error state, with the reason; the jobs (tasks) are deleted."""
        numbers = list(dict.fromkeys(sid.partition(".")[0] for sid in scheduler_ids))  # qstat -j takes job numbers
        try:
            reasons = parse_error_reasons(self.call(["qstat", "-j", ",".join(numbers)]).stdout)
        except CommandError:
            reasons = {}
        try:
            self.call(["qdel", *scheduler_ids])
        except CommandError as exc:
            log.warning("could not delete Grid Engine job(s) %s in an error state: %s", " ".join(scheduler_ids), exc)
        return {sid: JobStatus(SchedulerState.FAILED, None,
                               f"{found[sid].reason}: {reasons.get(sid.partition('.')[0], 'no reason given')}; "
                               f"deleted from the queue")
                for sid in scheduler_ids}

    def _accounting(self, number: str, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        """Final states from one qacct call for job ``number`` (its tasks ``scheduler_ids``);
        unknown for ids it has no record of; none where it did not answer."""
        try:
            result = self.call(["qacct", "-j", number],
                               accept=lambda r: r.returncode == 0 or "not found" in r.message)
        except CommandError as exc:
            if exc.transient:
                log.warning("qacct gave no answer (%s); asking again at the next poll", exc)
                return {}
            return {sid: JobStatus(SchedulerState.UNKNOWN, None, f"not in qstat any more, and qacct failed: {exc}")
                    for sid in scheduler_ids}
        records = parse_qacct(result.stdout) if result.returncode == 0 else {}
        # accounting is written when the job ends; a job deleted before it started has none
        return {sid: qacct_status(records[sid]) if sid in records
                else JobStatus(SchedulerState.UNKNOWN, None, "neither qstat nor qacct knows this job")
                for sid in scheduler_ids}

    def cancel_argv(self, scheduler_ids: Sequence[str]) -> list[str]:
        return ["qdel", *scheduler_ids]
