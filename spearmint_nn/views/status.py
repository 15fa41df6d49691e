"""Where a search stands, computed once: the :class:`Snapshot` of an experiment, and ``status``.

A :class:`Snapshot` is built from a job :class:`~spearmint_nn.experiment.store.Store` and the
config, so the live line of ``spearmint-nn run`` (from the daemon's in-memory store),
``status`` and ``status --json``, ``status --watch``, the plots and the HTML report (from the
files) all show the same numbers, and all of them work on a folder copied off a cluster with no
daemon running. :func:`status_summary` is ``status --json`` (schema in the README);
:func:`status_text` is ``status``.
"""
from __future__ import annotations

import socket
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from ..experiment.claims import read_claim
from ..experiment.config import ExperimentConfig, load_config
from ..experiment.failures import FailureGroup, group_failures
from ..experiment.jobs import (DEFAULT_IGNORED_FAILURES, FINAL_STATES, Job, JobState, best_job, best_summary,
                               counts_text, finite_float)
from ..experiment.layout import ExperimentPaths
from ..experiment.lock import daemon_state
from ..experiment.resume import CHECKPOINTED
from ..experiment.store import Store
from ..experiment.summaries import model_best_shown
from ..files import read_json
from ..problem.settings import DIRECTIONS, parse_direction
from ..problem.tasks import DEFAULT_TASK_NAME
from ..problem.space import Space
from ..problem.space_edits import EarlierJobs, outside_line
from ..text import CONTROL_IN_LINES, TERMINAL_SEQUENCES, jobs_text, params_text

RECENT_FAILURES = 5
# Stopped jobs the status text lists (status --json lists them all), the highest ids.
RECENT_STOPPED = 5
# Failure groups in ``status --json``: the largest ones, enough for any real run; thousands of
# failures whose reasons differ in more than numbers would otherwise make the object huge.
JSON_FAILURE_GROUPS = 50
# The status text lists the largest groups, with the last lines of the output of the very
# largest: what a user needs to see why jobs fail, in one screen. ``report --failures`` lists
# every group with all the output kept.
STATUS_FAILURE_GROUPS = 8
STATUS_TAILED_GROUPS = 3
STATUS_TAIL_LINES = 5


def read_model_best(paths: ExperimentPaths, store: Store) -> dict[str, Any] | None:
    """best.json's ``model_best`` (a noisy objective's best by the model's posterior mean, see
    :mod:`spearmint_nn.experiment.layout`), or None when there is none (a noiseless objective, a daemon
    that has not fitted a model yet) or it is malformed.

    Returned as ``{"id", "params", "mean", "std", "value", "observations", "fitted"}``; the
    params come from the job file when best.json leaves them out, and ``std``, ``value``,
    ``observations`` and ``fitted`` are None where unknown.
    """
    summary = read_json(paths.best_json)
    entry = summary.get("model_best") if isinstance(summary, dict) else None
    if not isinstance(entry, dict):
        return None
    job_id, mean = entry.get("id"), finite_float(entry.get("mean"))
    if isinstance(job_id, bool) or not isinstance(job_id, int) or mean is None:
        return None
    job = store.get(job_id)
    params = entry.get("params") if isinstance(entry.get("params"), dict) else (job.params if job else None)
    std = finite_float(entry.get("std"))
    observations = entry.get("observations")
    if isinstance(observations, bool) or not isinstance(observations, int):
        observations = None
    return {"id": job_id, "params": params if isinstance(params, dict) else {}, "mean": mean,
            "std": std if std is not None and std >= 0 else None, "value": finite_float(entry.get("value")),
            "observations": observations, "fitted": finite_float(entry.get("fitted"))}


