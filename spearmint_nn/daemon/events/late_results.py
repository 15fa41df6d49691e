"""Result files that a shared filesystem shows late: recorded whenever they appear.

A job on a compute node writes ``results/<id>.json``; the daemon on a login node reads it over
NFS (or Lustre, GPFS), whose clients cache what they have seen of a folder:

* file and folder attributes are cached for ``acregmin``..``acregmax`` (3..60 s) and
  ``acdirmin``..``acdirmax`` (30..60 s) by default; ``actimeo=N`` sets all four, ``noac`` none;
* a lookup of a name that did not exist is cached too (a negative dentry, ``lookupcache=all``,
  the default) and trusted until the folder's cached attributes say it changed, so ``stat`` or
  ``open`` of ``results/000012.json`` may answer "no such file" for up to a minute after the
  job wrote it; ``lookupcache=positive`` (or ``none``) turns that off, at some cost;
* opening a folder revalidates its attributes with the server (close-to-open consistency, which
  Linux applies to folders as to files): a folder that changed has its listing read afresh
  (READDIR) and its negative lookups dropped.

So when the scheduler says a job has ended and its result file is not to be seen, the daemon
waits ``result-grace`` seconds (30 by default, ``acdirmin``: by then a cached view of the
folder has usually been asked again) before it records the job as failed (``no_result``,
``lost``, ... as the scheduler's state says), keeping in the job the time the scheduler said
it ended (:data:`~spearmint_nn.experiment.jobs.AWAITING_RESULT`). From then on, at every poll
of the driver (``polling-time``) and at the first poll of every daemon started on the folder,
one listing of ``results/`` (not a ``stat`` per such job, which a negative lookup could answer)
finds the files that appeared for these jobs; each one found is recorded as if it had come in
time, complete with its values or failed as the runner recorded it, in place of the failure
(:meth:`~spearmint_nn.experiment.jobs.Job.moved_to`, which keeps the failure in
``late_result``). The model is shown the value in place of the failed point it was shown
(:meth:`~spearmint_nn.search.optimizer.Optimizer.revise`), and max-finished-jobs counts the job
as one evaluation, as it counted its failure. The listing is made before each poll of the
driver, so it also refreshes what that poll's reads of the jobs that just ended see.

Why fail after the grace and replace the failure later, rather than keep such a job running
for a longer patience: a late file mostly shows within a minute on a default mount, but a node
whose writes were held up, a mount with longer cache times or a daemon that was down meanwhile
can make it much later, so any patience would still end in failures that a late file
contradicts. One rule, "the result file decides, whenever it appears", covers every case; and a
job that has ended holds no slot of ``max-concurrent`` while it waits, and no proposal waits
for it.
"""
from __future__ import annotations

import os
import re
import time

from ...experiment.jobs import AWAITING_RESULT, Job, JobState
from ...experiment.layout import ExperimentPaths
from ...experiment.results import JobResult
from ...experiment.store import Store

_RESULT_NAME = re.compile(r"^(\d{6,})\.json$")


def listed_results(paths: ExperimentPaths) -> set[int]:
    """The job ids whose result file the folder ``results/`` lists now: one ``os.listdir``,
    which opens the folder and so makes an NFS client ask the server (see the module docstring)."""
    try:
        names = os.listdir(paths.results)
    except OSError:
        return set()
    return {int(match.group(1)) for match in map(_RESULT_NAME.match, names) if match}


class LateResults:
    """The daemon's watch over the jobs that await their result file (see the module docstring)."""

    def __init__(self, store: Store):
        self.store = store
        self._polls = 0

    def arrived(self, refresh: bool = False) -> list[tuple[Job, str]]:
        """The failed jobs awaiting their result whose result file is now there and readable, by
        id, each with its console line. The folder is listed only when some job awaits its
        result or ``refresh`` asks for it (jobs just ended, whose result the caller is about
        to read by name)."""
        first_poll, self._polls = self._polls == 0, self._polls + 1
        waiting = {job.id: job for job in self.store.jobs(JobState.FAILED) if job.awaits_result}
        if not waiting and not refresh:
            return []
        paths, now = self.store.paths, time.time()
        found = sorted(listed_results(paths) & set(waiting))
        return [(waiting[job_id], arrival_line(waiting[job_id], now, first_poll)) for job_id in found
                if JobResult.read(paths.result_file(job_id), job_id) is not None]


def arrival_line(job: Job, now: float, first_poll: bool = False) -> str:
    """The one console line for a job whose result came late; ``first_poll``: found by a daemon
    that just started, which cannot tell when the file appeared."""
    ended = job.fields.get(AWAITING_RESULT)
    after = f"{_seconds_text(now - ended)} after" if isinstance(ended, (int, float)) else "after"
    if first_poll:
        found = (f"its result was found {after} the scheduler said it ended (a shared filesystem showing it "
                 f"late, or no daemon running meanwhile)")
    else:
        found = f"its result arrived {after} the scheduler said it ended (a shared filesystem showing it late)"
    return f"job {job.id}: {found}; recorded in place of the failure {job.failure}"


def _seconds_text(seconds: float) -> str:
    """``95 s``, ``12 min``, ``3.5 h``: how late, to the precision that matters."""
    seconds = max(0.0, seconds)
    if seconds < 600:
        return f"{seconds:.0f} s"
    if seconds < 3 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
