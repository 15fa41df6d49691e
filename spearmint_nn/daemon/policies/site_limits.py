"""Limits of the site on a user's jobs are back-pressure, never failures.

Clusters cap what one user may have in the queue: SLURM's ``MaxSubmitJobs`` of an association
(user, account) or a QOS, Grid Engine's ``max_u_jobs``. Over such a cap the submit command
refuses the job; the driver recognises the refusal from the scheduler's own words and raises
:class:`~spearmint_nn.drivers.base.SiteLimitError`. Caps on *running* jobs (SLURM's
``MaxJobs``) refuse nothing: the scheduler queues the job with a reason such as
``AssocMaxJobsLimit``, which a poll reports (:attr:`~spearmint_nn.drivers.base.JobStatus.site_limit`).

:class:`SiteLimits` is the daemon's answer. On a refusal the job goes back to pending (it is not
failed, and the refusal counts toward no retry limit); the daemon's in-flight target, which
bounds both the submissions and the new proposals, is held at what the site accepted: the
experiment's jobs in flight when it refused. (A job array refused says less: SLURM counts each
of its tasks against ``MaxSubmitJobs``, so fewer jobs may still fit. The daemon then submits
its jobs one by one, and only the refusal of a single job reaches :class:`SiteLimits`.) One
console line says so when the cap is first met, and one when it lifts. From then on:

- after any refusal nothing is submitted for a short pause (:data:`RETRY_S`, doubling with each
  refusal in a row up to :data:`PROBE_MAX_S`, back to the start at the next success), so that
  a refusing site is not asked again at every wake of the daemon;
- a job is submitted whenever one of the experiment's jobs ends (in flight falls below the
  target). The scheduler counts a job until it has left its queue, a little after the job's
  result file is there, so such a submission may be refused for the job that just ended: the
  target is lowered only when refusals below it go on after the pauses (:data:`LOWER_AFTER` in
  a row: the user's other jobs took the room, or the site lowered its cap);
- a while after a refusal at the target (:data:`PROBE_FIRST_S`, doubling while such probes are
  refused, up to :data:`PROBE_MAX_S`), one submission beyond the target probes whether the site
  now accepts more (the user's other jobs ended, or the site raised the cap): when it succeeds,
  the target rises to what is in flight and the next probe follows at once; when the site
  accepts ``max-concurrent`` jobs the limit has lifted. ``max-concurrent`` stays the upper
  bound throughout.

While a limit holds, and while jobs wait in the queue for one, ``.spearmint/site_limit.json``
(schema in :mod:`spearmint_nn.experiment.layout`) says so for ``spearmint-nn status``; the
daemon removes it when neither holds, and a daemon that starts removes the one its predecessor
left.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

from ...drivers.base import JobStatus
from ...experiment.layout import ExperimentPaths
from ...files import atomic_write_json
from ..event_log import EventLog
from ..submitter import SubmitOutcome

RETRY_S = 2.0          # no submission for this long after a refusal, doubling with each in a row
PROBE_FIRST_S = 30.0   # a submission beyond the held target this long after a refusal at it
PROBE_MAX_S = 600.0    # the longest of either wait
LOWER_AFTER = 3        # refusals below the target in a row (after 2 + 4 s of pauses) that lower it


@dataclass(frozen=True)
class Held:
    """A limit of the site that holds: ``in_flight`` jobs of the experiment were accepted when
    the scheduler refused one more (unix time ``since``), in its words ``message``."""

    in_flight: int
    since: float
    message: str


@dataclass(frozen=True)
class Queued:
    """Jobs of the experiment that the scheduler keeps queued for a limit of the site (``reason``)."""

    jobs: int
    reason: str


class SiteLimits:
    """The in-flight target under the site's limits (see the module docstring)."""

    def __init__(self, paths: ExperimentPaths, log: EventLog, driver_name: str):
        self.paths, self.log, self.driver_name = paths, log, driver_name
        self.held: Held | None = None
        self.queued: Queued | None = None
        self._refusals_in_a_row = 0    # refused submissions since the last success
        self._probes_refused = 0       # refusals at or beyond the target since a probe succeeded
        self._below_in_a_row = 0       # refusals below the target in a row
        self._retry_at = 0.0           # time.monotonic() before which nothing is submitted
        self._probe_at = 0.0           # time.monotonic() from which one more than the target is tried
        self._said_queued = False      # the line about jobs queued for a limit: once per daemon

    def forget_previous(self) -> None:
        """Remove the file a stopped daemon left: its limit is no longer known to hold (called
        once the daemon holds the folder)."""
        self.paths.site_limit.unlink(missing_ok=True)

    def target(self, max_concurrent: int, in_flight: int, now: float | None = None) -> int:
        """Jobs the daemon aims to have in flight, ``in_flight`` being there now: ``max_concurrent``,
        or while a limit holds what the site accepted (no more than now during the pause after a
        refusal; one more when a probe is due)."""
        if self.held is None:
            return max_concurrent
        now = time.monotonic() if now is None else now
        if now < self._retry_at:
            return min(max_concurrent, in_flight)
        return min(max_concurrent, self.held.in_flight + (1 if now >= self._probe_at else 0))

    def refused(self, job_ids: Sequence[int], in_flight: int, message: str, max_concurrent: int) -> None:
        """The scheduler refused jobs ``job_ids`` (one, or a job array's) for a limit of the site
        with ``in_flight`` of the experiment's jobs submitted (the jobs themselves back to pending)."""
        now, first = time.monotonic(), self.held is None
        self._refusals_in_a_row += 1
        self._retry_at = now + min(PROBE_MAX_S, RETRY_S * 2 ** (self._refusals_in_a_row - 1))
        if first or in_flight >= self.held.in_flight:  # the cap met, or a probe beyond it refused
            self._below_in_a_row = 0
            self._probes_refused += 1
            self._probe_at = now + min(PROBE_MAX_S, PROBE_FIRST_S * 2 ** (self._probes_refused - 1))
            self.held = Held(in_flight, self.held.since if self.held else time.time(), message)
        else:
            self._below_in_a_row += 1
            if self._below_in_a_row >= LOWER_AFTER:  # still refused after the pauses: the site takes fewer
                self.held = Held(in_flight, self.held.since, message)
        if first:
            self.log.event("limit", f"the {self.driver_name} scheduler refused {_jobs(job_ids)} for a limit of the "
                                f"site ({message}); holding at {in_flight} job(s) in flight (max-concurrent "
                                f"{max_concurrent}) until it accepts more: no job fails for it, one is "
                                f"submitted as each ends, and one more is tried after {PROBE_FIRST_S:g} s, "
                                f"then less often while it refuses", job=job_ids[0])
        self._write()

    def accepted(self, in_flight: int, max_concurrent: int) -> None:
        """A submission succeeded with ``in_flight`` of the experiment's jobs now submitted."""
        self._refusals_in_a_row = self._below_in_a_row = 0
        self._retry_at = 0.0
        if self.held is None or in_flight <= self.held.in_flight:
            return
        self._probes_refused = 0
        if in_flight >= max_concurrent:
            self.log.event("limit", f"the site's limit has lifted: {in_flight} job(s) in flight, "
                                f"max-concurrent {max_concurrent} (held since "
                                f"{time.strftime('%H:%M:%S', time.localtime(self.held.since))})")
            self.held = None
        else:  # the site accepts more than before: try one more at once
            self.held = Held(in_flight, self.held.since, self.held.message)
            self._probe_at = 0.0
        self._write()

    def after_submit(self, outcome: SubmitOutcome, in_flight: int, max_concurrent: int) -> bool:
        """Take in what :meth:`Submitter.submit <spearmint_nn.daemon.submitter.Submitter.submit>`
        came to, ``in_flight`` of the experiment's jobs submitted now; True when the site refused
        its jobs for a limit."""
        if outcome.site_limited is not None:
            limited = outcome.site_limited
            self.refused(limited.job_ids, in_flight, limited.message, max_concurrent)
            return True
        if outcome.accepted:
            self.accepted(in_flight, max_concurrent)
        return False

    def polled(self, statuses: Iterable[JobStatus]) -> None:
        """Note the experiment's jobs that a poll found queued for a limit of the site."""
        waiting = [status for status in statuses if status.site_limit and not status.state.finished]
        queued = Queued(len(waiting), waiting[0].reason) if waiting else None
        if queued == self.queued:
            return
        self.queued = queued
        if queued is not None and not self._said_queued:
            self._said_queued = True
            self.log.event("limit", f"{queued.jobs} job(s) queued by the {self.driver_name} scheduler for a "
                                f"limit of the site ({queued.reason}): they start as the user's other jobs end")
        self._write()

    def summary(self) -> dict[str, Any]:
        """What site_limit.json holds (schema in :mod:`spearmint_nn.experiment.layout`)."""
        return {"held": asdict(self.held) if self.held else None,
                "queued": asdict(self.queued) if self.queued else None}

    def _write(self) -> None:
        if self.held is None and self.queued is None:
            self.paths.site_limit.unlink(missing_ok=True)
        else:
            atomic_write_json(self.paths.site_limit, {**self.summary(), "written": time.time()})



def _jobs(job_ids: Sequence[int]) -> str:
    return f"job {job_ids[0]}" if len(job_ids) == 1 else f"jobs {', '.join(map(str, job_ids))} (a job array)"
