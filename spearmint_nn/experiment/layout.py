"""Where everything lives inside an experiment folder, and what each file holds.

::

    <experiment>/
        config.json, <wrapper>.py        the user's; never written by the daemon
        .spearmint/                      the daemon's state folder
            daemon.lock                  flock'd by the holder: one daemon per folder (never deleted)
            daemon.json                  the holder's record: {host, pid, start_ticks, started,
                                         command ("run", "cancel", "add"), argv, and for a daemon
                                         heartbeat (unix time, refreshed every poll period),
                                         stale_after_s, stopped (unix time, once it exited)};
                                         see spearmint_nn.experiment.lock
            next_id                      the next job id to hand out (ids are never reused)
            config.json                  config.json as the running daemon validated it, written
                                         at its start: what its jobs run with, whatever the
                                         user's file holds meanwhile (an edit half saved)
            config-error.json            while the user's config.json does not validate for the
                                         running daemon: {error, since}; it submits nothing
                                         until the file validates again (status says so)
            inputs/000042.json           params of job 42, written once before submission
            jobs/pending/000042.json     proposed, not yet accepted by a scheduler
            jobs/running/000042.json     submitted; holds the scheduler's id (a job array's task:
                                         12345_3 on SLURM, 12345.3 on Grid Engine)
            jobs/complete/000042.json    params, values, duration, host, timestamps
            jobs/failed/000042.json      params, reason, tail of stderr
            jobs/stopped/000042.json     cancelled as it ran by early stopping (experiment key
                                         "early-stopping"): params, stopped_reason, its curve's
                                         summary; a result file it wrote after is never recorded
            output/000042.out|.err       the job's own stdout and stderr
            output/array-000040-2.out|.err  links to a job's own files, named by an array's task
                                         (array-000040, task 2), which the scheduler opens
            results/000042.json          written by the job itself (the runner); the daemon lists
                                         this folder at every poll for results that a shared
                                         filesystem shows late (spearmint_nn.daemon.events.late_results)
            claims/000042.json           the runner's claim on job 42 (host, pid, start time),
                                         created once with an atomic link: one evaluation per id
            claims/000042-2.json         the claim on its second attempt (the scheduler ran
                                         the same job again, or the daemon submitted it again:
                                         preempted, its node failed, or to be resumed), and so on
            checkpoints/000042/          the job's own checkpoint folder ($SPEARMINT_CHECKPOINT_DIR),
                                         created by the runner before the wrapper starts, kept
                                         across the job's attempts, never deleted by spearmint-nn
            reports/000042.txt           the job's learning curve ($SPEARMINT_REPORT_FILE;
                                         spearmint_nn.job.report): lines "<step> <value>"
                                         appended as it runs, kept across its attempts, before
                                         attempt n >= 2 a line "# attempt <n>" written by the
                                         runner; format and parser in spearmint_nn.experiment.curves.
                                         The daemon reads what was appended at each poll and keeps
                                         a summary in the job file (reports, last_step, ...)
            attempts/000042-1.json       attempt 1 of job 42 ended to be resumed from its checkpoint
                                         (experiment key "resume"): no result yet, but this
                                         record, an entry of "attempts" below with outcome
                                         "checkpointed" and "warned" (unix time the warning
                                         before the time limit came, or null)
            attempts/000042-1.warned     created by attempt 1's runner when that warning came
                                         ($SPEARMINT_WARNING_FILE; spearmint_nn.job.should_checkpoint)
            scripts/000042.sh            job scripts of batch drivers, kept for the user to read
                                         (a link to scripts/array-<first id>.sh when the job
                                         was last submitted in a job array)
            scripts/array-000040.sh|.json  a job array's script (a case from the task's index
                                         to its job) and table {name, task_first, jobs}
            requests/cancel-*.json       requests of ``spearmint-nn cancel`` to a running daemon
            model/                       surrogate weights for warm starts (torch, weights_only)
            model/objective/related.json what each related experiment gives the model:
                                         {"related": [{name, observations, used,
                                         correlation: [mean, sd] | null}], "written"}
            results.csv, best.json       summaries, rewritten atomically
            report.html                  the report page the daemon keeps current while it runs
                                         (spearmint_nn.views.live_page): rewritten atomically at
                                         most every 5 s after changes and at least every minute,
                                         reloading itself; the page written as the daemon stops
                                         is final. ``spearmint-nn serve`` serves it
            site_limit.json              while a limit of the site holds the daemon back
                                         (spearmint_nn.daemon.policies.site_limits): {"held": {"in_flight"
                                         (jobs the site accepted), "since" (unix time), "message"
                                         (the scheduler's refusal)} | null, "queued": {"jobs",
                                         "reason"} (jobs the scheduler queues for a limit, e.g.
                                         AssocMaxJobsLimit) | null, "written"}; absent otherwise
                                         (a stopped daemon's is ignored by status and removed by
                                         the next daemon)
            daemon.log

The daemon is the only writer of ``jobs/``, ``inputs/`` and the summaries; a job is the only
writer of its own ``results/``, ``claims/``, ``attempts/``, ``checkpoints/``, ``reports/`` and ``output/``
files. That split keeps the folder
consistent when either side dies.

Submission is two writes around the driver call: the job moves to ``running`` with
``scheduler_id`` null and ``submitting`` set (the intent) *before* the driver is asked, and the
scheduler's id is added after. A daemon killed in between finds a running job without an id on
restart: it adopts the process named by the job's claim when the driver can (see
``Driver.adopt_claim``), and otherwise submits it again, which is safe because a runner that
finds the job already claimed never evaluates it (it waits for the holder and exits).

Job file (``jobs/<state>/<id>.json``), JSON object:

    id            int, the job id (also the file name, zero-padded to 6 digits)
    state         "pending" | "running" | "complete" | "failed" | "stopped" (matches the folder)
    params        params in JSON form (lists; see spearmint_nn.problem.space)
    source        "optimizer" | "user" (a params file dropped into jobs/pending) | "import"
    created       unix time the job was proposed
    submitted     unix time the driver accepted it (running and later)
    driver        driver name; scheduler_id: the driver's opaque id string (null while submitting)
    submitting    unix time the daemon decided to submit (running; see "Submission" above)
    finished      unix time the daemon recorded the outcome (complete / failed / stopped)
    started, ended, host  from the runner's result file, when there is one (started: when the
                  runner began the job; process_started: when its process started, on Linux, so
                  the queue is submitted..process_started and the start-up process_started..started)
    duration      seconds the wrapper ran (ended - started), when known
    attempts      the runs of the job, first first (one, unless the scheduler requeued or
                  rescheduled it), from the runner's result file: [{"attempt" (1, 2, ...),
                  "host", "started" (unix time it claimed the attempt), "ended" (unix time,
                  null for an attempt the scheduler stopped and requeued), "outcome" ("ok" |
                  "error" for the last; for the others "requeued" (the scheduler ran the same
                  job again), "preempted" or "node_fail" (the scheduler dropped it and the daemon
                  submitted the job again), "checkpointed" (it stopped at its checkpoint to be
                  resumed; it also has "warned")), "scheduler_ids" and "restarts" (as in its
                  claim), "scheduler_id"
                  (the daemon's, for an attempt it submitted again after)}]; while the job waits
                  or runs again, the attempts that ended so far; absent for jobs run by older runners
    reports, last_step, last_value  the job's learning curve so far (running and later): how many
                  reports its file ``reports/<id>.txt`` holds, and the step and value of the last
                  one written; absent while it has none. The daemon rewrites them at each poll
                  that finds new lines (and once more when the job ends); the file is the full
                  curve, read again from its start by a restarted daemon
    report_warning  one line saying the job's report file has lines that are not reports
                  (garbage, NaN, inf), which are skipped; set once, the first time one is read
    attempt       the attempt the job is submitted for, when the daemon submitted it again
                  (spearmint_nn.daemon.policies.reattempts); its runner runs with ``--attempt <n>``
    predicted_duration  seconds the duration model predicted when EI per second proposed the job
    chosen_by     what proposed the job (source "optimizer"): "sobol", "exploration", "gp", "dngo"
    search_start  the first evaluation (0-based, completion order) the objective model saw then;
                  it moves forward at each restart
    values        {task name: float} (complete)
    value         the objective's value (complete)
    reason        one line saying why (failed); failure: a short kind such as "exception",
                  "nan", "bad_result", "exit_code", "timeout", "cancelled", "lost", "oom",
                  "node_fail", "interrupted" (interrupted in each of its max-attempts attempts), "submit_rejected"
    stopped_reason  one line saying why early stopping stopped the job (stopped), with
                  stopped_step: its last step then (its curve's summary is kept as for any job)
    stderr_tail   last lines of the job's stderr (failed)
    stdout_tail   last lines of the job's stdout (failed): a wrapper that caught its own
                  exception and returned NaN printed the real reason there or in stderr
    location      "<file>:<line>" of the innermost traceback frame in the experiment folder,
                  from the runner's result file, when known (failed)
    ended_without_result  unix time the scheduler first said the job had ended while no result
                  file was to be seen (failed by the daemon after result-grace: "no_result",
                  "lost", "timeout", ... by the scheduler's state): a result file that appears
                  later, until the experiment ends, is recorded in place of the failure
    late_result   on a job recorded so: the failure its late result replaced, {"failure",
                  "reason", "ended" (the ended_without_result above)}; the job is then complete,
                  or failed as the runner recorded it
    reclassified_from  the kind the job failed with ("exception", ...) when the daemon later
                  recorded it as "bad_wrapper": the same failure at the same place in 3 jobs in
                  a row before any job succeeded (spearmint_nn.daemon.policies.before_success)

best.json: the best observed feasible job (id, value, values, params, duration, finished): the
lowest value, the highest with ``"direction": "maximize"``; for a GAUSSIAN (noisy) objective,
also ``model_best``: the evaluated feasible point with the best posterior mean of the objective
model, as Spearmint reported it, ``{"id", "params", "mean", "std", "value" (observed there),
"observations" (the model's data), "fitted" (unix time)}``.

Claim file (``claims/<id>.json``, ``claims/<id>-<attempt>.json`` from the second attempt on),
created once by the runner before it evaluates anything (spearmint_nn.experiment.claims):

    attempt (1, 2, ...), host, pid, start_ticks (field 22 of /proc/<pid>/stat), claimed (unix time),
    scheduler_ids ({environment variable: value} for variables ending in JOB_ID or JOBID),
    restarts ({variable: value} of SLURM_RESTART_COUNT and Grid Engine's RESTARTED, when set),
    cuda_visible_devices (the job's CUDA_VISIBLE_DEVICES, or null: the local driver's GPU slot)

Result file (``results/<id>.json``): written atomically by the runner, read by the daemon,
both through :class:`spearmint_nn.experiment.results.JobResult`, whose module gives the schema.
"""
from __future__ import annotations

