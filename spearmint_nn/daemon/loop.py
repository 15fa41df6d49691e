"""The experiment daemon: one cycle, over and over, of events in, decisions out.

One main thread owns the store (it alone writes ``jobs/``). It sleeps until something happens:
a file event in ``results/``, ``jobs/pending/`` or ``requests/`` (:mod:`~.events.files`, the fast
path on one machine), the periodic poll every ``polling-time`` seconds (what guarantees progress
on NFS, where inotify misses other machines' writes), a finished proposal, or a stop signal
(:mod:`~.events.signals`). Each wake runs one cycle, which handles everything that is ready at
once, so ten jobs finishing together are ten records and one refit:

1. **events**: files dropped into ``jobs/pending``, result files, and at each poll the late
   results (:mod:`~.events.late_results`), the scheduler's states (:mod:`~.events.scheduler`),
   the learning curves (:mod:`~.events.curves`) and config.json's edits; the CLI's requests
   (:mod:`~.events.requests`);
2. **decisions**: the policies (:mod:`~.policies`) are handed what they need and return what to
   do: stop these jobs early, submit that one again as its next attempt, take up this edit;
3. **ends**: every end of a job goes through :class:`~.job_ends.JobEnds`, which applies its
   consequences once and in one order (the model told, the failure streak, the log line, the
   summaries);
4. **submit** the pending jobs that the capacity (:mod:`~.policies.capacity`) lets start, and
   **ask** the proposal thread (:class:`~.proposer.Proposer`) for the points of the slots that
   will free up.

The daemon is handed its parts (:class:`DaemonParts`, built by ``daemon/build.py``); it makes
only what acts as soon as it exists, once it holds the folder: the heartbeat lock and the proposal thread. Why each part
is where it is: ``spearmint_nn/daemon/DESIGN.md``.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..drivers.base import Driver, PollError
from ..errors import ConfigError
from ..experiment.config import ExperimentConfig
from ..experiment.jobs import AWAITING_RESULT, SCHEDULER_FAILURES, JobState, best_job, counts_text
from ..experiment.lock import LOST_EXIT, hold_for_daemon, lost_line
from ..experiment.results import JobResult
from ..experiment.spare_results import find_spare
from ..experiment.store import Store
from ..files import atomic_write_bytes, atomic_write_json
from .event_log import EventLog
from .events.curves import CurveReader
from .events.files import watch
from .events.late_results import LateResults
from .events.requests import cancel_requests
from .events.scheduler import SchedulerWatch
from .events.signals import StopSignals
from .job_ends import JobEnds
from .policies.capacity import Capacity
from .policies.early_stopping import EarlyStopping
from .policies.live_config import LiveConfig
from .policies.site_limits import SiteLimits
from .proposer import PROPOSER_JOIN_SECONDS, Proposer
from .scheduler_calls import SchedulerCalls
from .submitter import Submitter
from .summaries import SummaryWriter
from .wrapper_check import check_wrapper_before_jobs

if TYPE_CHECKING:  # the optimizer's module loads torch: imported by make_optimizer when one is built
    from ..search.optimizer import Optimizer

# Points asked of the optimizer at once. The GP proposes them one after another (~1 s each), so
# 800 free slots asked in one call would start no job for minutes; in chunks the first jobs start
# after a few seconds, and each later chunk treats the earlier ones as pending all the same. DNGO
# chooses a batch at once (~0.01 s a point): asked 10 at a time it would fall behind a large
# cluster's completions. So a chunk is as many points as the last proposal's pace fits into
# PROPOSAL_SECONDS, and at least PROPOSAL_CHUNK.
PROPOSAL_CHUNK = 10
PROPOSAL_SECONDS = 5.0


def _params_problem(config: ExperimentConfig, params: Any) -> str | None:
    """Why params do not fit the config's variables, or None when they do."""
    try:
        config.space.validate(params)
    except ConfigError as exc:
        return str(exc)
    return None


# ---- the daemon ------------------------------------------------------------------------------

@dataclass
class DaemonParts:
    """What a :class:`Daemon` runs with, built by ``spearmint_nn.daemon.build``."""

    config: ExperimentConfig
    optimizer: "Optimizer"
    driver: Driver
    calls: SchedulerCalls            # the driver's polls and submissions, off the loop's path
    store: Store
    log: EventLog
    summaries: SummaryWriter
    submitter: Submitter
    site_limits: SiteLimits
    curves: CurveReader              # the running jobs' learning curves, read at each poll
    early_stopping: EarlyStopping    # the policy that decides which running jobs to stop
    late_results: LateResults        # jobs failed without a result file, until it comes
    ends: JobEnds                    # the one place where a job ends


