"""The optimizer in a background thread: the daemon asks for points without waiting for a refit.

``Optimizer.propose`` can take seconds when the model is refitted, and completions keep being
recorded meanwhile. The optimizer is touched by the proposer's thread only; results reach it
through a queue that is drained right before each proposal. What the daemon keeps of a
proposal comes from its :class:`~spearmint_nn.search.optimizer.Suggestion`: the events it logs,
the job-file fields of its points, and the report file of the model's learned warpings.
"""
from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..experiment.config import ExperimentConfig, search_settings
from ..experiment.related import read_related_folders
from ..errors import DaemonError
from ..files import atomic_write_bytes
from .event_log import EventLog

if TYPE_CHECKING:  # the optimizer imports torch: only `run` pays for it, not status/report/cancel
    from ..search.optimizer import Optimizer
    from ..search.suggestion import Suggestion

# The picture costs 0.2 s (GP) to 1.5 s (DNGO) of the proposal thread: at most once a minute.
PICTURE_SECONDS = 60.0
PROPOSER_JOIN_SECONDS = 30.0  # at exit, how long a proposal in progress may take to finish


def make_optimizer(config: ExperimentConfig) -> "Optimizer":
    """The config's Optimizer, keeping its models in the experiment's model folder and learning
    from the finished jobs of its related experiments (read, never written); raises ConfigError
    for settings the optimizer rejects and related folders that do not match."""
    from ..search.optimizer import Optimizer
    from ..search.model_store import ModelStore
    from ..search.related import related_task

    settings = search_settings(config)
    # a related search measured the same quantity: its values are better in this search's direction
    related = [related_task(config.space, folder.space, folder.results, folder.name, folder.tasks, settings.sign,
                            where=folder.where)
               for folder in read_related_folders(config)]
    return Optimizer(config.space, settings, state=ModelStore(config.paths.model), related=related)