from pathlib import Path

from .jobs import JobState

STATE_DIR_NAME = ".spearmint"
JOB_STATES = tuple(state.value for state in JobState)  # the folders under jobs/
OBJECTIVE_MODEL_DIR = "objective"  # under model/: the objective surrogate's saved state
WARPINGS_FILE = "warpings.json"  # beside it: the model's learned input warpings, read by reports
PICTURE_FILE = "picture.json"  # and what the model says (importance, slices, contour), read by reports
RELATED_FILE = "related.json"  # and what each related experiment gives the model, read by status


def job_file_name(job_id: int) -> str:
    """``000042.json`` for job 42."""
    return f"{job_id:06d}.json"


class ExperimentPaths:
    """Absolute paths of one experiment folder and its state folder."""

    def __init__(self, experiment_dir: str | Path):
        self.experiment = Path(experiment_dir).resolve()
        self.state = self.experiment / STATE_DIR_NAME
        self.config = self.experiment / "config.json"
        self.config_in_force = self.state / "config.json"
        self.config_error = self.state / "config-error.json"
        self.lock = self.state / "daemon.lock"
        self.daemon_info = self.state / "daemon.json"
        self.next_id = self.state / "next_id"
        self.inputs = self.state / "inputs"
        self.jobs = self.state / "jobs"
        self.output = self.state / "output"
        self.results = self.state / "results"
        self.claims = self.state / "claims"
        self.attempts = self.state / "attempts"
        self.checkpoints = self.state / "checkpoints"
        self.reports = self.state / "reports"
        self.scripts = self.state / "scripts"
        self.requests = self.state / "requests"
        self.model = self.state / "model"
        self.warpings = self.model / OBJECTIVE_MODEL_DIR / WARPINGS_FILE
        self.model_picture = self.model / OBJECTIVE_MODEL_DIR / PICTURE_FILE
        self.related = self.model / OBJECTIVE_MODEL_DIR / RELATED_FILE
        self.results_csv = self.state / "results.csv"
        self.best_json = self.state / "best.json"
        self.report_html = self.state / "report.html"
        self.log = self.state / "daemon.log"
        self.site_limit = self.state / "site_limit.json"

    def job_dir(self, state: str) -> Path:
        return self.jobs / state

    def job_file(self, state: str, job_id: int) -> Path:
        return self.jobs / state / job_file_name(job_id)

    def input_file(self, job_id: int) -> Path:
        return self.inputs / job_file_name(job_id)

    def result_file(self, job_id: int) -> Path:
        return self.results / job_file_name(job_id)

    def claim_file(self, job_id: int, attempt: int = 1) -> Path:
        """The claim on attempt ``attempt`` of the job: ``000042.json``, then ``000042-2.json``, ..."""
        return self.claims / (job_file_name(job_id) if attempt == 1 else f"{job_id:06d}-{attempt}.json")

    def attempt_file(self, job_id: int, attempt: int) -> Path:
        """The record of attempt ``attempt`` of the job that ended to be resumed: ``000042-1.json``."""
        return self.attempts / f"{job_id:06d}-{attempt}.json"

    def warning_file(self, job_id: int, attempt: int) -> Path:
        """Created by the runner of attempt ``attempt`` when the warning before the time limit came."""
        return self.attempts / f"{job_id:06d}-{attempt}.warned"

    def checkpoint_dir(self, job_id: int) -> Path:
        """The job's checkpoint folder, kept across its attempts: ``checkpoints/000042/``."""
        return self.checkpoints / f"{job_id:06d}"

    def report_file(self, job_id: int) -> Path:
        """The job's learning curve, appended to by the job across its attempts: ``reports/000042.txt``."""
        return self.reports / f"{job_id:06d}.txt"

    def stdout_file(self, job_id: int) -> Path:
        return self.output / f"{job_id:06d}.out"

    def stderr_file(self, job_id: int) -> Path:
        return self.output / f"{job_id:06d}.err"

    def script_file(self, job_id: int) -> Path:
        return self.scripts / f"{job_id:06d}.sh"