class Daemon:
    """``spearmint-nn run``: see the module docstring. Build, then :meth:`run` (returns an exit code)."""

    def __init__(self, parts: DaemonParts, cancel_on_exit: bool = False,
                 on_start: Callable[[EventLog, Store], None] | None = None):
        self.config, self.paths = parts.config, parts.config.paths
        self.cancel_on_exit = cancel_on_exit
        self._on_start = on_start  # called with the log and the store, e.g. by a live progress line
        self.optimizer, self.driver, self.store = parts.optimizer, parts.driver, parts.store
        self.log, self.summaries = parts.log, parts.summaries
        self._submitter, self._site_limits = parts.submitter, parts.site_limits
        self._curves, self._early, self._late = parts.curves, parts.early_stopping, parts.late_results
        self._ends = parts.ends
        self._proposer: Proposer | None = None
        self._wake = threading.Event()
        self._stop = StopSignals(self._wake)  # SIGINT/SIGTERM, and SIGUSR1 before a batch job's time limit
        self._calls = parts.calls
        self._scheduler = SchedulerWatch(self.driver, self.paths, self._calls)
        self._live_config = LiveConfig(self.paths)
        self._config_error: str | None = None  # why config.json does not validate now, if it does not
        # Points proposed for the next free slots, (params as in a job file, job-file fields):
        # never a job file until a slot takes one, so a killed daemon loses and repeats nothing.
        self._ready: list[tuple[dict[str, list], dict[str, Any]]] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> int:
        # First: a time-limit warning that comes while the daemon starts must still end in a clean stop.
        self._stop.install()
        try:
            return self._run()
        finally:
            self._stop.restore()
            self.log.close()  # (it took over the package's logger when it was built)

    def _run(self) -> int:
        warning = check_wrapper_before_jobs(self.config, self.driver)  # before anything is written
        self.paths.state.mkdir(parents=True, exist_ok=True)  # for the lock; the rest once it is ours
        lock = self._lock = hold_for_daemon(self.paths, lambda: (self.config.polling_time,
                                                                  self.config.daemon_heartbeat_timeout), self._wake.set)  # spearmint_nn.experiment.lock
        self.store.create_dirs()
        # Its jobs run with what it validated (the runner reads this copy), whatever the user's
        # file holds when they start; no hold on submissions is left from a daemon before.
        atomic_write_bytes(self.paths.config_in_force, self.config.text.encode("utf-8"))
        self.paths.config_error.unlink(missing_ok=True)
        self._site_limits.forget_previous()
        for line in (warning, lock.took_over):  # a wrapper to fix; a daemon elsewhere taken for dead
            if line is not None:
                self.log.event("warning", line)
        if self._on_start is not None:
            self._on_start(self.log, self.store)
        noisy = self.config.tasks.likelihoods[self.config.objective] == "GAUSSIAN"
        self._proposer = Proposer(self.optimizer, self.log, self._wake, noisy=noisy,
                                  warpings_file=self.paths.warpings, picture_file=self.paths.model_picture,
                                  related_file=self.paths.related)
        self._ends.tell = self._proposer.observe  # the model listens from now on
        self._calls.meanwhile = self._record_results_meanwhile  # results on disk while the scheduler hangs
        observer = None
        try:
            self._load()
            self._ends.replay(self.store.jobs((JobState.COMPLETE, JobState.FAILED, JobState.STOPPED)))
            self._take_over()
            observer = watch((self.paths.results, self.paths.job_dir(JobState.PENDING), self.paths.requests),
                             self._wake, lambda why: self.log.event("warning", f"{why}; relying on polling "
                                                                         f"every {self.config.polling_time:g} s"))
            return self._loop()
        finally:
            if observer is not None:
                observer.stop()
            self._proposer.close()
            self._calls.close()
            lock.release()

    def _load(self) -> None:
        config, store = self.config, self.store
        self.log.event("started", f"experiment {config.name} in {self.paths.experiment}: "
                            f"driver {self.driver.describe()}, model {config.model}, "
                            f"max-concurrent {config.max_concurrent}, max-finished-jobs {config.max_finished_jobs}, "
                            f"pid {os.getpid()}")
        for note in config.notes:  # what loading changed, such as max-concurrent capped by the GPU slots
            self.log.event("warning", note)
        for task in self.optimizer.related:
            self.log.event("related", f"learning from related experiment {task.name}: "
                                           f"{len(task)} successful jobs, read as of now")
        store.load_all(repair=True)
        for problem in store.problems:
            self.log.event("warning", problem)

    def _take_over(self) -> None:
        """Finish what a previous daemon left half done, and check jobs it left in flight."""
        config, store = self.config, self.store
        for job in store.finish_intakes(config):
            self._ends.arrived(job)
        for job in store.jobs(JobState.PENDING):
            problem = _params_problem(config, job.params)
            if problem is not None:
                self._ends.fail(job.id, "bad_params", problem)
        for job in store.jobs(JobState.RUNNING):
            if job.scheduler_id is None:
                self._settle_submission(job.id)
            elif job.driver == self.driver.name:
                self.log.event("adopted", f"job {job.id} running as {self.driver.name} {job.scheduler_id}",
                                    job=job.id)
            else:
                self.log.event("warning", f"job {job.id} was submitted with driver {job.get('driver')}, "
                                    f"not {self.driver.name}: its result is collected when it appears")
        counts = store.counts()
        self.log.event("state", counts_text(counts) + f"; next job id {store.next_id}")

    def _settle_submission(self, job_id: int) -> None:
        if not self.paths.result_file(job_id).exists() and not self._submitter.adopt(job_id):
            self._submit(job_id)  # (a job that ran is recorded by the loop)

    def _loop(self) -> int:
        next_poll = 0.0
        self.summaries.mark_stale()  # a killed daemon may have left them behind the job files
        while True:
            lost = self._lock.problem()
            if lost is not None:  # another daemon took the folder over: stop, writing nothing more
                self.log.console(lost_line(self.paths, lost))
                return LOST_EXIT
            changed = self._intake()
            changed |= self._collect_results()
            if time.monotonic() >= next_poll:
                changed |= self._take_late_results()  # first: its listing of results/ refreshes NFS's view
                changed |= self._poll_scheduler()
                changed |= self._curves.poll() and bool(self._stop_early())  # (stopped jobs: results.csv)
                self._take_config_edit()
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
            if self._capacity().budget_reached:
                self._take_model_best(self._proposer.final_model_best(PROPOSER_JOIN_SECONDS))
                return self._shutdown("budget reached")
            if self._config_error is None:  # (while config.json does not validate, nothing new)
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
        self.summaries.finish()  # the report page final: it stops reloading
        counts = store.counts()
        best = best_job(store.jobs(JobState.COMPLETE), self.config.objective, self.config.constraints,
                        self.config.direction)
        best_text = f"best {best.value:.6g} (job {best.id})" if best else "no complete job yet"
        left = ""
        if counts["running"] or counts["pending"]:
            left = (f"; {counts['running']} running and {counts['pending']} pending job(s) left as they are "
                    f"(run again to collect them)")
        finished = self.store.finished_count(self.config.ignored_failures)
        self.log.event("stopped", f"{why}: {finished} finished, {best_text}{left}")
        return exit_code

    # -- config.json edited while running, and how many jobs may start -----------------------

    def _take_config_edit(self) -> None:
        """Take up the live keys of an edited config.json (spearmint_nn.daemon.policies.live_config)."""
        edit = self._live_config.edit(self.config)
        if edit is None:
            return
        if edit.error is None or edit.error != self._config_error:  # (an editor saves in several writes)
            for kind, line in edit.lines():
                self.log.event(kind, line)
        self._hold_for_config(edit.error)
        self.config = edit.config
        self._calls.every_s = self.config.polling_time
        if "max-finished-jobs" in edit.live:
            self._proposer.set_budget(self.config.max_finished_jobs)
        if "stop-after-identical-failures" in edit.live:
            self._ends.streak.limit = self.config.stop_after_identical_failures

    def _hold_for_config(self, error: str | None) -> None:
        """While config.json does not validate, submit nothing: the user is editing it, and may
        mean to change what the next jobs do. ``status`` reads why from config-error.json."""
        if error is not None and self._config_error is None:
            atomic_write_json(self.paths.config_error, {"error": error, "since": time.time()})
        elif error is None and self._config_error is not None:
            self.paths.config_error.unlink(missing_ok=True)
            self.log.event("config", "config.json validates again: submitting jobs again")
        self._config_error = error

    def _capacity(self) -> Capacity:
        """The experiment now, as the capacity policy reads it."""
        counts = self.store.counts()
        return Capacity(max_concurrent=self.config.max_concurrent, max_finished_jobs=self.config.max_finished_jobs,
                        target=self._site_limits.target(self.config.max_concurrent, counts["running"]),
                        finished=self.store.finished_count(self.config.ignored_failures),
                        pending=counts["pending"], running=counts["running"],
                        held_back=len(self._ends.before_success.held_back))

    # -- proposing ---------------------------------------------------------------------------

    def _ask(self) -> None:
        proposer = self._proposer
        if proposer.busy or self._stop.stopping:
            return
        pace = proposer.seconds_per_point
        chunk = PROPOSAL_CHUNK if pace is None else max(PROPOSAL_CHUNK, int(PROPOSAL_SECONDS / max(pace, 1e-3)))
        # Every free slot and the ready points beyond; those held already count (_take_proposal
        # gave free slots theirs first).
        capacity = self._capacity()
        n = min(max(0, capacity.free_slots) + capacity.ready_to_keep - len(self._ready), chunk)
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
        (user points in jobs/pending were taken in before and hold their slots already), and
        drop those beyond what may wait (Capacity.ready_to_keep): never run, and the optimizer
        never held them (see Proposer)."""
        proposal = self._proposer.take()
        if proposal is not None:
            self._take_model_best(self._proposer.model_best)
            taken = self._proposer.taken_fields
            self._ready += [(self.config.space.to_json(params), taken[i] if i < len(taken) else {})
                            for i, params in enumerate(proposal)]
        if self._stop.stopping:
            return
        for _ in range(min(max(0, self._capacity().free_slots), len(self._ready))):
            params, fields = self._ready.pop(0)
            self._ends.arrived(self.store.new_job(params, "optimizer", **fields))
        del self._ready[self._capacity().ready_to_keep:]

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
            self.log.event("withdrawn", f"job {job_id}: its pending file was deleted", job=job_id)
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

    def _record_results_meanwhile(self) -> None:
        """Record the result files of running jobs while a scheduler call is in flight
        (spearmint_nn.daemon.scheduler_calls); not of those being submitted, which the call is
        about and which cannot have run yet."""
        recorded = [self._record_result(job.id) for job in self.store.jobs(JobState.RUNNING)
                    if job.scheduler_id is not None and self.paths.result_file(job.id).exists()]
        if any(recorded):
            self.summaries.mark_stale()

    def _record_result(self, job_id: int) -> bool:
        """Record the job's result file; False if it is not a readable result (yet)."""
        result = JobResult.read(self.paths.result_file(job_id), job_id)
        if result is None:
            return False
        self._scheduler.forget(job_id)
        self._ends.result(job_id, result)
        return True

    def _record_spare(self, job_id: int) -> bool:
        """Record the result that the job's runner kept elsewhere because it could not write the
        result file (spearmint_nn.experiment.spare_results); False when there is none."""
        found = find_spare(self.paths, job_id)
        if found is None:
            return False
        self._scheduler.forget(job_id)
        self._ends.result(job_id, *found)
        return True

    def _poll_scheduler(self) -> bool:
        """One driver poll for all running jobs; end those that ended without a result."""
        try:
            statuses = self._scheduler.poll(self.store.jobs(JobState.RUNNING))
        except PollError as exc:
            self.log.event("warning", f"poll of the {self.driver.name} driver failed ({exc}); trying again later")
            return False
        self._site_limits.polled(statuses.values())  # (none: none of its jobs waits in the queue any more)
        changed = False
        running = self.store.ids(JobState.RUNNING)  # (a result recorded while the poll was out ended its job)
        for job_id, status in statuses.items():
            if not status.state.finished or job_id not in running:
                continue
            if self._record_result(job_id) or self._record_spare(job_id):
                changed = True
                continue
            ended = self._scheduler.without_result(job_id, status)
            if ended is None:
                continue  # its result may still come within the grace
            if ended.outcome is not None:
                self._ends.interrupt(job_id, ended.outcome, ended.reason)
            elif self.paths.result_file(job_id).exists():
                self._ends.fail(job_id, "bad_result", f"unreadable result file ({ended.reason})")
            else:  # its result file may still show up: spearmint_nn.daemon.events.late_results
                self._ends.fail(job_id, SCHEDULER_FAILURES[status.state], ended.missing_result,
                                **{AWAITING_RESULT: ended.ended})
            changed = True
        return changed

    def _take_late_results(self) -> bool:
        """Record the result files that appeared for jobs failed without one, in place of the failure."""
        found = self._late.arrived(refresh=self._scheduler.awaiting_results)
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
        cancelled = [self._ends.cancel(ids, "cancelled by the user") for ids in cancel_requests(self.store, self.log)]
        return any(cancelled)
