"""The ask/tell Optimizer: the one seam between the search logic and everything that runs jobs.

Usable on its own, without a daemon or files::

    opt = Optimizer({"x": {"type": "FLOAT", "min": -5, "max": 10}}, seed=0)
    for _ in range(30):
        params = opt.suggest(1)[0]
        opt.observe(params, f(params["x"][0]))

The daemon uses exactly this class, built from config.json's
:class:`~spearmint_nn.problem.settings.SearchSettings`, and reads each proposal as a
:class:`Suggestion` (:meth:`Optimizer.propose`). One suggestion goes:

1. While fewer than ``initial_design`` points of the current segment (all points, unless the
   search restarted) are finished or pending, the next unused point of
   a scrambled Sobol sequence (``model="sobol"`` never leaves this stage: random search).
   While jobs have failed and none has succeeded, the next point of a space-filling design
   over everything evaluated and pending instead (:mod:`spearmint_nn.search.exploration`): there is
   nothing to model yet.
2. Otherwise the surrogate is refitted if observations arrived since the last fit (one refit
   however many arrived), on the finite objective values through the output transform
   (:mod:`spearmint_nn.search.transforms`; every one ends standardised to mean 0, variance 1).
   One classifier per CONSTRAINT task, plus one for "the job succeeded" once a failure has
   been seen, is refitted the same way (:mod:`spearmint_nn.models.classifier`).
3. Pending jobs (and the earlier points of the same batch) are fantasised
   (:func:`~spearmint_nn.search.acquisition.condition_on_pending`), and the acquisition (integrated
   EI by default, times P(feasible)) is maximised by :func:`~spearmint_nn.search.maximize.maximize`,
   the members of a GP's batch on one screening set (:class:`~spearmint_nn.search.maximize.BatchScreening`).
   DNGO, which draws f jointly at thousands of points cheaply, then chooses the rest of the
   batch at once on those draws (:mod:`spearmint_nn.search.batch_draws`); so does the GP, on
   fewer candidates, when other jobs are running (see :meth:`Optimizer._batch_from_draws`).

A NOISELESS objective's failed points also rule out their neighbourhoods (radius
:func:`~spearmint_nn.search.candidates.failure_radius`) for every later proposal: a deterministic job
fails there again. What the models are told about the experiment (likelihoods, a conditional
space) is in :mod:`spearmint_nn.search.model_bank`. With ``acquisition="ei-per-second"`` a
model of log job duration is fitted on the observed durations, and each proposal's predicted
duration is in :attr:`Suggestion.predicted_durations`.

``model="auto"`` (the default) uses the GP while it is the better and affordable model and DNGO
beyond, see :func:`~spearmint_nn.search.policy.auto_model_choice`.

A search that has stopped improving restarts (:func:`~spearmint_nn.search.policy.restart_index`):
the objective model is then fitted only to the observations from the restart on, beginning with
a new initial design, while the constraint models and :attr:`Optimizer.incumbent` keep everything.

With ``direction="maximize"`` the objective values are negated as they are observed, so all of
the above minimises; :attr:`Optimizer.incumbent` and :meth:`Optimizer.best_by_model` give them
back in the user's sign.

``related`` searches (:mod:`spearmint_nn.search.related`) make the GP a multi-task GP over this
search and theirs; DNGO, once "auto" switches to it, models this search alone.

The Optimizer's own torch work (fits, the acquisition's maximisation) runs on
``torch_threads`` threads (default 1, as the daemon), set on entry of each public call and the
caller's count restored on exit (:func:`own_torch_threads`): the user's training loop in the
same process keeps its threads, and a seed gives the same proposals whatever they are.

The models' states are kept across runs only through the
:class:`~spearmint_nn.search.model_store.ModelStore` the Optimizer is given; it writes no file
itself.
"""
from __future__ import annotations

import functools
import logging
import math
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import numpy as np
import torch

from .acquisition import condition_on_pending, make_acquisition
from .batch_draws import choose_batch
from .candidates import KeepAway, both, crowding, default_n_candidates, failure_radius
from .exploration import SobolStream, exploration_point
from .maximize import BatchScreening, GP_DRAW_CANDIDATES, maximize, minimize_sample_path
from .reports import ModelBest, describe_model, model_best, in_units
from ..problem.settings import (AUTO, AUTO_FINAL, AUTO_START, DURATION_ACQUISITION, KERNELS, RANDOM_SEARCH, SURROGATES,
                                 SearchSettings, check_registry)