@dataclass
class Snapshot:
    """The state of one experiment at one instant (read only: a snapshot never writes).

    Attributes
    ----------
    experiment : the experiment folder.
    store : the job store the jobs come from.
    config : the validated config, or None when it does not validate (edited while the search
        ran, or a wrapper missing from a copied folder); ``config_error`` then says why, and
        the snapshot still shows the jobs, without a space, constraints or budget.
    taken_at : unix time of the snapshot.
    last_refit_s : seconds the last model refit took, when the caller knows it.
    """

    experiment: Path
    store: Store
    config: ExperimentConfig | None
    config_error: str | None = None
    taken_at: float = field(default_factory=time.time)
    last_refit_s: float | None = None

    @property
    def name(self) -> str:
        """``experiment-name`` from the config, else the folder name."""
        return self.config.name if self.config else self.experiment.name

    @property
    def space(self) -> Space | None:
        return self.config.space if self.config else None

    @property
    def objective(self) -> str:
        return self.config.objective if self.config else DEFAULT_TASK_NAME

    @property
    def constraints(self) -> tuple[str, ...]:
        return tuple(self.config.constraints) if self.config else ()

    @property
    def direction(self) -> str:
        """"minimize" or "maximize" (the config's ``direction``; minimize without a config)."""
        return self.config.direction if self.config else DIRECTIONS[0]

    @property
    def sign(self) -> float:
        """1 when lower objective values are better, -1 when higher are."""
        return parse_direction(self.direction)

    @property
    def better(self) -> str:
        """"lower" or "higher": which values are better, for labels."""
        return "lower" if self.sign > 0 else "higher"

    @property
    def budget(self) -> int | None:
        """``max-finished-jobs`` (None: no budget)."""
        return self.config.max_finished_jobs if self.config else None

    @property
    def concurrency(self) -> int | None:
        return self.config.max_concurrent if self.config else None

    @cached_property
    def jobs(self) -> list[Job]:
        """Every job, ordered by id."""
        return self.store.jobs()

    def in_state(self, state: JobState | str) -> list[Job]:
        return [job for job in self.jobs if job.state == state]

    @cached_property
    def counts(self) -> dict[str, int]:
        """Number of jobs per state name, every state present."""
        counts = {state.value: 0 for state in JobState}
        for job in self.jobs:
            counts[job.state.value] += 1
        return counts

    @cached_property
    def finished(self) -> list[Job]:
        """Complete and failed jobs in order of completion (``finished`` time, then id): the
        evaluations the plots draw (a job stopped early has no value, and is no failure)."""
        done = [job for job in self.jobs if job.state in (JobState.COMPLETE, JobState.FAILED)]
        return sorted(done, key=lambda job: (job.finished or 0.0, job.id))

    @property
    def ignored_failures(self) -> frozenset[str] | tuple[str, ...]:
        return self.config.ignored_failures if self.config else DEFAULT_IGNORED_FAILURES

    @cached_property
    def any_success(self) -> bool:
        """Whether a job has completed: until then failures of the wrapper's code are held back."""
        return any(job.state is JobState.COMPLETE for job in self.finished)

    def is_counted(self, job: Job) -> bool:
        """Whether a finished job counts against ``max-finished-jobs`` as the daemon counts it."""
        return job.counts_toward_budget(self.ignored_failures) and not job.held_back(self.any_success)

    @cached_property
    def budget_used(self) -> int:
        """Finished jobs that count against ``max-finished-jobs`` (not cancelled, held back, ...),
        by the store's count, the daemon's."""
        return self.store.finished_count(self.ignored_failures)

    def is_feasible(self, job: Job) -> bool:
        """A complete job with an objective value and every constraint value >= 0."""
        return job.is_feasible(self.objective, self.constraints)

    @cached_property
    def best(self) -> Job | None:
        """The feasible complete job with the best objective value (ties: lowest id)."""
        return best_job(self.jobs, self.objective, self.constraints, self.direction)

    @cached_property
    def daemon(self) -> dict[str, Any]:
        """Who last ran the daemon and whether it still runs (:func:`~..experiment.lock.daemon_state`)."""
        return daemon_state(ExperimentPaths(self.experiment))

    @cached_property
    def model_best(self) -> dict[str, Any] | None:
        """The best by the model's posterior mean, for a noisy objective (see :func:`read_model_best`),
        once enough jobs have completed (:func:`~..experiment.summaries.model_best_shown`; a
        best.json written before the rule may hold one from fewer)."""
        best = read_model_best(ExperimentPaths(self.experiment), self.store)
        return best if best is not None and model_best_shown(best, self.counts["complete"], self.space) else None

    @cached_property
    def failure_groups(self) -> list[FailureGroup]:
        """Failed jobs grouped by how they failed, the largest group first."""
        return group_failures(self.jobs)

    @cached_property
    def outside_variables(self) -> dict[str, Any]:
        """Finished jobs that count against the budget but lie outside the current variables (an
        edit of them since they ran), so the model is not shown them: ``{"jobs": n, "reasons":
        {reason: jobs}}`` (see :mod:`spearmint_nn.problem.space_edits`)."""
        if self.space is None:
            return {"jobs": 0, "reasons": {}}
        earlier = EarlierJobs(self.space)
        for job in self.finished:
            if job.counts_toward_budget(self.ignored_failures):
                earlier.fit(job.params)
        return {"jobs": earlier.outside, "reasons": dict(earlier.reasons.most_common())}

    @cached_property
    def feasibility(self) -> dict[str, int]:
        """Finished jobs as the constraint model sees them: feasible, infeasible (complete but a
        constraint < 0), failed (an infeasible observation of "job success") and ignored (failed
        for a reason that says nothing about the point, the config's ``ignore-failures``, or held
        back until a job succeeds)."""
        counts = {"feasible": 0, "infeasible": 0, "failed": 0, "ignored": 0}
        for job in self.finished:
            if job.state is JobState.COMPLETE:
                counts["feasible" if self.is_feasible(job) else "infeasible"] += 1
            elif job.state is JobState.FAILED:  # (a stopped job is no observation of either model)
                counts["failed" if self.is_counted(job) else "ignored"] += 1
        return counts

    def durations(self) -> list[float]:
        """Observed wall-clock durations (seconds) of finished jobs that report one."""
        return [d for d in (job.duration for job in self.finished) if d is not None and d >= 0]

    def eta_seconds(self) -> float | None:
        """Seconds until the budget is spent, from the mean observed duration; None when unknown.

        Running jobs are assumed to need the mean duration minus their age; the jobs still to
        start share ``max-concurrent`` slots.
        """
        durations = self.durations()
        if self.budget is None or not durations:
            return None
        remaining = max(self.budget - self.budget_used, 0)
        if remaining == 0:
            return 0.0
        mean = sum(durations) / len(durations)
        running = self.in_state(JobState.RUNNING)[:remaining]
        slots = self.concurrency or max(len(running), 1)
        busy = sum(max(mean - (self.taken_at - (job.submitted or self.taken_at)), 0.0) for job in running)
        return (busy + (remaining - len(running)) * mean) / slots

    @property
    def search_is_over(self) -> bool:
        """The budget is spent and no job is pending or running."""
        return (self.budget is not None and self.budget_used >= self.budget
                and self.counts["pending"] == 0 and self.counts["running"] == 0)


