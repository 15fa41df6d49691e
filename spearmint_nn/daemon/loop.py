"""The experiment daemon: proposes jobs, hands them to a driver, records what they return.

One main thread owns the store (it alone writes ``jobs/``). It sleeps until something happens:
a file event in ``results/``, ``jobs/pending/`` or ``requests/``
(:mod:`~spearmint_nn.daemon.file_events`, the fast path on one machine), the periodic driver
poll every ``polling-time`` seconds (what guarantees progress on NFS, where inotify misses other
machines' writes), a finished proposal, or a stop signal
(:mod:`~spearmint_nn.daemon.signals`). Each wake handles everything that is ready at once, so
ten jobs finishing together are ten records and one refit.

Proposals run in a background thread (:class:`~spearmint_nn.daemon.proposer.Proposer`); every
event is one plain line through :class:`~spearmint_nn.daemon.event_log.EventLog` (console and
``daemon.log``); the summaries are rewritten by :class:`~spearmint_nn.daemon.summaries.SummaryWriter`;
jobs are handed to the driver, and failed submissions retried, by
:class:`~spearmint_nn.daemon.submitter.Submitter`, as many as the site's limits let in
(:class:`~spearmint_nn.daemon.site_limits.SiteLimits`); interrupted jobs are submitted again as
their next attempt (:mod:`~spearmint_nn.daemon.reattempts`); running jobs' curves are read by
:class:`~spearmint_nn.daemon.progress_reports.ProgressReports` and judged by
:class:`~spearmint_nn.daemon.early_stopping.EarlyStopping`; result files are read as
:class:`~spearmint_nn.experiment.results.JobResult`; failures that repeat are counted by
:class:`~spearmint_nn.experiment.failures.FailureStreak`, and failures before any success are held
back or recorded as a wrapper bug by :class:`~spearmint_nn.daemon.before_success.FailuresBeforeSuccess`
(the budget's count: :meth:`~spearmint_nn.experiment.store.Store.finished_count`).
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..drivers.base import PollError
from ..errors import ConfigError
from ..experiment.config import LIVE_KEYS, ExperimentConfig, load_config
from ..experiment.jobs import AWAITING_RESULT, SCHEDULER_FAILURES, JobState, best_job, counts_text
from ..experiment.lock import LOST_EXIT, hold_for_daemon, lost_line
from ..experiment.results import JobResult
from ..experiment.store import Store
from . import reattempts
from .driving import cancel_requests
from .file_events import watch
from .proposer import PROPOSER_JOIN_SECONDS, Proposer
from .event_log import EventLog
from .signals import StopSignals
from .wrapper_check import check_wrapper_before_jobs

if TYPE_CHECKING:  # the builder imports this module to make the daemon it builds
    from .build import DaemonParts

# Points asked of the optimizer at once. The GP proposes them one after another (~1 s each), so
# 800 free slots asked in one call would start no job for minutes; in chunks the first jobs start
# after a few seconds, and each later chunk treats the earlier ones as pending all the same. DNGO
# chooses a batch at once (~0.01 s a point): asked 10 at a time it would fall behind a large
# cluster's completions. So a chunk is as many points as the last proposal's pace fits into
# PROPOSAL_SECONDS, and at least PROPOSAL_CHUNK.
PROPOSAL_CHUNK = 10
PROPOSAL_SECONDS = 5.0
# Points proposed ahead, kept in memory for the next free slot, which then gets a job at once
# instead of after a refit and a proposal (2 local slots, 3-5 s jobs, the GP: 87-90% busy without,
# 95-97% with; RESULTS.md). One covers the completion that frees a slot while the model works;
# each more would miss one more result and add to the jobs in flight the optimizer counts.
READY_POINTS = 1


def _params_problem(config: ExperimentConfig, params: Any) -> str | None:
    """Why params do not fit the config's variables, or None when they do."""
    try:
        config.space.validate(params)
    except ConfigError as exc:
        return str(exc)
    return None


# ---- the daemon ------------------------------------------------------------------------------