from .observations import Observations
from ..stopping.decision import Decision
from ..stopping.prediction import Prediction
from .model_store import ModelStore
from .related import RelatedTask, related_tasks, summarise_related
from .policy import PACE_CALLS, RESTART_EARLIEST_DESIGNS, auto_model_choice, restart_index, waiting_share
from .model_bank import MIN_VALUES_TO_FIT, ModelBank, torch_rows
from ..problem.space import Space
from .suggestion import Suggestion
from ..models import GP_MODELS, MODELS
from ..models.base import MultiTask, PathSampler
from ..models.kernels import CORRELATIONS

log = logging.getLogger(__name__)

# The models do not import the search, so their registries are checked against the names here.
check_registry("spearmint_nn.models.MODELS", MODELS, SURROGATES)
check_registry("spearmint_nn.models.kernels.CORRELATIONS", CORRELATIONS, KERNELS)

# A batch chosen on joint draws screens the neighbourhoods of this many best observations.
BATCH_ANCHORS = 5

Method = TypeVar("Method", bound=Callable[..., Any])


def own_torch_threads(method: Method) -> Method:
    """Run an Optimizer method on its ``settings.torch_threads`` torch threads (None: the
    caller's), restoring the caller's count after.

    Torch's default is one thread per core, and the Python API runs where the cores are shared
    (login nodes, notebook servers): DNGO's proposals took 68-126 s there with 2 threads against
    about 4 s with one, and were no faster with 2 on an idle 2-core machine. Parallel sums also
    add in an order set by the thread count, so a seed means the same proposals only at a fixed
    count. The count is set per call rather than once for the process so that the caller's own
    torch work (a training loop between ask and tell) keeps its threads."""
    @functools.wraps(method)
    def with_own_threads(self: "Optimizer", *args: Any, **kwargs: Any) -> Any:
        wanted, caller = self.settings.torch_threads, torch.get_num_threads()
        if wanted is None or wanted == caller:
            return method(self, *args, **kwargs)
        torch.set_num_threads(wanted)
        try:
            return method(self, *args, **kwargs)
        finally:
            torch.set_num_threads(caller)

    return with_own_threads  # type: ignore[return-value]