def take_snapshot(experiment_dir: str | Path, last_refit_s: float | None = None) -> Snapshot:
    """Read the experiment's config and job files (nothing is written, no lock is taken)."""
    paths = ExperimentPaths(experiment_dir)
    store = Store(paths).load_all()
    try:
        config, error = load_config(paths.experiment, check_driver=False), None
    except ConfigError as exc:
        config, error = None, str(exc)
    return Snapshot(paths.experiment, store, config, config_error=error, last_refit_s=last_refit_s)


# ---- status and status --json ----------------------------------------------------------------

def status_summary(snap: Snapshot) -> dict[str, Any]:
    """The object printed by ``status --json`` (schema in the README); the snapshot's config
    must be valid."""
    config, now = snap.config, time.time()
    failed = snap.in_state(JobState.FAILED)
    recent = sorted(failed, key=lambda j: j.fields.get("finished", 0))[-RECENT_FAILURES:]
    groups = snap.failure_groups
    durations = snap.durations()  # once, not once per running job: each reads every finished job
    return {
        "experiment": str(config.paths.experiment),
        "name": config.name,
        "daemon": snap.daemon,
        "counts": snap.counts,
        "finished": snap.budget_used,
        "max_finished_jobs": config.max_finished_jobs,
        "max_concurrent": config.max_concurrent,
        "objective": config.objective,
        "direction": config.direction,
        "best": best_summary(snap.best) if snap.best else None,
        "model_best": snap.model_best,
        # finished: its result file is there, not yet recorded (no daemon ran since, or the daemon
        # reads it at its next wake): a killed daemon's jobs must not read as running for hours
        "running": [{"id": j.id, "scheduler_id": j.scheduler_id, "driver": j.driver,
                     "age_s": round(now - j.fields.get("submitted", now), 1), "attempt": running_attempt(snap, j),
                     "finished": snap.store.paths.result_file(j.id).exists(),
                     "overdue": overdue(now - j.fields.get("submitted", now), durations),
                     **curve_fields(j)} for j in snap.in_state(JobState.RUNNING)],
        "stopped": [stopped_fields(j) for j in snap.in_state(JobState.STOPPED)],
        "attempts": attempt_counts([j for j in snap.jobs if j.state in FINAL_STATES]),
        "recent_failures": [{"id": j.id, "failure": j.failure, "reason": j.reason} for j in recent],
        "feasibility": snap.feasibility,
        "outside_variables": snap.outside_variables,
        "failures_by_kind": failures_by_kind(failed),
        "failure_groups": [group.as_dict() for group in groups[:JSON_FAILURE_GROUPS]],
        "failure_group_count": len(groups),
        "related": read_related_summary(config),
        # a stopped daemon's file says nothing of now
        "site_limit": read_site_limit(snap.store.paths) if snap.daemon["running"] is not False else None,
        "config_error": read_config_error(snap.store.paths) if snap.daemon["running"] is not False else None,
    }


