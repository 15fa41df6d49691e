"""Failures before any job has succeeded: held back from the budget and the model, or recorded as
a bug of the wrapper (the rule is in :mod:`spearmint_nn.experiment.failures`).

A renamed parameter's ``KeyError`` fails every job at the same line. Counted and shown to the
model as infeasible points, such failures spent the budget on nothing and taught the model that
the first points it tried were bad. So, while no job has succeeded, the failures of the
wrapper's code (:data:`~spearmint_nn.experiment.jobs.HELD_UNTIL_SUCCESS`) are held back: the
first success makes them ordinary failures of their points, counted and shown; a streak of
identical ones makes them "bad_wrapper" (their kind kept in ``reclassified_from``), which
``ignore-failures`` leaves out by default. Later failures of a recorded bug's signature, such as
the jobs a stopped daemon left in flight, are recorded so too.

A policy: it keeps the account and answers with ids and verdicts; the job files are rewritten by
:class:`~spearmint_nn.daemon.job_ends.JobEnds`.
"""
from __future__ import annotations

from typing import Iterable

from ...experiment.config import ExperimentConfig
from ...experiment.failures import FailureGroup, signature_as_run
from ...experiment.jobs import Job, JobState
from ...text import jobs_text


class FailuresBeforeSuccess:
    """The daemon's account of which finished jobs count now; see the module docstring.

    :meth:`load` once with every finished job, then for each finished job (replayed or new)
    :meth:`repeats_a_bug` and :meth:`counts_now`, :meth:`succeeded` at each completion and
    :meth:`wrapper_bug` when a streak says so.
    """

    def __init__(self, ignored_failures: Iterable[str]):
        self.ignored = frozenset(ignored_failures)
        self.any_success = False
        self.held_back: set[int] = set()
        self._bugs: set[tuple[str, str, str]] = set()  # signatures (as run) recorded as wrapper bugs

    def load(self, finished: Iterable[Job]) -> None:
        finished = list(finished)
        self.any_success = any(job.state is JobState.COMPLETE for job in finished)
        self._bugs = {signature_as_run(job) for job in finished if job.fields.get("reclassified_from")}

    def repeats_a_bug(self, job: Job) -> bool:
        """Whether a finished job failed as a recorded wrapper bug did, and is to be recorded as
        that bug (it is held back no longer)."""
        if job.state is JobState.FAILED and not job.fields.get("reclassified_from") and signature_as_run(job) in self._bugs:
            self.held_back.discard(job.id)
            return True
        return False

    def counts_now(self, job: Job) -> bool:
        """Whether a finished job (as recorded after :meth:`repeats_a_bug`) counts against the
        budget and is shown to the model now; a failure held back is kept aside."""
        if not job.counts_toward_budget(self.ignored):
            return False
        if job.held_back(self.any_success):
            self.held_back.add(job.id)
            return False
        return True

    def succeeded(self) -> list[int]:
        """A job completed: the ids of the failures held back until now, which now count (oldest first)."""
        self.any_success = True
        ids = sorted(self.held_back)
        self.held_back.clear()
        return ids

    def wrapper_bug(self, job: Job, held_jobs: Iterable[Job]) -> list[int]:
        """A streak found that ``job`` fails as a bug of the wrapper: note its signature, and
        return the ids of the held-back failures (among ``held_jobs``) that failed the same
        way, to be recorded as "bad_wrapper" (they are held back no longer)."""
        key = signature_as_run(job)
        self._bugs.add(key)
        ids = [held.id for held in held_jobs if held.id in self.held_back and signature_as_run(held) == key]
        self.held_back.difference_update(ids)
        return sorted(ids)

    def cost(self, group: FailureGroup, last: Job) -> str:
        """What a streak's failed jobs cost (``last``: its last job), for the daemon's last line."""
        if group.wrapper_bug:
            return ("No job has succeeded yet, so this is a bug in the wrapper, not a property of the points: "
                    "these jobs are recorded as bad_wrapper, do not count against max-finished-jobs and are not "
                    "shown to the model")
        if last.id in self.held_back:
            return "No job has succeeded yet: these failures will count against max-finished-jobs once one does"
        if last.counts_toward_budget(self.ignored):
            return "These jobs count against max-finished-jobs and are shown to the model as infeasible points"
        return f"Failures of kind {group.kind} do not count against max-finished-jobs and are not shown to the model"

    def stop_message(self, group: FailureGroup, config: ExperimentConfig, last: Job) -> str:
        """Why the daemon stops on a streak (``last``: its last job): the error, where, which
        output to read, what the failed jobs cost and how to go on."""
        paths = config.paths
        where = f" at {group.location}" if group.location else ""
        output = paths.stderr_file(group.last_job).relative_to(paths.experiment)
        fix = (group.location or config.main_file.name) if group.wrapper_bug else "the cause"
        return (f"{group.count} jobs in a row failed the same way ({group.kind}): {group.reason}{where} "
                f"({jobs_text(group.jobs)}); read {output} and its .out beside it. "
                f"{self.cost(group, last)}. Fix {fix}, then `spearmint-nn run "
                f"{paths.experiment}` again to go on"
                + ("" if group.wrapper_bug else
                   f" (stop-after-identical-failures: {config.stop_after_identical_failures})"))
