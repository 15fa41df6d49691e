"""The SLURM driver: ``sbatch`` to submit, ``squeue`` then ``sacct`` to poll, ``scancel``.

A poll asks ``squeue`` about all running jobs at once (``-t all`` also lists jobs that ended
less than ``MinJobAge`` seconds ago, with their exit status). Jobs that ``squeue`` no longer
knows are looked up with one ``sacct`` call (accounting through slurmdbd); a job neither of
them knows is reported as unknown, and the daemon declares it lost once the grace period for
its result file has passed.

Jobs submitted together go as one job array (``sbatch --array=0-N%K``); task 3 of array 12345
is the job ``12345_3``, as ``squeue``, ``sacct`` and ``scancel`` name it: the same poll asks
about tasks and single jobs alike (``squeue -r`` lists a pending array's tasks one by one, and
the ``JobArrayID`` field names them ``12345_3``), and ``scancel 12345_3`` cancels that task alone.

Options (``"driver": {"name": "slurm", ...}`` in config.json): see ``SlurmDriver.options``.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Iterator, Mapping, Sequence

from spearmint_nn.errors import ConfigError
from spearmint_nn.job import WARNING_SIGNAL

from .base import JobSpec, JobStatus, SchedulerState, SubmitError
from .batch import (BatchDriver, CommandError, CommandResult, Resources, check_int, check_string,
                    exit_code_and_reason, flag_words, log)

_QUEUED = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING"}
_RUNNING = {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "STAGE_OUT", "SIGNALING"}
_FINAL = {
    "COMPLETED": SchedulerState.COMPLETED,
    "FAILED": SchedulerState.FAILED,
    "SPECIAL_EXIT": SchedulerState.FAILED,
    "TIMEOUT": SchedulerState.TIMEOUT,
    "DEADLINE": SchedulerState.TIMEOUT,
    "CANCELLED": SchedulerState.CANCELLED,
    "PREEMPTED": SchedulerState.PREEMPTED,
    "REVOKED": SchedulerState.CANCELLED,
    "NODE_FAIL": SchedulerState.NODE_FAIL,
    "BOOT_FAIL": SchedulerState.NODE_FAIL,
    "OUT_OF_MEMORY": SchedulerState.OUT_OF_MEMORY,
}
# JobArrayID, JobID: "12345_3" for an array's task (JobID/JobIDRaw would say the task's own
# number), the plain number for a single job.
SQUEUE_FORMAT = "JobArrayID:|,State:|,Reason:|,exit_code:|"
SACCT_FIELDS = "JobID,State,ExitCode"
# What a SLURM job's environment says about that job alone, and sbatch --export=ALL would hand
# on to the jobs a daemon submits when it runs as a SLURM job itself (see submit_environment).
OWN_JOB_VARIABLES = ("SLURM_RESTART_COUNT",)
_JOB_ID = re.compile(r"^[0-9]+(_[0-9]+)?$")
_GPUS = re.compile(r"^([A-Za-z0-9_.-]+:)?[0-9]+$")
# A pending job's reason that names a limit of an association or a QOS (AssocMaxJobsLimit,
# QOSMaxJobsPerUserLimit, AssocGrpCPULimit, ...): it waits for the site's cap, not for resources.
_LIMIT_REASON = re.compile(r"^(Assoc|QOS)[A-Za-z]*Limit$")


def slurm_status(state: str, reason: str, exit_status: int, signal: int) -> JobStatus:
    """Map one SLURM job state (``squeue``/``sacct`` words) to a :class:`JobStatus`.

    ``reason`` is squeue's reason code ("None" when there is none); ``exit_status``/``signal``
    are the two halves of SLURM's ``ExitCode`` (``3:0``: exit 3, ``0:9``: killed by signal 9).
    """
    state = state.split()[0] if state.strip() else "UNKNOWN"  # sacct: "CANCELLED by 1000"
    why = f" ({reason})" if reason and reason != "None" else ""
    if state in _QUEUED:
        return JobStatus(SchedulerState.QUEUED, None, f"{state}{why}", site_limit=bool(_LIMIT_REASON.match(reason)))
    if state in _RUNNING:
        return JobStatus(SchedulerState.RUNNING, None, f"{state}{why}")
    mapped = _FINAL.get(state)
    if mapped is None:
        # a state this driver does not know (a newer SLURM): keep waiting, say what it was
        return JobStatus(SchedulerState.RUNNING, None, f"SLURM state {state}{why}")
    code, words = exit_code_and_reason(exit_status, signal)
    if mapped is SchedulerState.COMPLETED:
        return JobStatus(mapped, code, "")
    return JobStatus(mapped, code, f"SLURM: {state}{why}, {words}", signal=signal or None)


def _records(text: str, count: int) -> Iterator[list[str]]:
    """The first ``count`` ``|``-separated fields of each line that has them and a job id."""
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) >= count and fields[0].strip():
            yield fields[:count]


def parse_squeue(text: str) -> dict[str, JobStatus]:
    """``squeue -h -O 'JobArrayID:|,State:|,Reason:|,exit_code:|'`` lines; exit_code is a wait status."""
    statuses = {}
    for job_id, state, reason, wait_status in _records(text, 4):
        raw = int(wait_status) if wait_status.strip().isdigit() else 0
        statuses[job_id.strip()] = slurm_status(state.strip(), reason.strip(), raw >> 8, raw & 0x7F)
    return statuses


def parse_sacct(text: str) -> dict[str, JobStatus]:
    """``sacct -n -X -P -o JobID,State,ExitCode`` lines (ExitCode ``exit:signal``)."""
    statuses = {}
    for job_id, state, exit_code in _records(text, 3):
        exit_status, _, signal = exit_code.partition(":")
        statuses[job_id.strip()] = slurm_status(
            state, "", int(exit_status) if exit_status.isdigit() else 0, int(signal) if signal.isdigit() else 0)
    return statuses  # a requeued job has several records; the last one is the current one


class SlurmDriver(BatchDriver):
    """Submits job scripts with ``sbatch`` (see the module docstring)."""

    name = "slurm"
    job_id_variable = "SLURM_JOB_ID"  # read back from a job's claim (Driver.adopt_claim)
    task_first, task_variable, array_id_variable = 0, "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_JOB_ID"
    task_in_path, task_separator = "%a", "_"
    options: ClassVar[Mapping[str, str]] = {
        **BatchDriver.options,
        "partition": "partition (sbatch --partition)",
        "qos": "quality of service (sbatch --qos)",
        "gpus": "GPUs per job: a count, or 'type:count' such as 'a100:2' (sbatch --gres=gpu:...)",
    }
    transient_messages = (
        "unable to contact slurm controller", "socket timed out", "connection refused",
        "connection timed out", "resource temporarily unavailable", "temporarily unable to accept job",
        "slurm_persist_conn_open", "problem talking to the database", "communication connection failure",
        "zero bytes were transmitted", "try again", "not responding",
    )
    # sbatch names the limit a refused job would pass on its first line, e.g. "sbatch: error:
    # AssocMaxSubmitJobLimit" (then "Job violates accounting/QOS policy (job submit limit, user's
    # size and/or time limits)", the same words for a wall time over a QOS's MaxWall, which no
    # wait lifts): the caps on submitted jobs of an association (user, account) or a QOS, per
    # user, per account or in all (Assoc/QOS ... MaxSubmitJob..., GrpSubmitJobs...).
    site_limit_messages = ("maxsubmitjob", "grpsubmitjob")
    option_flags = (("partition", "--partition"), ("account", "--account"), ("qos", "--qos"))
    gone_messages = ("invalid job id specified", "already completing or completed", "job has already finished")

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> None:
        super().validate_options(options)
        gpus = options.get("gpus", 0)
        if isinstance(gpus, str):
            check_string("driver.gpus", gpus, _GPUS, "must be a count or 'type:count' such as 'a100:2'")
        elif isinstance(gpus, bool) or not isinstance(gpus, int):
            raise ConfigError("driver.gpus", f"must be a count or 'type:count' such as 'a100:2' (got {gpus!r})")
        else:
            check_int("driver.gpus", gpus, 0)

    def submit_head(self, spec: JobSpec, name: str, stdout: str, stderr: str) -> list[str]:
        # --requeue: a job SLURM interrupts (node failure, preemption, scontrol requeue) runs
        # again as another attempt of the same job, which the runner evaluates (see
        # spearmint_nn.experiment.claims), rather than ending lost; asked for explicitly because
        # sites set JobRequeue=0 as their default. --open-mode=append: each attempt adds to the
        # job's output instead of truncating what the earlier one wrote.
        return ["sbatch", "--parsable", "--requeue", "--open-mode=append", "--job-name", name,
                "--chdir", str(spec.workdir), "--output", stdout, "--error", stderr]

    def path_word(self, path: Path) -> str:
        return str(path).replace("%", "%%")  # sbatch expands %j, %a, ... in file names; %% is a literal %

    def array_argv(self, count: int, at_once: int) -> list[str]:
        return [f"--array=0-{count - 1}%{at_once}"]

    def submit_environment(self) -> Mapping[str, str] | None:
        # sbatch gives the job its own environment (--export=ALL). A daemon that runs as a SLURM
        # job (README: "Running the daemon as a batch job") has its own SLURM_RESTART_COUNT in it
        # once SLURM has requeued it, and SLURM leaves an inherited count as it is in a job's
        # first run: a requeued experiment job would then show no restart since its first attempt
        # (1 after 1) and evaluate nothing (spearmint_nn.experiment.claims). Seen on SLURM 22.05.
        if not any(name in os.environ for name in OWN_JOB_VARIABLES):
            return None
        return {name: value for name, value in os.environ.items() if name not in OWN_JOB_VARIABLES}

    def resource_argv(self, asked: Resources) -> list[str]:
        # --signal=B:...: the warning goes to the batch shell alone, which the job script's exec
        # made the runner (without B: SLURM signals job steps only, and a job without srun has
        # none): the runner gets it once and passes it on. SLURM sends it up to a minute early.
        warning = None if asked.warning is None else f"B:{WARNING_SIGNAL.name.removeprefix('SIG')}@{asked.warning}"
        return flag_words(("--time", asked.wall_clock), ("--mem", asked.memory), ("--cpus-per-task", asked.cpus),
                          ("--gres", None if asked.gpus is None else f"gpu:{asked.gpus}"), ("--signal", warning))

    def parse_submit(self, result: CommandResult) -> str:
        # --parsable prints "JOBID" (an array's id, for an array) or, on a multi-cluster setup, "JOBID;CLUSTER"
        first = next((line for line in result.stdout.splitlines() if line.strip()), "")
        job_id = first.split(";")[0].strip()
        if not _JOB_ID.match(job_id):
            raise SubmitError(f"sbatch printed no job id: {result.message}", transient=False)
        return job_id

    def find_argv(self, name: str) -> list[str]:
        # without -t: pending, running and completing jobs only (not one preempted earlier); -r:
        # an array's pending tasks each on a line of its own, "12345_3" (%i)
        return ["squeue", "-h", "-r", "--name", name, "-o", "%i|%Z"]

    def parse_found(self, result: CommandResult) -> list[tuple[str, str]]:
        found = [(sid.strip(), workdir.strip()) for sid, workdir in _records(result.stdout, 2)]
        return sorted(found, key=lambda pair: [int(part) for part in re.findall(r"[0-9]+", pair[0])])

    def query(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        # squeue exits 1 with "Invalid job id specified" only when it knows none of the ids
        result = self.call(
            ["squeue", "-h", "-t", "all", "-r", "-j", ",".join(scheduler_ids), "-O", SQUEUE_FORMAT],
            accept=lambda r: r.returncode == 0 or "invalid job id" in r.message.lower())
        listed = parse_squeue(result.stdout) if result.returncode == 0 else {}
        found = {sid: listed[sid] for sid in scheduler_ids if sid in listed}
        gone = [sid for sid in scheduler_ids if sid not in found]
        if gone:
            found.update(self._accounting(gone))
        return found

    def _accounting(self, scheduler_ids: Sequence[str]) -> dict[str, JobStatus]:
        """Final states from sacct of jobs squeue has forgotten; unknown where sacct has none."""
        try:
            result = self.call(["sacct", "-n", "-X", "-P", "-j", ",".join(scheduler_ids), "-o", SACCT_FIELDS])
        except CommandError as exc:
            if exc.transient:
                log.warning("sacct gave no answer (%s); asking again at the next poll", exc)
                return {}  # left out: still running as far as the daemon knows
            why = f"not known to squeue any more, and sacct failed: {exc}"
            return {sid: JobStatus(SchedulerState.UNKNOWN, None, why) for sid in scheduler_ids}
        found = parse_sacct(result.stdout)
        return {sid: found.get(sid) or JobStatus(SchedulerState.UNKNOWN, None, "neither squeue nor sacct knows this job")
                for sid in scheduler_ids}

    def cancel_argv(self, scheduler_ids: Sequence[str]) -> list[str]:
        return ["scancel", *scheduler_ids]