def read_config_error(paths: ExperimentPaths) -> dict[str, Any] | None:
    """Why the running daemon submits nothing: config.json does not validate since ``since``
    (layout: config-error.json), ``{"error", "since"}``; None when it validates."""
    data = read_json(paths.config_error)
    if not isinstance(data, dict) or not isinstance(data.get("error"), str):
        return None
    return {"error": data["error"], "since": data.get("since")}


def config_error_line(config_error: Mapping[str, Any] | None) -> list[str]:
    """The hold on submissions while config.json does not validate, for status."""
    if not config_error:
        return []
    since = config_error["since"]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)) if isinstance(since, (int, float)) else "?"
    return [f"submitting nothing since {when}: config.json does not validate ({config_error['error']}); the "
            f"running jobs go on with the settings the daemon read at its start; fix the file and it goes on"]


def read_site_limit(paths: ExperimentPaths) -> dict[str, Any] | None:
    """The site's limits as the daemon last wrote them (layout: site_limit.json):
    ``{"held": {"in_flight", "since", "message"} | None, "queued": {"jobs", "reason"} | None}``;
    None when neither holds (spearmint_nn.daemon.policies.site_limits)."""
    data = read_json(paths.site_limit)
    if not isinstance(data, dict):
        return None
    held, queued = data.get("held"), data.get("queued")
    held = {key: held.get(key) for key in ("in_flight", "since", "message")} if isinstance(held, dict) else None
    queued = {key: queued.get(key) for key in ("jobs", "reason")} if isinstance(queued, dict) else None
    return {"held": held, "queued": queued} if held or queued else None


def site_limit_lines(site_limit: Mapping[str, Any] | None, max_concurrent: int | None) -> list[str]:
    """What holds the daemon back at the site's limits, for status."""
    if not site_limit:
        return []
    lines = []
    held, queued = site_limit["held"], site_limit["queued"]
    if held:
        since = held["since"]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)) if isinstance(since, (int, float)) else "?"
        lines.append(f"site limit: the scheduler takes no more jobs since {when}; {held['in_flight']} in flight "
                     f"(max-concurrent {max_concurrent}), no job fails for it: {held['message']}")
    if queued:
        lines.append(f"site limit: {queued['jobs']} job(s) wait in the queue for a limit of the site "
                     f"({queued['reason']})")
    return lines