class Optimizer:
    """Suggest points to evaluate and learn from their results.

    ``Optimizer(space, settings, state=...)``: ``space`` is a :class:`Space` or the
    ``variables`` object of a config.json (name -> spec); ``settings`` a
    :class:`~spearmint_nn.problem.settings.SearchSettings` (its fields say what each does).
    Instead of ``settings`` its fields may be given as keywords, ``tasks`` in either form and
    ``likelihoods`` (task name -> "NOISELESS" | "GAUSSIAN") over what ``tasks`` says::

        Optimizer(variables, model="gp", seed=0, budget=30)

    ``state`` is the :class:`~spearmint_nn.search.model_store.ModelStore` where models keep
    their weights for warm starts across restarts, or None to keep nothing; ``state_dir``
    (a folder) is short for ``state=ModelStore(state_dir)``.

    ``related``: finished searches on related problems, each a
    :class:`~spearmint_nn.search.related.RelatedTask` or a pair (``variables`` of that search,
    its results as (params, value) pairs with values as :meth:`observe` takes them). Their
    variables must match these by name and type; ranges may differ. The GP then learns how
    strongly each correlates with this search (:meth:`related_summary`).

    ``early_stopping``: the config key ``early-stopping``'s options for early stopping in
    ask/tell (:meth:`report`, :meth:`should_stop`, :meth:`stop_decision`, :meth:`tell_stopped`):
    the daemon's rules and options on the curves told for handed-out points (what the rules see:
    :mod:`spearmint_nn.search.observations`)::

        opt = Optimizer(variables, seed=0, early_stopping={"rule": "median", "min-steps": 5})
        params = opt.suggest(1)[0]
        for epoch in range(1, 51):
            loss = train_one_epoch(params)
            opt.report(params, epoch, loss)
            if opt.should_stop(params):        # why: opt.stop_decision(params).why
                opt.tell_stopped(params)       # seen at its predicted final value: no failure
                break
        else:
            opt.observe(params, loss)          # its final value, as for any point

    Absent, ``early_stopping`` is ``{}``, the key's defaults: the model rule with min-steps 0,
    min-jobs 5 and probability 0.05. Points are identified by their params, as :meth:`observe`
    identifies them. A point is judged against the final values of the points observed (the
    median rule needs ``min-jobs`` of them whose curves reached its step) and the curves of all.

    A wrong setting raises :class:`~spearmint_nn.errors.ConfigError` (a ValueError) naming its
    field, a wrong ``variables`` mapping one naming the variable; an unknown keyword is a TypeError.
    """

    def __init__(
        self,
        space: Space | Mapping[str, Any],
        settings: SearchSettings | None = None,
        *,
        state: ModelStore | None = None,
        state_dir: str | Path | None = None,
        likelihoods: Mapping[str, str] | None = None,
        related: Sequence[RelatedTask | tuple[Any, Sequence[tuple[Mapping[str, Any], Any]]]] = (),
        early_stopping: Mapping[str, Any] | None = None,
        **keywords: Any,
    ):
        self.space = space if isinstance(space, Space) else Space.from_config(space)
        if settings is None:
            settings = SearchSettings.from_keywords(likelihoods, **keywords)
        elif keywords or likelihoods is not None:
            raise TypeError("Optimizer takes settings or keyword settings, not both")
        if state_dir is not None:
            if state is not None:
                raise TypeError("Optimizer takes state or state_dir, not both")
            state = ModelStore(state_dir)
        self.state = state
        self._settings = settings

        self.related = related_tasks(self.space, related, settings)
        self._rng = np.random.default_rng(settings.seed)
        self._data = Observations(self.space, settings.tasks, settings.sign, early_stopping)
        self._sobol = SobolStream(self.space, self._seed_draw(), self._rng)
        auto_choice = state.auto_choice() if state is not None else AUTO_START
        #: The fitted models (:class:`~spearmint_nn.search.model_bank.ModelBank`).
        self.models = ModelBank(self.space, settings, auto_choice if settings.model == AUTO else settings.model,
                                state, self.related)
        # Where the current search segment starts (restart_index); None until first computed,
        # so that a model restored from the state is taken as the current segment's.
        self._segment_start: int | None = None
        # The most jobs in flight at once (pending plus those being proposed) in any proposal so
        # far: the round size restarts count in (search_start).
        self._most_in_flight = 1
        # The GP's last asynchronous proposals, (seconds, points, jobs in flight): the auto rule's pace.
        self._gp_calls: deque[tuple[float, int, int]] = deque(maxlen=PACE_CALLS)
        self.last_suggest_seconds: float | None = None

    # ------------------------------------------------------------------------------- tell

    def observe(
        self, params: Mapping[str, Any], value: Any, duration: float | None = None
    ) -> None:
        """Record the result of evaluating params.

        ``value`` is a number, a dict task -> number (Spearmint's ``tasks``), or NaN/None for a
        failure; an infinite or missing objective is a failure too. A tensor or array of one
        element (``loss`` for ``loss.item()``) counts as its number. ``duration`` is the job's
        run time in seconds (>= 0), if known. A point handed out by :meth:`suggest` stops being
        pending. A refused call (params not in the space: ConfigError; a value that is not one
        number, an unknown task, a duration that is negative, NaN, infinite or not a number:
        ValueError naming it) leaves the optimizer unchanged.

        Params observed before are a repeated measurement: recorded again, so that the models
        see both values (a noisy objective's model averages them, as BoTorch or Optuna keep
        every trial), with a UserWarning naming the point, since a repeat is more often a
        mistake (one result told twice) than a deliberate second evaluation.
        """
        self._data.add(params, value, duration)

    def revise(self, index: int, value: Any, duration: float | None = None) -> None:
        """Replace the result of the ``index``-th observation (0-based, in the order observed)
        by ``value`` and ``duration``, taken as :meth:`observe` takes them; its point stays.

        For a result told too early: a job first recorded as failed (NaN) whose value turned
        up later, as a result file a shared filesystem showed late. The models are refitted to
        the revised data at the next proposal, as after new observations; observing the point
        again instead would leave both the failure and the value in the data. A refused call
        (no such observation: IndexError; a refused value or duration: ValueError) changes nothing.
        """
        self._data.revise(index, value, duration)
        self.models.data_revised()

    @property
    def pending(self) -> list[dict[str, Any]]:
        """The points :meth:`suggest` handed out that are not yet observed (nor forgotten), in
        wrapper form, in the order handed out."""
        return self.space.decode(np.asarray(self._data.handed_out).reshape(-1, self.space.dim))

    def forget(self, params: Mapping[str, Any]) -> bool:
        """Stop treating a handed-out point as pending, for a job that will never be observed
        (cancelled, lost). Returns whether it was pending."""
        return self._data.forget(params)

    # -- early stopping in ask/tell ----------------------------------------------------------

    def report(self, params: Mapping[str, Any], step: Any, value: Any) -> None:
        """Tell the objective's ``value`` at ``step`` (an epoch, a number of samples: the unit of
        ``min-steps``) for the point ``params`` (handed out by ``suggest`` and still running).
        ``value`` and ``step`` are numbers (a tensor or array of one element counts); a value
        that is NaN or infinite is skipped with a warning, as the daemon skips such a report line.
        A refused call (params outside the space: ConfigError; a step or value that is not a
        finite number: ValueError) changes nothing."""
        self._data.report(params, step, value)

    def should_stop(self, params: Mapping[str, Any]) -> bool:
        """Whether the rule says to stop ``params`` now: :meth:`stop_decision`'s ``stop``."""
        return self._data.stop_decision(params).stop

    def stop_decision(self, params: Mapping[str, Any]) -> Decision:
        """The rule's answer on the reports told for ``params`` so far: ``stop`` (a bool) and
        ``why`` (one line, as the daemon logs it). False without a report or for an observed
        point; True once the point was told stopped. Asked again before a new report, the same answer."""
        return self._data.stop_decision(params)

    def tell_stopped(self, params: Mapping[str, Any]) -> Prediction | None:
        """Tell that ``params`` was stopped early. Like the daemon's stopped jobs it is observed at
        its predicted final value (returned: ``value``, ``sd``, and the ``jobs`` it rests on; see
        the module docstring), or, with fewer than 3 complete points past its step, stays pending
        for good (in :attr:`pending`; a point not handed out is added; None returned). Its curve
        stays for the rules; :meth:`observe` it instead if it ran to its end after all. A point
        already observed is a ValueError."""
        return self._data.stopped(params)

    # -- settings and what the search knows -----------------------------------------------------

    def set_budget(self, budget: int | None) -> None:
        """Change :attr:`SearchSettings.budget` (evaluations in all, None: no limit) for the
        proposals from now on, e.g. when the experiment's max-finished-jobs changes."""
        self.settings = replace(self.settings, budget=budget)

    @property
    def settings(self) -> SearchSettings:
        """The :class:`~spearmint_nn.problem.settings.SearchSettings` of the proposals from now on
        (assigning new ones passes them on to the models)."""
        return self._settings

    @settings.setter
    def settings(self, settings: SearchSettings) -> None:
        self._settings = self.models.settings = settings

    @property
    def n_observed(self) -> int:
        return len(self._data)

    @property
    def initial_design(self) -> int:
        """Sobol points before the model is used: the setting, or the space's default."""
        given = self.settings.initial_design
        return self.space.default_initial_design if given is None else given

    @property
    def search_start(self) -> int:
        """Index of the first observation the objective model is fitted to: 0 until the search
        restarts (:func:`~spearmint_nn.search.policy.restart_index`), then the number of
        observations at the last restart. Random search has no model and never restarts.

        Stalls are counted in rounds of the most jobs this optimizer has had in flight at once
        (the daemon's max-concurrent once its slots are full): with 50 jobs in flight, ten rounds
        of 50 results without improvement are what ten results are to a sequential search. A
        segment never moves back: when more jobs than before are in flight, the larger rounds
        would place fewer restarts, but one that happened stays."""
        if self.settings.model == RANDOM_SEARCH:
            return 0
        objective = np.where(self.feasible_mask(), np.asarray(self._data.objective, dtype=float), math.nan)
        start = restart_index(objective, self.settings.restart_after, RESTART_EARLIEST_DESIGNS * self.initial_design,
                              self.settings.budget, round_size=self._most_in_flight)
        return max(start, self._segment_start or 0)

    @property
    def surrogate_name(self) -> str:
        """The model in use for the objective: ``model``, or for "auto" its current choice."""
        return self.models.surrogate_name

    @property
    def warpings(self) -> dict[str, Any] | None:
        """The learned input warpings of the objective model's latest fit, in the format of
        :func:`spearmint_nn.models.warping.warping_summary` (reports draw them), or None before
        a fit or for a model that warps no input."""
        return self.models.warpings

    @property
    def last_fit_seconds(self) -> float | None:
        """Seconds the latest refit of the models took (None before the first)."""
        return self.models.last_fit_seconds

    def feasible_mask(self) -> np.ndarray:
        """Boolean (N,): the job succeeded and every constraint value is >= 0."""
        return self._data.feasible_mask()

    @property
    def incumbent(self) -> tuple[dict[str, Any], float] | None:
        """(params in wrapper form, objective in the user's sign) of the best feasible
        observation (the lowest, or with ``direction="maximize"`` the highest), or None."""
        best = self._data.best_feasible()
        if best is None:
            return None
        return self.space.decode(self._data.X[best][None])[0], self.settings.sign * float(self._data.objective[best])

    @own_torch_threads
    def best_by_model(self) -> ModelBest | None:
        """The feasible observation whose objective the fitted model believes best (lowest
        posterior mean; highest when maximising), Spearmint's report for a noisy objective, or
        None without a model (random search, fewer than two successful values) or a feasible
        observation. Refits the models first if observations arrived since the last fit.

        The model is the objective model while the search has not restarted. After a restart
        that model sees only the current segment, and the best point most likely lies before
        it, so a second model of the same kind is fitted to every observation
        (:meth:`ModelBank.whole_data_model`). Mean and std are mapped back through the output
        transform by sampling (:mod:`spearmint_nn.search.reports`).
        """
        fitted = self._model_of_all_data()
        if fitted is None:
            return None
        objective = np.asarray(self._data.objective, dtype=float)
        return model_best(*fitted, torch_rows(self._data.X, self.space.dim), np.flatnonzero(self.feasible_mask()),
                          objective, objective[np.isfinite(objective)], lambda row: self.space.decode(row[None])[0],
                          self.settings.sign)

    @own_torch_threads
    def model_picture(self) -> dict[str, Any] | None:
        """What the model says, for the reports (:mod:`spearmint_nn.search.reports`):
        importance, slices through the best feasible observation and a contour, in the user's
        sign, from the same model as :meth:`best_by_model`; None where that is None."""
        fitted = self._model_of_all_data()
        if fitted is None:
            return None
        objective = np.asarray(self._data.objective, dtype=float)
        observed = objective[np.isfinite(objective)]
        # a fixed seed: drawing from the proposals' generator would make them depend on when a report was made
        picture = describe_model(fitted[0], self.space, self._data.X[self._data.best_feasible()],
                                 lambda t: self.settings.sign * in_units(fitted[1], t, observed), seed=0)
        return {"model": self.surrogate_name, "observations": self.n_observed, **picture}

    def _model_of_all_data(self) -> tuple[Any, Any] | None:
        """The objective model and its output transform fitted to every finite value (the
        current model before a restart, :meth:`ModelBank.whole_data_model` after), refitted if
        results arrived; None without a model, a feasible observation or enough values to fit."""
        objective = np.asarray(self._data.objective, dtype=float)
        if (self.settings.model == RANDOM_SEARCH or not self.feasible_mask().any()
                or np.isfinite(objective).sum() < MIN_VALUES_TO_FIT):
            return None
        self._follow_restarts()
        if self._segment_start == 0:
            self._refit_if_needed()  # fits the objective model to every finite value
            return self.models.objective, self.models.transform
        return self.models.whole_data_model(self._data)

    # -------------------------------------------------------------------------------- ask

    def suggest(self, n: int = 1, pending: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
        """Return n params dicts (wrapper form) to evaluate next: the points of :meth:`propose`."""
        return self.propose(n, pending).points

    @own_torch_threads
    def propose(self, n: int = 1, pending: Sequence[Mapping[str, Any]] = ()) -> Suggestion:
        """Choose n points to evaluate next; the :class:`Suggestion` holds them (params dicts in
        wrapper form) and what is known about the call.

        Pending jobs are the points earlier calls handed out and that are not yet observed
        (:attr:`pending`; :meth:`forget` drops one), plus ``pending``, points running
        elsewhere (a point in both counts once). Points are chosen one after another, each
        treating the pending jobs and the earlier points of this batch as running jobs, so a
        batch spreads out; the n points returned are pending from then on. A proposal never
        repeats a finished, failed or pending point unless every point of a finite space is
        taken (then a warning is logged).

        Every ``thompson_every``-th proposal (by its position among all jobs proposed, so a
        batch of 10 has one and a restarted daemon keeps the rhythm) made while other jobs are
        pending is a Thompson sample: the lowest point of one posterior draw of f (given the
        fantasies). Fantasies spread a batch only where the model is unsure; when it is sure of
        a basin, every EI maximiser stays in it, while a sequential run would learn from each
        result there in turn. The Thompson member keeps exploring in proportion to the
        probability that a region holds the minimum.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n: expected a number of points >= 0, got {n!r}")
        start, fits_before = time.perf_counter(), self.models.fits
        running = self._data.pending_rows(pending)
        self._most_in_flight = max(self._most_in_flight, len(running) + n)
        if self.settings.model == AUTO:
            self._update_auto_choice(len(running) + n)
        self._follow_restarts()
        taken = list(self._data.X) + running
        keep_away = self._keep_away()
        thompson_every = self.settings.thompson_every
        chosen: list[np.ndarray] = []
        chosen_by: list[str] = []
        screening = BatchScreening() if n > 1 else None  # one screening set for the batch's members
        while len(chosen) < n:
            avoid = np.asarray(taken + chosen, dtype=float).reshape(-1, self.space.dim)
            n_pending = len(avoid) - self.n_observed
            source = "sobol"
            if self.settings.model == RANDOM_SEARCH:
                x = self._next_sobol(avoid, keep_away)
            elif self._nothing_succeeded():
                x = exploration_point(self.space, avoid, keep_away=keep_away, seed=self._seed_draw())
                x, source = (self._next_sobol(avoid, keep_away), source) if x is None else (x, "exploration")
            elif len(avoid) - self._segment_start < self.initial_design:
                x = self._next_sobol(avoid, keep_away)
            else:
                thompson = n_pending > 0 and thompson_every > 0 and (len(avoid) + 1) % thompson_every == 0
                crowded = crowding(self.space, avoid[len(avoid) - n_pending:], n - len(chosen),
                                   self.settings.crowding_share)
                x = self._model_proposal(avoid, n_pending, both(keep_away, crowded), thompson, screening)
                if x is not None:
                    # A model that draws paths cheaply chooses the rest of the batch around this one at once.
                    chosen += [x, *self._batch_from_draws(np.vstack([avoid, x]), n_pending + 1, n - len(chosen) - 1,
                                                          keep_away, top_up=bool(running))]
                    chosen_by += [self.surrogate_name] * (len(chosen) - len(chosen_by))
                    continue
                x = self._next_sobol(avoid, both(keep_away, crowded))  # nothing to model yet
            chosen.append(x)
            chosen_by.append(source)
        self._data.handed_out += chosen
        predicted = [self.models.durations.predict(x) for x in chosen]
        warpings = self.models.warpings if self.models.warpings_new else None
        self.models.warpings_new = False
        self.last_suggest_seconds = time.perf_counter() - start
        if self.settings.model == AUTO and running and AUTO_START in chosen_by:
            self._gp_calls.append((self.last_suggest_seconds, n, len(running) + n))
        return Suggestion(
            points=self.space.decode(np.asarray(chosen).reshape(-1, self.space.dim)),
            predicted_durations=predicted,
            seconds=self.last_suggest_seconds,
            refit_seconds=self.last_fit_seconds if self.models.fits != fits_before else None,
            n_observed=self.n_observed,
            segment_start=self._segment_start,
            warpings=warpings,
            chosen_by=chosen_by,
        )

    # ----------------------------------------------------------------------------- stages

    def _follow_restarts(self) -> None:
        """Set the current segment (:func:`~spearmint_nn.search.policy.restart_index`); when the
        search has just restarted, replace the objective model by a fresh one, so nothing of the
        stuck fit carries over."""
        start = self.search_start
        if self._segment_start is not None and start != self._segment_start:
            log.info("no improvement in %d evaluations: restarting the search at evaluation %d "
                     "(the objective model now sees only what follows)", self.settings.restart_after, start)
            self.models.restart()
        self._segment_start = start

    def _seed_draw(self) -> int:
        return int(self._rng.integers(2**31))

    def _nothing_succeeded(self) -> bool:
        """Whether jobs have failed and none has returned a finite objective value."""
        return self.n_observed > 0 and not np.isfinite(np.asarray(self._data.objective, dtype=float)).any()

    def _keep_away(self) -> KeepAway | None:
        """The neighbourhoods of the failed points, for a NOISELESS objective that has failures."""
        failed = ~np.isfinite(np.asarray(self._data.objective, dtype=float))
        tasks = self.settings.tasks
        if tasks.likelihoods.get(tasks.objective) != "NOISELESS" or not failed.any():
            return None
        return KeepAway(np.asarray(self._data.X)[failed], failure_radius(self.space))

    def _next_sobol(self, avoid: np.ndarray, keep_away: KeepAway | None = None) -> np.ndarray:
        """The next point of the Sobol stream (:class:`~spearmint_nn.search.exploration.SobolStream`),
        or a taken one once every point of a finite space is taken."""
        x = self._sobol.next(avoid, keep_away)
        if x is not None:
            return x
        log.warning("search space exhausted: every valid point has been tried; repeating one")
        return avoid[int(self._rng.integers(len(avoid)))]

    def _model_proposal(self, avoid: np.ndarray, n_pending: int, keep_away: KeepAway | None,
                        thompson: bool = False, screening: BatchScreening | None = None) -> np.ndarray | None:
        """Maximise the acquisition, or with ``thompson`` minimise a posterior draw of f (once
        there is a model and a feasible point), outside ``keep_away``; ``avoid``'s last
        n_pending rows are pending. The objective, its best value and the anchor are the
        current segment's. None while there is nothing to model: fewer than two finite values
        and no failure model."""
        self._refit_if_needed()
        start, fantasies = self._segment_start, self.settings.fantasies
        objective = np.asarray(self._data.objective[start:], dtype=float)
        finite = np.isfinite(objective)
        feasible = self.feasible_mask()[start:]
        generator = torch.Generator().manual_seed(self._seed_draw())
        X_pending = torch_rows(avoid[len(avoid) - n_pending:], self.space.dim)
        feasibility = [c.fantasize(X_pending, fantasies, generator) if n_pending else c
                       for c in self.models.feasibility]
        model, best, anchors = None, None, None
        # The auto switch to DNGO can make a model before there is anything to fit it to.
        objective_model, transform = self.models.objective, self.models.transform
        fitted = objective_model is not None and finite.sum() >= MIN_VALUES_TO_FIT
        if fitted and feasible.any():
            best_index = np.flatnonzero(feasible)[np.argmin(objective[feasible])]
            best_value = float(transform(objective[best_index]))
            model, best = condition_on_pending(objective_model, best_value, X_pending, fantasies, generator)
            anchors = self._data.X[start + best_index][None]
        elif fitted and not feasibility:
            # No feasible point yet and nothing learned about feasibility: improve on the best
            # finite value, the only signal there is.
            best_value = float(transform(np.min(objective[finite])))
            model, best = condition_on_pending(objective_model, best_value, X_pending, fantasies, generator)
        elif not feasibility:
            return None
        if thompson and anchors is not None:
            x = minimize_sample_path(model, self.space, avoid=avoid, anchors=anchors,
                                     feasibility=feasibility, seed=self._seed_draw(), keep_away=keep_away)
            if x is not None:
                return x
        options = dict(self.settings.acquisition_options)
        if self.settings.acquisition == DURATION_ACQUISITION:
            options["duration"] = self.models.durations.model
        acquisition = make_acquisition(self.settings.acquisition, model, best, feasibility, **options)
        seed, n_candidates = self._seed_draw(), self.settings.n_candidates
        screened = None if screening is None or model is None else screening.scores(
            acquisition, objective_model, model, X_pending, self.space, avoid=avoid, anchors=anchors,
            n_candidates=n_candidates, seed=seed, keep_away=keep_away)
        proposal = maximize(acquisition, self.space, avoid=avoid, anchors=anchors, n_candidates=n_candidates,
                            seed=seed, keep_away=keep_away, screened=screened)
        if proposal.repeat:
            log.warning("search space exhausted: every valid point has been tried; repeating the best one")
        return proposal.x

    def _batch_from_draws(self, avoid: np.ndarray, n_pending: int, n: int, keep_away: KeepAway | None,
                          top_up: bool) -> np.ndarray:
        """The next n points chosen together on joint posterior draws
        (:func:`~spearmint_nn.search.batch_draws.choose_batch`), or none (shape (0, dim)) where
        that does not apply: it needs a fitted model that draws paths, expected improvement as
        the acquisition, and a feasible observation. ``avoid``'s last n_pending rows are pending.

        The batch's first point, chosen before by maximising EI with gradient refinement, gives
        it the precision that screening alone lacks near the incumbent; the draws spread the
        rest (measured in RESULTS.md, "`benchmarks.parallel`"). DNGO draws for every batch. The
        GP draws (on ``GP_DRAW_CANDIDATES`` candidates: its draws cost M^3) only for a
        ``top_up``, a call made while other jobs run: its points are completions that piled up
        during the last call, and fantasising them one by one would make the next call longer
        still. A batch that starts with nothing running is better fantasised point by point."""
        none = np.zeros((0, self.space.dim))
        is_gp = self.surrogate_name in GP_MODELS
        model = self.models.objective
        if (n < 1 or self.settings.acquisition != "ei" or not isinstance(model, PathSampler)
                or (is_gp and not top_up)):
            return none
        start = self._segment_start
        objective = np.asarray(self._data.objective[start:], dtype=float)
        feasible = np.flatnonzero(self.feasible_mask()[start:])
        if np.isfinite(objective).sum() < MIN_VALUES_TO_FIT or not len(feasible):
            return none
        ranked = feasible[np.argsort(objective[feasible])]
        X = np.asarray(self._data.X)[start:]
        n_candidates = self.settings.n_candidates or default_n_candidates(self.space.dim)
        if is_gp:
            n_candidates = min(n_candidates, GP_DRAW_CANDIDATES)
        return choose_batch(
            model, self.space, n, observed=X[feasible], avoid=avoid,
            pending=avoid[len(avoid) - n_pending:], anchors=X[ranked[:BATCH_ANCHORS]],
            feasibility=self.models.feasibility,
            n_candidates=n_candidates, thompson_every=self.settings.thompson_every,
            crowding_share=self.settings.crowding_share, seed=self._seed_draw(), keep_away=keep_away)

    def _refit_if_needed(self) -> None:
        """Refit the models (:meth:`ModelBank.refit`; the objective model on the current
        segment) if observations arrived since the last fit."""
        self.models.refit(self._data, self._segment_start, round_size=self._most_in_flight)

    @own_torch_threads
    def related_summary(self) -> list[dict[str, Any]]:
        """Per related search, what it gave the model: :func:`~spearmint_nn.search.related.summarise_related`."""
        model = self.models.objective
        fitted = isinstance(model, MultiTask) and self.models.fits > 0
        return summarise_related(self.related, model.task_correlations().numpy() if fitted else None,
                                 self.settings.seed)

    def _update_auto_choice(self, n_in_flight: int) -> None:
        """Switch "auto" from the GP to DNGO once :func:`~spearmint_nn.search.policy.auto_model_choice`
        says so; never back.

        The switch is one-way and recorded in the state (:meth:`ModelStore.record_auto_switch`):
        N only grows, a large batch tends to recur, and each switch costs a model trained from scratch.
        """
        waiting = waiting_share(self._gp_calls)
        if self.surrogate_name == AUTO_FINAL or auto_model_choice(self.n_observed, n_in_flight, waiting) == AUTO_START:
            return
        log.info("model auto: switching from the GP to DNGO at %d observations with %d job(s) in flight, "
                 "the GP keeping %.0f%% of the workers waiting", self.n_observed, n_in_flight, 100 * waiting)
        self.models.switch_surrogate(AUTO_FINAL)
        if self.state is not None:
            self.state.record_auto_switch(self.n_observed, n_in_flight)