class Proposer:
    """Runs ``Optimizer.propose`` in a thread; one request at a time.

    ``observe`` only queues; the queue is applied right before the next proposal, so any
    number of results arriving together cost one refit. ``warpings_file``: where the objective
    model's learned input warpings are written after each refit (None: nowhere);
    ``picture_file``: where what the model says (``Optimizer.model_picture``) is written after a
    refit at most every PICTURE_SECONDS, and once more at the end (None: nowhere);
    ``related_file``: where what each related experiment gives the model
    (``Optimizer.related_summary``) is written at the start and after each refit, when there are any.
    """

    def __init__(self, optimizer: "Optimizer", log: EventLog, wake: threading.Event, noisy: bool = False,
                 warpings_file: Path | None = None, picture_file: Path | None = None,
                 related_file: Path | None = None):
        self._optimizer, self._log, self._wake = optimizer, log, wake
        self._related_file = related_file
        self._write_related()  # before the thread starts: the optimizer is this thread's until then
        self._noisy = noisy  # a GAUSSIAN objective: report the model's best after each proposal
        self._warpings_file, self._picture_file = warpings_file, picture_file
        self._picture_written = -math.inf  # time.monotonic() of the last picture
        self._cond = threading.Condition()
        self._observations: list[tuple[int, dict, Any, float | None]] = []
        self._observed_ids: list[int] = []  # job id of each observation, in the optimizer's order
        self._index_of: dict[int, int] = {}  # job id -> its observation's index
        self._budget: int | None | bool = False  # a new max-finished-jobs for the optimizer (False: none)
        #: The model's best evaluated point (see layout: best.json's ``model_best``) as of the
        #: last proposal, without its params; None until a model is fitted or when not noisy.
        self.model_best: dict[str, Any] | None = None
        self._request: tuple[int, list[dict]] | None = None
        self._result: list[dict] | None = None
        self._result_fields: list[dict] = []
        #: Extra job-file fields of each point of the last proposal taken, aligned with it.
        self.taken_fields: list[dict] = []
        self._error: BaseException | None = None
        self._busy = self._closed = False
        self._segment_start = 0  # the optimizer's search segment last reported (Suggestion.segment_start)
        #: Seconds the last proposal took per point, refit excluded (None before the first).
        self.seconds_per_point: float | None = None
        self._thread = threading.Thread(target=self._work, name="proposer", daemon=True)
        self._thread.start()

    @property
    def busy(self) -> bool:
        """Whether a proposal is in progress or finished and not yet taken: a request now would
        ask again for the slots that proposal fills (it may finish between the loop's take and
        its next request)."""
        with self._cond:
            return self._busy or self._result is not None or self._error is not None

    def observe(self, job_id: int, params: Mapping[str, Any], value: Any, duration: float | None) -> None:
        """Queue a job's outcome for the optimizer. A job shown before gets its new outcome in
        place of the earlier one (:meth:`Optimizer.revise`): a job recorded as failed whose
        result file a shared filesystem showed late (see spearmint_nn.daemon.events.late_results)."""
        with self._cond:
            self._observations.append((job_id, dict(params), value, duration))

    def set_budget(self, budget: int | None) -> None:
        """Tell the optimizer a new max-finished-jobs before its next proposal."""
        with self._cond:
            self._budget = budget

    def request(self, n: int, pending: Sequence[Mapping[str, Any]]) -> None:
        with self._cond:
            self._request, self._busy = (n, [dict(p) for p in pending]), True
            self._cond.notify()

    def take(self) -> list[dict] | None:
        """The finished proposal, once; re-raises an exception of the optimizer.

        The job-file fields the optimizer attached to its points are then in ``taken_fields``.
        """
        with self._cond:
            if self._error is not None:
                raise DaemonError(f"the optimizer failed: {type(self._error).__name__}: {self._error}") from self._error
            result, self._result = self._result, None
            self.taken_fields, self._result_fields = self._result_fields, []
            return result

    def close(self) -> None:
        """Stop the thread, waiting for a proposal in progress up to PROPOSER_JOIN_SECONDS.

        The thread must end before the interpreter does: a daemon thread that has run torch code
        and is still alive at interpreter exit can abort the process ("terminate called without
        an active exception") after all the work is done.
        """
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(PROPOSER_JOIN_SECONDS)

    def _work(self) -> None:
        while True:
            with self._cond:
                while self._request is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                (n, pending), self._request = self._request, None
                observations, self._observations = self._observations, []
                budget, self._budget = self._budget, False
            try:
                if budget is not False:
                    self._optimizer.set_budget(budget)
                self._apply(observations)
                suggestion = self._optimizer.propose(n, pending=pending)
                proposal = suggestion.points
                # The job files and the daemon's ready points are its list of what is in flight,
                # passed as `pending` each time; a point the optimizer remembered would stay
                # pending forever once its job is cancelled, fails in a way not shown to the
                # model, or is dropped before it becomes a job.
                for params in proposal:
                    self._optimizer.forget(params)
                fields = _proposal_fields(suggestion)
                self._report(suggestion, n, len(pending))
                self.seconds_per_point = (suggestion.seconds - (suggestion.refit_seconds or 0.0)) / max(1, n)
                model_best = self._model_best()
                error = None
            except BaseException as exc:  # reported by the main thread through take()
                proposal, fields, error, model_best = None, [], exc, self.model_best
            with self._cond:
                self._result, self._result_fields, self._error, self._busy = proposal, fields, error, False
                self.model_best = model_best
                self._cond.notify_all()  # final_model_best may be waiting for the thread to be idle
            self._wake.set()

    def final_model_best(self, timeout: float) -> dict[str, Any] | None:
        """The model's best over every result queued so far, for the summaries at the end.

        Runs on the caller's thread once this one is idle (holding the lock, so no proposal can
        start meanwhile); if a proposal is still running after ``timeout`` seconds, the last
        proposal's model best is returned instead.
        """
        with self._cond:
            self._cond.wait_for(lambda: not self._busy, timeout)
            if self._busy or self._error is not None:
                return self.model_best
            observations, self._observations = self._observations, []
            self._apply(observations)
            self.model_best = self._model_best()
            if self._noisy:  # the model's best may have refitted the objective model
                self._write_warpings(self._optimizer.warpings)
            self._write_picture()
            return self.model_best

    def _apply(self, observations: list[tuple[int, dict, Any, float | None]]) -> None:
        """Show queued results to the optimizer, remembering each one's job id in its order; a
        job shown before is revised in place (one job, one observation)."""
        for job_id, params, value, duration in observations:
            index = self._index_of.get(job_id)
            if index is not None:
                self._optimizer.revise(index, value, duration=duration)
                continue
            self._optimizer.observe(params, value, duration=duration)
            self._index_of[job_id] = len(self._observed_ids)
            self._observed_ids.append(job_id)

    def _model_best(self) -> dict[str, Any] | None:
        """best.json's ``model_best`` (without params) from the fitted objective model."""
        if not self._noisy:
            return None
        best = self._optimizer.best_by_model()
        if best is None:
            return None
        return {"id": self._observed_ids[best.index], "mean": best.mean, "std": best.std, "value": best.observed,
                "observations": self._optimizer.n_observed, "fitted": time.time()}

    def _report(self, suggestion: "Suggestion", n: int, n_pending: int) -> None:
        """Log a proposal (and a restart the optimizer found), and write the model's new warpings."""
        refit = suggestion.refit_seconds
        self._log.event("model", f"suggested {n} point(s) in {suggestion.seconds:.2f} s from "
                             f"{suggestion.n_observed} observations ({n_pending} pending)"
                             + ("" if refit is None else f", model refit {refit:.2f} s"),
                             seconds=suggestion.seconds, refit_seconds=refit)
        start = suggestion.segment_start
        if start != self._segment_start:  # a restart, or one found on replay
            self._segment_start = start
            self._log.event("restart", f"the search restarted at evaluation {start}: no improvement in "
                                 f"{self._optimizer.settings.restart_after} evaluations (rounds of the jobs in "
                                 f"flight); the objective model now sees only the evaluations since", evaluation=start)
        self._write_warpings(suggestion.warpings)
        if refit is not None:
            self._write_related()
        if suggestion.refit_seconds is not None and time.monotonic() - self._picture_written >= PICTURE_SECONDS:
            self._write_picture()

    def _write_picture(self) -> None:
        """Replace the report file of what the objective model says (nothing without a model)."""
        if self._picture_file is None:
            return
        self._picture_written = time.monotonic()
        try:
            picture = self._optimizer.model_picture()
        except Exception as exc:  # a report must never stop the search
            self._log.event("warning", f"the model's picture for the report failed: {exc!r}")
            return
        if picture is not None:
            self._picture_file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self._picture_file, json.dumps({**picture, "written": time.time()}).encode())

    def _write_related(self) -> None:
        if self._related_file is not None and self._optimizer.related:
            self._related_file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self._related_file, json.dumps(
                {"related": self._optimizer.related_summary(), "written": time.time()}).encode())

    def _write_warpings(self, warpings: dict[str, Any] | None) -> None:
        """Replace the report file of the objective model's learned input warpings."""
        if warpings is not None and self._warpings_file is not None:
            self._warpings_file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self._warpings_file, json.dumps(warpings).encode())


def _proposal_fields(suggestion: "Suggestion") -> list[dict[str, Any]]:
    """Job-file fields for each point of a suggestion, for the reports: ``chosen_by`` (what chose
    it: "sobol", "exploration", "gp", "dngo"), ``search_start`` (the first evaluation the
    objective model saw: it moves at a restart) and ``predicted_duration`` (seconds) where EI
    per second predicted one, to set against the actual."""
    fields = []
    for chosen_by, predicted in zip(suggestion.chosen_by, suggestion.predicted_durations):
        point = {"chosen_by": chosen_by, "search_start": suggestion.segment_start}
        fields.append(point if predicted is None else {**point, "predicted_duration": float(predicted)})
    return fields