# A running job is overdue once it has run this many times the longest finished job, and at least
# OVERDUE_MIN_S, with OVERDUE_MIN_JOBS finished jobs to compare with: a hung job (a deadlocked data
# loader) holds its slot until its time limit, 24 h by default on the local driver, and nothing
# else would tell the user.
OVERDUE_FACTOR = 3.0
OVERDUE_MIN_S = 60.0
OVERDUE_MIN_JOBS = 3


def overdue(age_s: float, durations: list[float]) -> bool:
    """Whether a running job of ``age_s`` seconds is far past the finished jobs' ``durations``."""
    return (len(durations) >= OVERDUE_MIN_JOBS and age_s >= OVERDUE_MIN_S
            and age_s > OVERDUE_FACTOR * max(durations))


def curve_fields(job: Job) -> dict[str, Any]:
    """A running job's progress as the daemon last read its reports (layout: ``reports``,
    ``last_step``, ``last_value``): 0 reports and nulls before the first."""
    reports = job.fields.get("reports")
    reports = reports if isinstance(reports, int) and not isinstance(reports, bool) else 0
    step = job.fields.get("last_step")
    return {"reports": reports, "last_step": step if _is_number(step) else None,
            "last_value": finite_float(job.fields.get("last_value"))}


def stopped_fields(job: Job) -> dict[str, Any]:
    """A job early stopping stopped, for ``status --json``: its curve's summary and why."""
    return {"id": job.id, **curve_fields(job), "stopped_reason": job.fields.get("stopped_reason")}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def curve_text(running: Mapping[str, Any]) -> str:
    """``  step 12: 0.4321 (12 reports)`` for a running job that reported, else ""."""
    if not running.get("reports") or running.get("last_value") is None:
        return ""
    step = running["last_step"]
    step = f"{step:g}" if isinstance(step, float) else str(step)
    return f"  step {step}: {running['last_value']:.6g} ({running['reports']} reports)"


def running_attempt(snap: Snapshot, job: Job) -> int | None:
    """The attempt a running job is on, by its latest claim; None before its runner started."""
    claim = read_claim(snap.store.paths, job.id)
    return claim.get("attempt", 1) if claim is not None else None


def attempts_text(counts: Mapping[str, int]) -> str:
    """:func:`attempt_counts` in words, for status and the report."""
    parts = [f"{counts['interrupted_jobs']} job(s) interrupted by the cluster (requeued, preempted, a failed "
             f"node) and run again"] if counts["interrupted_jobs"] else []
    if counts["resumed_jobs"]:
        parts.append(f"{counts['resumed_jobs']} job(s) stopped at their own checkpoint and resumed")
    return f"{counts['total']} runs of the finished jobs; " + "; ".join(parts)


def attempt_counts(finished: list[Job]) -> dict[str, int]:
    """Runs of the finished jobs (``total``); how many of them the cluster interrupted and ran
    again (``interrupted_jobs``), and how many ran again only because they stopped at their own
    checkpoint to be resumed (``resumed_jobs``: the wrapper's choice, not the cluster's). A job
    whose runner did not list its attempts ran once."""
    counts = {"total": 0, "interrupted_jobs": 0, "resumed_jobs": 0}
    for job in finished:
        runs = job.attempts or 1
        counts["total"] += runs
        if runs > 1:
            earlier = [attempt.get("outcome") for attempt in job.fields["attempts"][:-1] if isinstance(attempt, dict)]
            resumed = bool(earlier) and all(outcome == CHECKPOINTED for outcome in earlier)
            counts["resumed_jobs" if resumed else "interrupted_jobs"] += 1
    return counts


def read_related_summary(config: ExperimentConfig) -> list[dict[str, Any]] | None:
    """What each of ``related-experiments`` gives the model, as the daemon last wrote it
    (layout: related.json), or each folder's name alone before it has; None without any."""
    if not config.related_experiments:
        return None
    written = read_json(config.paths.related)
    if isinstance(written, dict) and isinstance(written.get("related"), list):
        return written["related"]
    return [{"name": name, "observations": None, "used": None, "correlation": None}
            for name in config.related_experiments]