class Daemon:
    """``spearmint-nn run``: see the module docstring. Build, then :meth:`run` (returns an exit code)."""

    def __init__(self, parts: "DaemonParts", cancel_on_exit: bool = False,
                 on_start: Callable[[EventLog, Store], None] | None = None):
        self.config, self.paths = parts.config, parts.config.paths
        self.cancel_on_exit = cancel_on_exit
        self._on_start = on_start  # called with the reporter and the store, e.g. by a live progress line
        self.optimizer, self.driver, self.store = parts.optimizer, parts.driver, parts.store
        self.reporter, self.summaries = parts.reporter, parts.summaries
        self._submitter, self._site_limits = parts.submitter, parts.site_limits
        self._curves, self._early, self._late = parts.curves, parts.early_stopping, parts.late_results
        self._ends = parts.ends
        self._proposer: Proposer | None = None
        self._wake = threading.Event()
        self._stop = StopSignals(self._wake)  # SIGINT/SIGTERM, and SIGUSR1 before a batch job's time limit
        self._ended_seen: dict[int, float] = {}     # job id -> when the driver first said "ended"
        # Points for the next free slots, (params as in a job file, job-file fields): no job file
        # until a slot takes one, so a killed daemon loses and repeats nothing.
        self._ready: list[tuple[dict[str, list], dict[str, Any]]] = []
        self._config_mtime = self._read_config_mtime()

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> int:
        # First: a time-limit warning that comes while the daemon starts must still end in a clean stop.
        self._stop.install()
        try:
            return self._run()
        finally:
            self._stop.restore()
            self.reporter.close()  # (it took over the package's logger when it was built)

    def _run(self) -> int:
        warning = check_wrapper_before_jobs(self.config, self.driver)  # before anything is written
        self.paths.state.mkdir(parents=True, exist_ok=True)  # for the lock; the rest once it is ours
        lock = self._lock = hold_for_daemon(self.paths, lambda: (self.config.polling_time, self.config[
            "daemon-heartbeat-timeout"]), self._wake.set)  # spearmint_nn.experiment.lock
        self.store.create_dirs()
        self._site_limits.forget_previous()
        for line in (warning, lock.took_over):  # a wrapper to fix; a daemon elsewhere taken for dead
            if line is not None:
                self.reporter.event("warning", line)
        if self._on_start is not None:
            self._on_start(self.reporter, self.store)
        noisy = self.config.tasks.likelihoods[self.config.objective] == "GAUSSIAN"
        self._proposer = Proposer(self.optimizer, self.reporter, self._wake, noisy=noisy,
                                  warpings_file=self.paths.warpings, picture_file=self.paths.model_picture,
                                  related_file=self.paths.related)
        self._ends.tell = self._proposer.observe  # the model listens from now on
        observer = None
        try:
            self._load()
            self._ends.replay(self.store.jobs((JobState.COMPLETE, JobState.FAILED, JobState.STOPPED)))
            self._resume()
            observer = watch((self.paths.results, self.paths.job_dir(JobState.PENDING), self.paths.requests),
                             self._wake, lambda why: self.reporter.event("warning", f"{why}; relying on polling "
                                                                         f"every {self.config.polling_time:g} s"))
            return self._loop()
        finally:
            if observer is not None:
                observer.stop()
            self._proposer.close()
            lock.release()

    def _load(self) -> None:
        config, store = self.config, self.store
        self.reporter.event("started", f"experiment {config.name} in {self.paths.experiment}: "
                            f"driver {self.driver.describe()}, model {config['model']}, "
                            f"max-concurrent {config.max_concurrent}, max-finished-jobs {config.max_finished_jobs}, "
                            f"pid {os.getpid()}")
        asked = config.raw.get("max-concurrent")
        if isinstance(asked, int) and asked > config.max_concurrent:
            self.reporter.event("warning", f"max-concurrent {asked} is more than the {config.max_concurrent} GPU slots "
                                           f"of driver.gpus: {config.max_concurrent} jobs run at once")
        for task in self.optimizer.related:
            self.reporter.event("related", f"learning from related experiment {task.name}: "
                                           f"{len(task)} successful jobs, read as of now")
        store.load_all(repair=True)
        for problem in store.problems:
            self.reporter.event("warning", problem)

    def _resume(self) -> None:
        """Finish what a previous daemon left half done, and check jobs it left in flight."""
        config, store = self.config, self.store
        for job in store.resume_intakes(config):
            self._ends.arrived(job)
        for job in store.jobs(JobState.PENDING):
            problem = _params_problem(config, job.params)
            if problem is not None:
                self._ends.fail(job.id, "bad_params", problem)
        for job in store.jobs(JobState.RUNNING):
            if job.scheduler_id is None:
                self._resume_submission(job.id)
            elif job.driver == self.driver.name:
                self.reporter.event("adopted", f"job {job.id} running as {self.driver.name} {job.scheduler_id}",
                                    job=job.id)
            else:
                self.reporter.event("warning", f"job {job.id} was submitted with driver {job.get('driver')}, "
                                    f"not {self.driver.name}: its result is collected when it appears")
        counts = store.counts()
        self.reporter.event("state", counts_text(counts) + f"; next job id {store.next_id}")

    def _resume_submission(self, job_id: int) -> None:
        if not self.paths.result_file(job_id).exists() and not self._submitter.resume(job_id):
            self._submit(job_id)  # (a job that ran is recorded by the loop)

    def _loop(self) -> int:
        next_poll = 0.0
        self.summaries.mark_stale()  # a killed daemon may have left them behind the job files
        while True:
            lost = self._lock.problem()
            if lost is not None:  # another daemon took the folder over: stop, writing nothing more
                self.reporter.console(lost_line(self.paths, lost))
                return LOST_EXIT
            changed = self._intake()
            changed |= self._collect_results()
            if time.monotonic() >= next_poll:
                changed |= self._take_late_results()  # first: its listing of results/ refreshes NFS's view
                changed |= self._poll_driver()
                changed |= self._curves.poll() and bool(self._stop_early())  # (stopped jobs: results.csv)
                self._reload_config()
                next_poll = time.monotonic() + self.config.polling_time
            changed |= self._handle_requests()
            self._take_proposal()
            if changed:
                self.summaries.mark_stale()
            self.summaries.write_if_due()
            if self._stop.stopping:
                return self._shutdown(self._stop.why(), exit_code=self._stop.exit_code())
            if self._ends.failing_the_same_way is not None:
                return self._shutdown(self._ends.stop_message(self._ends.failing_the_same_way), exit_code=1)
            if self.config.max_finished_jobs is not None and self._finished() >= self.config.max_finished_jobs:
                self._take_model_best(self._proposer.final_model_best(PROPOSER_JOIN_SECONDS))
                return self._shutdown("budget reached")
            self._submit_pending()
            self._ask()
            timeout = max(0.0, next_poll - time.monotonic())
            summary_due = self.summaries.seconds_until_due()
            self._wake.wait(timeout if summary_due is None else min(timeout, summary_due))
            self._wake.clear()

    def _shutdown(self, why: str, exit_code: int = 0) -> int:
        store = self.store
        if self._stop.cancels_jobs(self.cancel_on_exit):
            ids = [j.id for j in store.jobs((JobState.PENDING, JobState.RUNNING))]
            self._ends.cancel(ids, "cancelled at daemon exit (--cancel-on-exit)")
        self.summaries.write()
        counts = store.counts()
        best = best_job(store.jobs(JobState.COMPLETE), self.config.objective, self.config.constraints,
                        self.config.direction)
        best_text = f"best {best.value:.6g} (job {best.id})" if best else "no complete job yet"
        left = ""
        if counts["running"] or counts["pending"]:
            left = (f"; {counts['running']} running and {counts['pending']} pending job(s) left as they are "
                    f"(run again to collect them)")
        self.reporter.event("stopped", f"{why}: {self._finished()} finished, {best_text}{left}")
        return exit_code

    # -- config.json edited while running -----------------------------------------------------

    def _read_config_mtime(self) -> float | None:
        try:
            return self.paths.config.stat().st_mtime
        except OSError:
            return None

    def _reload_config(self) -> None:
        """Take up a changed config.json: :data:`LIVE_KEYS` now, any other change is reported
        as needing a restart (a new space or model cannot be swapped under a running search)."""
        mtime = self._read_config_mtime()
        if mtime == self._config_mtime:
            return
        self._config_mtime = mtime
        try:
            new = load_config(self.paths.experiment, driver_override=self.config.driver_name, check_driver=False)
        except ConfigError as exc:
            self.reporter.event("warning", f"config.json changed but does not validate ({exc}); "
                                f"going on with the settings read before")
            return
        changed = [key for key in new.values if new.values[key] != self.config.values[key]]
        live = [key for key in changed if key in LIVE_KEYS]
        later = [key for key in changed if key not in LIVE_KEYS]
        if live:
            values = {**self.config.values, **{key: new.values[key] for key in live}}
            self.config = dataclasses.replace(self.config, values=values)
            self.reporter.event("config", "config.json changed: now " + ", ".join(
                f"{key} {values[key]}" for key in live))
            if "max-finished-jobs" in live:
                self._proposer.set_budget(self.config.max_finished_jobs)
            if "stop-after-identical-failures" in live:
                self._ends.streak.limit = self.config.stop_after_identical_failures
        if later:
            self.reporter.event("warning", f"config.json changed {', '.join(later)}: noticed but not applied "
                                f"while running; stop the daemon and run again for that")

    # -- budget ------------------------------------------------------------------------------

    def _budget_left(self) -> int | None:
        """Evaluations still to start: max-finished-jobs - finished - in flight - held back (None: no limit)."""
        if self.config.max_finished_jobs is None:
            return None
        counts = self.store.counts()
        in_flight = counts["pending"] + counts["running"]
        # Failures held back count once a job succeeds, so jobs start as if they counted already;
        # but one at a time past that, or a small budget would hide a wrapper bug forever.
        held = len(self._ends.before_success.held_back)
        finished = self._finished()
        left = self.config.max_finished_jobs - finished - in_flight - held
        if left <= 0 and held and not in_flight and finished < self.config.max_finished_jobs:
            return 1
        return left

    def _finished(self) -> int:
        """Finished jobs that count against max-finished-jobs (held-back failures do not, yet)."""
        return self.store.finished_count(self.config.ignored_failures)

    def _free_slots(self) -> int:
        counts = self.store.counts()
        running = counts["running"]
        slots = self._site_limits.target(self.config.max_concurrent, running) - counts["pending"] - running
        budget = self._budget_left()
        return slots if budget is None else min(slots, budget)

    # -- proposing ---------------------------------------------------------------------------

    def _ready_to_keep(self) -> int:
        """How many proposed points may wait beyond the free slots: READY_POINTS, less where the
        budget has no room for them, none in a sequential search (max-concurrent 1: its point
        would be chosen without the result of the one job running, a batch of two in effect)."""
        if self.config.max_concurrent < 2:
            return 0
        budget = self._budget_left()
        room = READY_POINTS if budget is None else budget - max(0, self._free_slots())
        return max(0, min(READY_POINTS, room))

    def _ask(self) -> None:
        proposer = self._proposer
        if proposer.busy or self._stop.stopping:
            return
        pace = proposer.seconds_per_point
        chunk = PROPOSAL_CHUNK if pace is None else max(PROPOSAL_CHUNK, int(PROPOSAL_SECONDS / max(pace, 1e-3)))
        # Free slots took the ready points first (_take_proposal): those left are beyond them.
        n = min(max(0, self._free_slots()) + self._ready_to_keep() - len(self._ready), chunk)
        if n > 0:
            # The ready points are pending too: the next points spread away from them.
            in_flight = [job.params for job in self.store.jobs((JobState.PENDING, JobState.RUNNING))]
            # Points whose failure is held back, and stopped ones, were tried: the optimizer has not
            # seen them, and must not propose them again (README, "Early stopping").
            tried = self._ends.unshown_points()
            in_flight += [params for params in tried if _params_problem(self.config, params) is None]
            proposer.request(n, in_flight + [params for params, _ in self._ready])

    def _take_proposal(self) -> None:
        """Add a finished proposal to the ready points, give each free slot one as a pending job
        (user points in jobs/pending hold theirs already), and drop those beyond _ready_to_keep:
        never run, and never held by the optimizer (see Proposer)."""
        proposal = self._proposer.take()
        if proposal is not None:
            self._take_model_best(self._proposer.model_best)
            taken = self._proposer.taken_fields
            self._ready += [(self.config.space.to_json(params), taken[i] if i < len(taken) else {})
                            for i, params in enumerate(proposal)]
        if self._stop.stopping:
            return
        for _ in range(min(max(0, self._free_slots()), len(self._ready))):
            params, fields = self._ready.pop(0)
            self._ends.arrived(self.store.new_job(params, "optimizer", **fields))
        del self._ready[self._ready_to_keep():]

    def _take_model_best(self, model_best: Mapping[str, Any] | None) -> None:
        """Hand the model's best (best.json's ``model_best``) with its job's params to the summaries."""
        job = self.store.get(model_best["id"]) if model_best is not None else None
        best = None if job is None else {"id": job.id, "params": job.params, **model_best}
        if best != self.summaries.model_best:
            self.summaries.model_best = best
            self.summaries.mark_stale()

    def _intake(self) -> bool:
        """Take in files users dropped into jobs/pending and notice withdrawn pending jobs."""
        changed = False
        for job_id in self.store.forget_withdrawn():
            self.reporter.event("withdrawn", f"job {job_id}: its pending file was deleted", job=job_id)
        for path in self.store.dropped_files():
            self._ends.arrived(self.store.intake_dropped(path, self.config))
            changed = True
        return changed

    # -- submitting --------------------------------------------------------------------------

    def _submit_pending(self) -> None:
        running, now, batch = self.store.counts()["running"], time.monotonic(), []
        for job in self.store.jobs(JobState.PENDING):
            if running + len(batch) >= self._site_limits.target(self.config.max_concurrent, running) \
                    or self._stop.stopping:
                break
            if self._submitter.retries.waiting(job.id, now):
                continue
            if self.paths.result_file(job.id).exists() and self._record_result(job.id):
                continue  # it ran before a crash of the daemon that had just submitted it
            if not self.driver.has_room():
                break  # the driver's own slots are full: the job waits for a later wake
            batch.append(job.id)
            if len(batch) >= self.driver.max_batch:  # (1: one at a time, has_room asked before each)
                if self._submit(*batch):
                    return  # the site takes no more now
                running, batch = self.store.counts()["running"], []
        self._submit(*batch)  # together: a batch driver's one job array

    def _submit(self, *job_ids: int) -> bool:
        """Submit pending jobs; True when the site refused them for its limits (pending again)."""
        outcome = self._submitter.submit(job_ids)
        for job_id, refused in outcome.rejected:
            self._ends.fail(job_id, "submit_rejected", refused.reason)
        self._submitter.check_rejects(outcome.rejected)  # after every refused job is recorded
        if outcome.site_limited is not None and len(job_ids) > 1:
            # a site may take fewer than the array's jobs (SLURM counts each of its tasks against
            # MaxSubmitJobs): one at a time, until the site refuses one
            return any(self._submit(job_id) for job_id in outcome.site_limited.job_ids)
        return self._site_limits.after_submit(outcome, self.store.counts()["running"], self.config.max_concurrent)

    # -- results -----------------------------------------------------------------------------

    def _collect_results(self) -> bool:
        changed = False
        for job_id in sorted(self.store.ids(JobState.RUNNING)):
            if self.paths.result_file(job_id).exists():
                changed |= self._record_result(job_id)
        return changed

    def _record_result(self, job_id: int) -> bool:
        """Record the job's result file; False if it is not a readable result (yet)."""
        result = JobResult.read(self.paths.result_file(job_id), job_id)
        if result is None:
            return False
        self._ended_seen.pop(job_id, None)
        self._ends.result(job_id, result)
        return True

    def _poll_driver(self) -> bool:
        """One driver poll for all running jobs; fail those that ended without a result."""
        by_sid = {job.scheduler_id: job.id for job in self.store.jobs(JobState.RUNNING)
                  if job.driver == self.driver.name and job.scheduler_id is not None}
        if not by_sid:
            self._site_limits.polled(())  # none of its jobs waits in the queue any more
            return False
        try:
            statuses = self.driver.poll(list(by_sid))
        except PollError as exc:
            self.reporter.event("warning", f"poll of the {self.driver.name} driver failed ({exc}); trying again later")
            return False
        self._site_limits.polled(statuses.values())
        changed = False
        for sid, status in statuses.items():
            job_id = by_sid.get(sid)
            if job_id is None or not status.state.finished:
                continue
            if self._record_result(job_id):
                changed = True
                continue
            outcome = reattempts.interruption(self.paths, job_id, status)
            first_seen = self._ended_seen.setdefault(job_id, time.monotonic())
            if outcome != reattempts.CHECKPOINTED and time.monotonic() - first_seen < self.driver.result_grace_s:
                continue
            reason = status.reason or status.state.value
            self._ended_seen.pop(job_id, None)
            if outcome is not None:
                self._ends.interrupt(job_id, outcome, reason)
            elif self.paths.result_file(job_id).exists():
                self._ends.fail(job_id, "bad_result", f"unreadable result file; {reason}")
            else:  # its result file may still show up: spearmint_nn.daemon.late_results
                self._ends.fail(job_id, SCHEDULER_FAILURES[status.state], reason,
                                **{AWAITING_RESULT: time.time() - (time.monotonic() - first_seen)})
            changed = True
        return changed

    def _take_late_results(self) -> bool:
        """Record the result files that appeared for jobs failed without one, in place of the failure."""
        found = self._late.arrived(refresh=bool(self._ended_seen))
        for job, line in found:
            result = JobResult.read(self.paths.result_file(job.id), job.id)
            if result is not None:
                self._ends.late(job, line, result)
        return bool(found)

    def _stop_early(self) -> bool:
        """Stop the running jobs that the early-stopping rule says to stop; whether any was."""
        running = [job for job in self.store.jobs(JobState.RUNNING)
                   if job.driver == self.driver.name and job.scheduler_id is not None]
        return bool(self._ends.stop(self._early.decide(running, self.store.jobs())))

    def _handle_requests(self) -> bool:
        """Cancel the jobs that ``spearmint-nn cancel`` asked for through ``requests/``."""
        cancelled = [self._ends.cancel(ids, "cancelled by the user") for ids in cancel_requests(self.store, self.reporter)]
        return any(cancelled)