def failures_by_kind(failed: list[Job]) -> dict[str, int]:
    """Failed jobs per failure kind, the most frequent first."""
    return dict(Counter(job.failure or "unknown" for job in failed).most_common())


def status_text(summary: dict[str, Any]) -> str:
    """``spearmint-nn status``: the :func:`status_summary` for a person."""
    daemon = summary["daemon"]
    age = daemon.get("heartbeat_age_s")
    beat = "" if age is None else f", heartbeat {age:.0f} s ago"
    if daemon["running"]:
        who = f"running (host {daemon['host']}, pid {daemon['pid']}{beat})"
    elif daemon["running"] is None:
        who = f"last started on host {daemon['host']} (pid {daemon['pid']}), state unknown from here"
    elif age is not None and daemon.get("host") != socket.gethostname():
        who = f"not running (last heartbeat from host {daemon['host']} pid {daemon['pid']}, {age:.0f} s ago)"
    else:
        who = "not running"
    counts = summary["counts"]
    budget = summary["max_finished_jobs"]
    lines = [f"experiment {summary['name']} ({summary['experiment']}); daemon {who}",
             "jobs: " + counts_text(counts)
             + f"; {summary['finished']}/{budget if budget is not None else 'unlimited'} finished"]
    lines += _best_lines(summary)
    feas = summary["feasibility"]
    lines.append(f"feasible: {feas['feasible']}, infeasible (constraint < 0): {feas['infeasible']}, "
                 f"failed: {feas['failed']}, failed but not about the point: {feas['ignored']}")
    outside = outside_line(summary["outside_variables"]["jobs"], summary["outside_variables"]["reasons"])
    if outside:
        lines.append(outside)
    lines += related_lines(summary.get("related"))
    if summary["attempts"]["interrupted_jobs"] or summary["attempts"]["resumed_jobs"]:
        lines.append(f"attempts: {attempts_text(summary['attempts'])}")
    lines += site_limit_lines(summary.get("site_limit"), summary.get("max_concurrent"))
    lines += config_error_line(summary.get("config_error"))
    if summary["running"]:
        lines.append("running:")
        waiting = "the daemon records it at its next poll" if summary["daemon"]["running"] else \
            "run the daemon to record it"
        lines += [f"  job {r['id']:>6}  {r['driver']} {r['scheduler_id']}  age {r['age_s']:.0f} s"
                  + (f"  attempt {r['attempt']}" if (r["attempt"] or 1) > 1 else "") + curve_text(r)
                  + (f"  finished: its result is there ({waiting})" if r["finished"] else "")
                  + (f"  (over {OVERDUE_FACTOR:g} x the longest finished job: hung? `spearmint-nn cancel` "
                     f"ends it)" if r["overdue"] and not r["finished"] else "")
                  for r in summary["running"]]
    if summary.get("stopped"):
        stopped = summary["stopped"]
        lines.append(f"stopped early: {len(stopped)} job(s)" + (f", the last {RECENT_STOPPED}:" if
                                                                 len(stopped) > RECENT_STOPPED else ""))
        lines += [f"  job {r['id']:>6}{curve_text(r)}  {r['stopped_reason'] or ''}" for r in stopped[-RECENT_STOPPED:]]
    if summary["failure_groups"]:
        shown = summary["failure_groups"][:STATUS_FAILURE_GROUPS]
        lines.append(failures_heading(summary["failures_by_kind"], summary["failure_group_count"]))
        lines += failure_group_lines(shown, STATUS_TAILED_GROUPS, STATUS_TAIL_LINES)
        more = summary["failure_group_count"] - len(shown)
        if more:
            jobs = summary["counts"]["failed"] - sum(g["count"] for g in shown)
            lines.append(f"  ... {more} more group(s) with {jobs} job(s): "
                         f"spearmint-nn report {summary['experiment']} --failures lists them all")
    return "\n".join(lines)


def related_lines(related: list[dict[str, Any]] | None) -> list[str]:
    """One line per related experiment: its jobs in the model and its learned correlation."""
    if not related:
        return []
    return (["related experiments (correlation with this one, posterior mean \u00b1 sd):"]
            + [f"  {task['name']}: {related_text(task)}" for task in related])


def related_text(task: dict[str, Any]) -> str:
    """What one related experiment gives the model, from its entry of related.json."""
    if task["observations"] is None:
        return "not read yet (the daemon reads it when it starts)"
    used = "" if task["used"] == task["observations"] else f", {task['used']} used by the model"
    corr = task["correlation"]
    learned = "not modelled yet" if corr is None else f"correlation {corr[0]:+.2f} \u00b1 {corr[1]:.2f}"
    return f"{task['observations']} finished jobs{used}; {learned}"


def _best_lines(summary: dict[str, Any]) -> list[str]:
    """The best job; for a noisy objective also the model's best, each labelled as what it is
    (the best observation of a noisy objective is its luckiest draw, not its best point)."""
    best, by_model, objective = summary["best"], summary.get("model_best"), summary["objective"]
    if not best:
        return ["best: no complete job yet"]
    label = "best observed (luckiest draw)" if by_model else "best"
    lines = [f"{label}: {objective} = {best['value']:.6g} (job {best['id']}) {params_text(best['params'])}"]
    if by_model:
        spread = f" +- {by_model['std']:.3g}" if by_model["std"] is not None else ""
        notes = [f"job {by_model['id']}"]
        if by_model["value"] is not None:
            notes.append(f"observed there {by_model['value']:.6g}")
        if by_model["observations"] is not None:
            notes.append(f"model of {by_model['observations']} observations")
        lines.append(f"best by the model's posterior mean: {objective} = {by_model['mean']:.6g}{spread} "
                     f"({'; '.join(notes)}) {params_text(by_model['params'])}")
        if by_model["id"] != best["id"]:
            # a new user's stand-in objective is deterministic: two different best jobs need a
            # reason (one job's mean beside its observation is said on the line above)
            lines.append(f"  (two bests: {objective} is modelled as noisy, \"likelihood\": \"GAUSSIAN\", so its "
                         "lowest observation may be a lucky draw; a deterministic objective wants \"NOISELESS\")")
    return lines


def failures_heading(by_kind: dict[str, int], n_groups: int) -> str:
    kinds = ", ".join(f"{kind} {n}" for kind, n in by_kind.items())
    return (f"failures: {sum(by_kind.values())} job(s) ({kinds}) in {n_groups} group(s) "
            "of the same kind, reason and place:")


def failure_group_lines(groups: list[dict[str, Any]], tailed: int | None = None,
                        tail_lines: int = 1000) -> list[str]:
    """Failure groups (``FailureGroup.as_dict()``, largest first) as text, one line per group;
    under the first ``tailed`` groups (None: all) the last ``tail_lines`` lines of the job's
    output, where the real reason of a failure usually is (a wrapper that caught its own
    exception and returned NaN printed the traceback there)."""
    lines = []
    for rank, group in enumerate(groups):
        jobs = jobs_text(group["jobs"])
        where = f" at {group['location']}" if group["location"] else ""
        reason = group["reason"] or "no reason recorded"
        lines.append(f"  {group['count']:>5} x {group['kind']}{where}: {reason} ({jobs})")
        if tailed is None or rank < tailed:
            lines += [f"          | {line}" for line in printable_tail(group["output_tail"] or "", tail_lines)]
    return lines


def printable_tail(text: str, max_lines: int) -> list[str]:
    """The last ``max_lines`` non-empty lines of a job's output, as a terminal showed them: a
    line redrawn with carriage returns (a progress bar) keeps its last drawing, and control
    sequences are dropped."""
    lines = [CONTROL_IN_LINES.sub("", TERMINAL_SEQUENCES.sub("", line.rstrip("\r").rsplit("\r", 1)[-1])).rstrip()
             for line in text.split("\n")]
    return [line for line in lines if line.strip()][-max_lines:] if max_lines > 0 else []

