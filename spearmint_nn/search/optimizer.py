"""The ask/tell Optimizer: the one seam between the search logic and everything that runs jobs.

Usable on its own, without a daemon or files::

    opt = Optimizer({"x": {"type": "FLOAT", "min": -5, "max": 10}}, seed=0)
    for _ in range(30):
        params = opt.suggest(1)[0]
        opt.observe(params, f(params["x"][0]))

The daemon uses exactly this class. One suggestion goes:

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
   EI by default, times P(feasible)) is maximised by :func:`~spearmint_nn.search.maximize.maximize`.

A NOISELESS objective's failed points also rule out their neighbourhoods (radius
:func:`~spearmint_nn.search.exploration.failure_radius`) for every later proposal: a deterministic job
fails there again. What the model is told about the experiment: a NOISELESS objective gives the
GP a fixed jitter instead of a sampled noise; a conditional space gives the GP the arc kernel
on the value columns of the conditional variables (:func:`conditional_kernel`), while DNGO
reads the encoding as is (relevance indicator plus neutral value). With
``acquisition="ei-per-second"`` a :class:`~spearmint_nn.models.duration.DurationModel` of log
job duration is fitted on the observed durations, and each proposal's predicted duration is
kept in :attr:`Optimizer.last_predicted_durations`.

``model="auto"`` (the default) uses the GP while it is the better and affordable model and DNGO
beyond, see :func:`auto_model_choice`.

A search that has stopped improving restarts (:func:`restart_index`): the objective model is then
fitted only to the observations from the restart on, beginning with a new initial design, while
the constraint models and :attr:`Optimizer.incumbent` keep everything.

With ``direction="maximize"`` the objective values are negated as they are observed, so all of
the above minimises; :attr:`Optimizer.incumbent` and :meth:`Optimizer.best_by_model` give them
back in the user's sign.
"""
from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .acquisition import ACQUISITIONS, condition_on_pending, make_acquisition
from .arguments import choice, count, options, parse_direction, parse_tasks
from .exploration import SobolStream, exploration_point, failure_radius
from ..experiment.layout import OBJECTIVE_MODEL_DIR
from .model_best import ModelBest, model_best
from .model_state import restore
from .observations import Observations
from .policy import DEFAULT_RESTART_AFTER, RESTART_EARLIEST_DESIGNS, restart_index
from ..models import GP_MODELS, MODELS, make_model
from ..models.classifier import ConstraintClassifier
from ..models.duration import DurationModel
from ..models.kernels import CORRELATIONS, Conditional
from ..models.constraint_value import ConstraintValueModel
from .maximize import KeepAway, continuous_columns, maximize, minimize_sample_path
from .space import Space
from ..files import atomic_write_bytes
from .transforms import AUTO as TRANSFORM_AUTO
from .transforms import OUTPUT_TRANSFORMS, TRANSFORM_CHOICES, LogShift, Standardise, YeoJohnson, default_transform

log = logging.getLogger(__name__)

RANDOM_SEARCH = "sobol"
AUTO = "auto"
# The auto rule's thresholds (measured: see auto_model_choice).
AUTO_GP_MAX_OBSERVATIONS = 200
AUTO_GP_MAX_IN_FLIGHT = 20
AUTO_STATE_FILE = "auto.json"  # under state_dir: the switch to DNGO, kept across restarts
DURATION_ACQUISITION = "ei-per-second"
SUCCESS = "success"  # the implicit constraint "the job returned a finite objective"
DEFAULT_FANTASIES = 10
DEFAULT_THOMPSON_EVERY = 10
# A surrogate is fitted once this many objective values are finite (standardising needs a spread).
MIN_VALUES_TO_FIT = 2
CONSTRAINT_MODELS = ("classifier", "value")


def auto_model_choice(n_observed: int, n_in_flight: int) -> str:
    """The surrogate ``model="auto"`` uses: "gp" while it is the better and affordable model, else "dngo".

    With few observations the GP is clearly the stronger model (10 seeds, RESULTS.md "GP vs DNGO vs
    random": regret 1e-3 on Branin within 40 evaluations in 9 runs of 10 against DNGO's 1,
    Hartmann6 in a median of 44 against 53). Its refit grows as N^3 per sampler step (a warm
    suggestion on Hartmann6 at N = 200: 3.3 s against DNGO's 1.4 s, a cold one 25 s) and its fantasies
    condition S x F Cholesky factors of size N + J, while DNGO's cost is nearly flat in N and
    its fantasies are rank-J updates. So the GP is used while N < 200 finished observations and
    at most 20 jobs are in flight (pending plus the batch being proposed); DNGO from then on.
    """
    if n_observed >= AUTO_GP_MAX_OBSERVATIONS or n_in_flight > AUTO_GP_MAX_IN_FLIGHT:
        return "dngo"
    return "gp"


def conditional_kernel(space: Space) -> Conditional | None:
    """The GP's arc-kernel treatment of a conditional space, or None for a flat one.

    The value columns of every conditional variable are arc inputs, active where the space's
    relevance mask says so (:meth:`Space.active_mask`, read from the indicator columns). The
    indicator columns themselves stay ordinary, always-active inputs: they let the model learn
    a level that differs between branches, which the parent's columns (an INT compared with a
    threshold) would only give through a sharp step.
    """
    if not space.is_conditional:
        return None
    dims = [col for var in space.variables if var.conditions
            for col in range(space.dim)[space.value_columns(var.name)]]

    def active(X: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(space.active_mask(X.detach().numpy()))

    return Conditional(dims=dims, active=active)


def _torch_rows(rows: Sequence[np.ndarray] | np.ndarray, dim: int) -> torch.Tensor:
    return torch.as_tensor(np.asarray(rows, dtype=float).reshape(-1, dim), dtype=torch.float64)


class Optimizer:
    """Suggest points to evaluate and learn from their results.

    Parameters
    ----------
    variables : the ``variables`` object of a config.json (name -> spec).
    model : "auto" (GP, then DNGO; :func:`auto_model_choice`), a surrogate name from
        :data:`spearmint_nn.models.MODELS` ("dngo", "dngo-warp", "gp", "gp-nowarp"), or "sobol" for Sobol
        random search without a model.
    seed : seed of every random choice, so a run is reproducible given the same calls.
    acquisition : name from :data:`spearmint_nn.search.acquisition.ACQUISITIONS` ("ei", "pi", "lcb",
        "ei-per-second": EI over the predicted duration of the job).
    acquisition_options : keyword options of the acquisition (e.g. ``{"kappa": 2.0}`` for lcb).
    initial_design : Sobol points before the model is used (default ``Space.default_initial_design``).
    fantasies : fantasised outcome sets of the pending jobs (default 10).
    thompson_every : one proposal in every this many (counting every job ever proposed) that is
        made while other jobs are pending is a Thompson sample instead of the acquisition's
        maximiser (default 10; 0: never). Sequential runs are unaffected; see :meth:`suggest`.
    tasks : Spearmint's tasks as name -> "OBJECTIVE" | "CONSTRAINT", or as written in config.json,
        name -> {"type": ..., "likelihood": ...} (default: one objective "main"); see
        :func:`spearmint_nn.search.arguments.parse_tasks`. A constraint value >= 0 means satisfied.
    likelihoods : task name -> "NOISELESS" | "GAUSSIAN", over what ``tasks`` says; a NOISELESS
        constraint gets the step likelihood classifier, a NOISELESS objective a GP with fixed
        jitter instead of noise, and its failed points' neighbourhoods are not proposed again.
        A task with neither is GAUSSIAN.
    direction : "minimize" (default) or "maximize" the objective; constraints are unaffected.
    state_dir : folder where models keep their weights for warm starts across restarts.
    n_candidates : Sobol screening candidates of the acquisition optimiser (default from D).
    torch_threads : if given, ``torch.set_num_threads`` for this process.
    model_options : keyword options of the model factory (e.g. ``{"n_samples": 10}``).
    kernel : the GP's correlation function, "matern52" (Spearmint's, default) or
        "squared-exponential" (:data:`spearmint_nn.models.kernels.CORRELATIONS`); DNGO has no kernel.
    constraint_model : "classifier" (success/failure and constraint signs) or "value" (a
        regression on constraint values).
    budget : evaluations the search will have in all (the config's ``max-finished-jobs``), or None
        for no limit; a restart needs at least as many left as were spent (:func:`restart_index`).
    restart_after : restart the search after this many observations in a row without improving
        on its best (default 10; 0: never), once ten initial designs' worth have been observed
        and while half the budget remains (:func:`restart_index`).
    output_transform : what the objective model is fitted to, from
        :data:`spearmint_nn.search.transforms.OUTPUT_TRANSFORMS`: "standardise", "log-shift" (log of the
        distance above the best value, standardised), "least-skewed" (whichever of those two
        leaves the values less skewed), "yeo-johnson" (a power transform of the z-scores, its
        exponent fitted by maximum likelihood), or "auto" (default): yeo-johnson for the GP,
        least-skewed for DNGO (:func:`spearmint_nn.search.transforms.default_transform`).

    Every wrong argument raises :class:`~spearmint_nn.errors.ConfigError` (a ValueError) naming it.
    """

    def __init__(
        self,
        variables: Mapping[str, Any],
        model: str = AUTO,
        seed: int | None = None,
        *,
        acquisition: str = "ei",
        acquisition_options: Mapping[str, Any] | None = None,
        initial_design: int | None = None,
        fantasies: int = DEFAULT_FANTASIES,
        thompson_every: int = DEFAULT_THOMPSON_EVERY,
        tasks: Mapping[str, str | Mapping[str, Any]] | None = None,
        likelihoods: Mapping[str, str] | None = None,
        direction: str = "minimize",
        state_dir: str | Path | None = None,
        n_candidates: int | None = None,
        torch_threads: int | None = None,
        model_options: Mapping[str, Any] | None = None,
        kernel: str = "matern52",
        constraint_model: str = "classifier",
        output_transform: str = "auto",
        budget: int | None = None,
        restart_after: int = DEFAULT_RESTART_AFTER,
    ):
        self.space = Space.from_config(variables)
        self.constraint_model = choice("constraint-model", constraint_model, CONSTRAINT_MODELS)
        self.output_transform = choice("output-transform", output_transform, TRANSFORM_CHOICES)
        self.model_name = choice("model", model, [*MODELS, AUTO, RANDOM_SEARCH])
        self.acquisition_name = choice("acquisition", acquisition, ACQUISITIONS)
        self.kernel = choice("kernel", kernel, CORRELATIONS)
        self.seed = count("seed", seed, 0, optional=True)
        self.acquisition_options = options("acquisition-options", acquisition_options)
        self.model_options = options("model-options", model_options)
        self.initial_design = count("initial-design", initial_design, 0, optional=True)
        if self.initial_design is None:
            self.initial_design = self.space.default_initial_design
        self.fantasies = count("fantasies", fantasies, 1)
        self.thompson_every = count("thompson-every", thompson_every, 0)
        self.budget = count("max-finished-jobs", budget, 1, optional=True)
        self.restart_after = count("restart-after", restart_after, 0)
        self.n_candidates = count("n-candidates", n_candidates, 1, optional=True)
        self._tasks = parse_tasks(tasks, likelihoods)
        self.objective, self.constraints = self._tasks.objective, list(self._tasks.constraints)
        self.likelihoods = dict(self._tasks.likelihoods)
        self._sign = parse_direction(direction)  # observed objective values are multiplied by it
        self.direction = direction.lower()
        self.state_dir = Path(state_dir) if state_dir is not None else None
        if count("torch-threads", torch_threads, 1, optional=True) is not None:
            torch.set_num_threads(torch_threads)

        self._rng = np.random.default_rng(seed)
        self._data = Observations(self.space, self._tasks, self._sign)
        self._sobol = SobolStream(self.space, self._seed_draw(), self._rng)
        self._model = None
        self._classifiers: dict[str, ConstraintClassifier | ConstraintValueModel] = {}
        self._fitted_n = 0
        self._transform: Standardise | LogShift | YeoJohnson = Standardise()
        self._duration_model: DurationModel | None = None
        self._duration_fitted_n = 0
        self._auto_choice = self._saved_auto_choice()
        # After a restart, best_by_model's model of all the observations (the objective model
        # sees only the segment): the surrogate, its transform, and the count it was fitted at.
        self._whole: tuple[Any, Any, int] | None = None
        # Where the current search segment starts (restart_index); None until first computed,
        # so that a model restored from state_dir is taken as the current segment's.
        self._segment_start: int | None = None
        self.last_fit_seconds: float | None = None
        self.last_suggest_seconds: float | None = None
        #: Predicted run time in seconds of each point of the last ``suggest`` (None where no
        #: duration model exists yet, or the acquisition is not "ei-per-second").
        self.last_predicted_durations: list[float | None] = []

    # ------------------------------------------------------------------------------- tell

    def observe(
        self, params: Mapping[str, Any], value: Any, duration: float | None = None
    ) -> None:
        """Record the result of evaluating params.

        ``value`` is a number, a dict task -> number (Spearmint's ``tasks``), or NaN/None for a
        failure; an infinite or missing objective is a failure too. ``duration`` is the job's
        run time in seconds, if known. A point handed out by :meth:`suggest` stops being
        pending. A refused call (params not in the space: ConfigError; a value that is not a
        number, an unknown task, a bad duration: ValueError) leaves the optimizer unchanged.
        """
        self._data.add(params, value, duration)

    @property
    def pending(self) -> list[dict[str, Any]]:
        """The points :meth:`suggest` handed out that are not yet observed (nor forgotten), in
        wrapper form, in the order handed out."""
        return self.space.decode(np.asarray(self._data.handed_out).reshape(-1, self.space.dim))

    def forget(self, params: Mapping[str, Any]) -> bool:
        """Stop treating a handed-out point as pending, for a job that will never be observed
        (cancelled, lost). Returns whether it was pending."""
        return self._data.forget(params)

    @property
    def n_observed(self) -> int:
        return len(self._data)

    @property
    def search_start(self) -> int:
        """Index of the first observation the objective model is fitted to: 0 until the search
        restarts (:func:`restart_index`), then the number of observations at the last restart.
        Random search has no model and never restarts."""
        if self.model_name == RANDOM_SEARCH:
            return 0
        objective = np.where(self.feasible_mask(), np.asarray(self._data.objective, dtype=float), math.nan)
        return restart_index(objective, self.restart_after, RESTART_EARLIEST_DESIGNS * self.initial_design,
                             self.budget)

    @property
    def surrogate_name(self) -> str:
        """The model in use for the objective: ``model``, or for "auto" its current choice."""
        return self._auto_choice if self.model_name == AUTO else self.model_name

    def _output_transform_name(self) -> str:
        """The configured output transform, or for "auto" the one measured best for the surrogate."""
        if self.output_transform != TRANSFORM_AUTO:
            return self.output_transform
        return default_transform(model_is_gp=self.surrogate_name in GP_MODELS)

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
        return self.space.decode(self._data.X[best][None])[0], self._sign * float(self._data.objective[best])

    def best_by_model(self) -> ModelBest | None:
        """The feasible observation whose objective the fitted model believes best (lowest
        posterior mean; highest when maximising), Spearmint's report for a noisy objective, or
        None without a model (random search, fewer than two successful values) or a feasible
        observation. Refits the models first if observations arrived since the last fit.

        The model is the objective model while the search has not restarted. After a restart
        that model sees only the current segment, and the best point most likely lies before
        it, so a second model of the same kind is fitted to every observation (in memory, and
        again only when observations arrived). Mean and std are mapped back through the output
        transform by sampling (:mod:`spearmint_nn.search.model_best`).
        """
        feasible = np.flatnonzero(self.feasible_mask())
        objective = np.asarray(self._data.objective, dtype=float)
        finite = np.isfinite(objective)
        if self.model_name == RANDOM_SEARCH or feasible.size == 0 or finite.sum() < MIN_VALUES_TO_FIT:
            return None
        self._follow_restarts()
        if self._segment_start == 0:
            self._refit_if_needed()  # fits the objective model to every finite value
            model, transform = self._model, self._transform
        else:
            model, transform = self._whole_data_model()
        return model_best(model, transform, _torch_rows(self._data.X, self.space.dim), feasible, objective,
                          objective[finite], lambda row: self.space.decode(row[None])[0], self._sign)

    def _whole_data_model(self) -> tuple[Any, Any]:
        """A surrogate fitted to every finite objective value and its output transform, refitted
        only when observations arrived since (:meth:`best_by_model`)."""
        if self._whole is None or self._whole[2] != self.n_observed:
            objective = np.asarray(self._data.objective, dtype=float)
            finite = np.isfinite(objective)
            model = self._whole[0] if self._whole is not None else self._new_surrogate(self.objective)
            transform = OUTPUT_TRANSFORMS[self._output_transform_name()].fit(objective[finite])
            X = _torch_rows(self._data.X, self.space.dim)[torch.as_tensor(finite)]
            model.fit(X, torch.as_tensor(transform(objective[finite])))
            self._whole = (model, transform, self.n_observed)
        return self._whole[0], self._whole[1]

    # -------------------------------------------------------------------------------- ask

    def suggest(self, n: int = 1, pending: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
        """Return n params dicts (wrapper form) to evaluate next.

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
        start = time.perf_counter()
        running = self._data.pending_rows(pending)
        if self.model_name == AUTO:
            self._update_auto_choice(len(running) + n)
        self._follow_restarts()
        taken = list(self._data.X) + running
        keep_away = self._keep_away()
        chosen: list[np.ndarray] = []
        for _ in range(n):
            avoid = np.asarray(taken + chosen, dtype=float).reshape(-1, self.space.dim)
            n_pending = len(avoid) - self.n_observed
            if self.model_name == RANDOM_SEARCH:
                x = self._next_sobol(avoid, keep_away)
            elif self._nothing_succeeded():
                x = exploration_point(self.space, avoid, keep_away=keep_away, seed=self._seed_draw())
                x = self._next_sobol(avoid, keep_away) if x is None else x
            elif len(avoid) - self._segment_start < self.initial_design:
                x = self._next_sobol(avoid, keep_away)
            else:
                thompson = n_pending > 0 and self.thompson_every > 0 and (len(avoid) + 1) % self.thompson_every == 0
                x = self._model_proposal(avoid, n_pending, keep_away, thompson)
            chosen.append(x)
        self._data.handed_out += chosen
        self.last_predicted_durations = [self._predicted_duration(x) for x in chosen]
        self.last_suggest_seconds = time.perf_counter() - start
        return self.space.decode(np.asarray(chosen).reshape(-1, self.space.dim))

    # ----------------------------------------------------------------------------- stages

    def _follow_restarts(self) -> None:
        """Set the current segment (:func:`restart_index`); when the search has just restarted,
        replace the objective model by a fresh one, so nothing of the stuck fit carries over."""
        start = self.search_start
        if self._segment_start is not None and start != self._segment_start:
            log.info("no improvement in %d evaluations: restarting the search at evaluation %d "
                     "(the objective model now sees only what follows)", self.restart_after, start)
            self._model = self._new_surrogate(self.objective)
            self._fitted_n = -1
        self._segment_start = start

    def _seed_draw(self) -> int:
        return int(self._rng.integers(2**31))

    def _nothing_succeeded(self) -> bool:
        """Whether jobs have failed and none has returned a finite objective value."""
        return self.n_observed > 0 and not np.isfinite(np.asarray(self._data.objective, dtype=float)).any()

    def _keep_away(self) -> KeepAway | None:
        """The neighbourhoods of the failed points, for a NOISELESS objective that has failures."""
        failed = ~np.isfinite(np.asarray(self._data.objective, dtype=float))
        if self.likelihoods.get(self.objective) != "NOISELESS" or not failed.any():
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
                        thompson: bool = False) -> np.ndarray:
        """Maximise the acquisition, or with ``thompson`` minimise a posterior draw of f (once
        there is a model and a feasible point), outside ``keep_away``; ``avoid``'s last
        n_pending rows are pending. The objective, its best value and the anchor are the
        current segment's."""
        self._refit_if_needed()
        start = self._segment_start
        objective = np.asarray(self._data.objective[start:], dtype=float)
        finite = np.isfinite(objective)
        feasible = self.feasible_mask()[start:]
        generator = torch.Generator().manual_seed(self._seed_draw())
        X_pending = _torch_rows(avoid[len(avoid) - n_pending:], self.space.dim)
        feasibility = [
            c.fantasize(X_pending, self.fantasies, generator) if n_pending else c
            for c in self._classifiers.values() if not c.trivial
        ]
        model, best, anchors = None, None, None
        # The auto switch to DNGO can make a model before there is anything to fit it to.
        fitted = self._model is not None and finite.sum() >= MIN_VALUES_TO_FIT
        if fitted and feasible.any():
            best_index = np.flatnonzero(feasible)[np.argmin(objective[feasible])]
            best_value = float(self._transform(objective[best_index]))
            model, best = condition_on_pending(self._model, best_value, X_pending, self.fantasies, generator)
            anchors = self._data.X[start + best_index][None]
        elif fitted and not feasibility:
            # No feasible point yet and nothing learned about feasibility: improve on the best
            # finite value, the only signal there is.
            best_value = float(self._transform(np.min(objective[finite])))
            model, best = condition_on_pending(self._model, best_value, X_pending, self.fantasies, generator)
        elif not feasibility:
            return self._next_sobol(avoid, keep_away)  # fewer than two finite values and no failure model
        if thompson and anchors is not None:
            x = minimize_sample_path(model, self.space, avoid=avoid, anchors=anchors,
                                     feasibility=feasibility, seed=self._seed_draw(), keep_away=keep_away)
            if x is not None:
                return x
        options = dict(self.acquisition_options)
        if self.acquisition_name == DURATION_ACQUISITION:
            options["duration"] = self._duration_model
        acquisition = make_acquisition(self.acquisition_name, model, best, feasibility, **options)
        proposal = maximize(
            acquisition, self.space, avoid=avoid, anchors=anchors,
            n_candidates=self.n_candidates, seed=self._seed_draw(), keep_away=keep_away,
        )
        if proposal.repeat:
            log.warning("search space exhausted: every valid point has been tried; repeating the best one")
        return proposal.x

    def _refit_if_needed(self) -> None:
        """Refit the surrogate (on the current segment) and the classifiers (on everything) once
        if observations arrived since the last fit."""
        if self._fitted_n == self.n_observed:
            return
        start = time.perf_counter()
        X = _torch_rows(self._data.X, self.space.dim)
        objective = np.asarray(self._data.objective, dtype=float)
        finite = np.isfinite(objective)
        in_segment = finite & (np.arange(len(objective)) >= self._segment_start)
        if in_segment.sum() >= MIN_VALUES_TO_FIT:
            y = objective[in_segment]
            self._transform = OUTPUT_TRANSFORMS[self._output_transform_name()].fit(y)
            if self._model is None:
                self._model = self._restore(OBJECTIVE_MODEL_DIR, self._new_surrogate(self.objective))
            self._model.fit(X[torch.as_tensor(in_segment)], torch.as_tensor(self._transform(y)))
            self._save(OBJECTIVE_MODEL_DIR, self._model)
        labels = {name: np.asarray(v, dtype=float) for name, v in self._data.constraints.items()}
        if not finite.all() or SUCCESS in self._classifiers:
            labels[SUCCESS] = np.where(finite, 1.0, -1.0)
        for name, values in labels.items():
            known = np.isfinite(values)
            # A value regression (ConstraintValueModel) needs two values; a classifier one label.
            by_value = name != SUCCESS and self.constraint_model == "value"
            if known.sum() < (2 if by_value else 1):
                continue
            if name not in self._classifiers:
                self._classifiers[name] = self._restore(f"constraint-{name}", self._new_constraint_model(name))
            target = values[known] if by_value else values[known] >= 0
            self._classifiers[name].fit(X[torch.as_tensor(known)], torch.as_tensor(target))
            self._save(f"constraint-{name}", self._classifiers[name])
        if self.acquisition_name == DURATION_ACQUISITION:
            self._refit_duration_model(X)
        self._fitted_n = self.n_observed
        self.last_fit_seconds = time.perf_counter() - start

    def _new_constraint_model(self, name: str) -> ConstraintClassifier | ConstraintValueModel:
        """The model of one constraint: the DNGO classifier (section 3.2; step likelihood for a
        NOISELESS constraint, logistic otherwise), or with ``constraint_model="value"`` a
        regression of an explicit constraint's value, P(c >= 0) from its predictive. "success"
        (the job returned a finite objective) has only a sign: always the classifier."""
        if name == SUCCESS or self.constraint_model == "classifier":
            noiseless = self.likelihoods.get(name, "NOISELESS") == "NOISELESS"
            return ConstraintClassifier(self.space.dim, seed=self.seed, noiseless=noiseless)
        return ConstraintValueModel(self._new_surrogate(name), self.space.dim)

    def _new_surrogate(self, task: str) -> Any:
        """A fresh regression surrogate of a task's values, told its likelihood and the space's structure."""
        name = self.surrogate_name
        options = dict(self.model_options)
        if name in GP_MODELS:
            options.setdefault("kernel", self.kernel)
            options.setdefault("noiseless", self.likelihoods.get(task) == "NOISELESS")
            options.setdefault("conditional", conditional_kernel(self.space))
        # Only value columns vary within (0, 1); a warp of a 0/1 column is the identity.
        options.setdefault("warped_columns", continuous_columns(self.space))
        return make_model(name, self.space.dim, seed=self.seed, **options)

    def _saved_auto_choice(self) -> str:
        """"dngo" if an earlier run of this experiment switched to it (state_dir/auto.json), else "gp"."""
        path = self.state_dir / AUTO_STATE_FILE if self.state_dir is not None else None
        try:
            saved = json.loads(path.read_text())["model"] if path is not None else "gp"
        except (OSError, ValueError, KeyError, TypeError):
            saved = "gp"
        return "dngo" if saved == "dngo" else "gp"

    def _update_auto_choice(self, n_in_flight: int) -> None:
        """Switch "auto" from the GP to DNGO once :func:`auto_model_choice` says so; never back.

        The switch is one-way and recorded in state_dir/auto.json: N only grows, a large batch
        tends to recur, and each switch costs a model trained from scratch.
        """
        if self._auto_choice == "dngo" or auto_model_choice(self.n_observed, n_in_flight) == "gp":
            return
        log.info("model auto: switching from the GP to DNGO at %d observations with %d job(s) in flight",
                 self.n_observed, n_in_flight)
        # Fresh DNGOs, not ones restored from state_dir: that holds the GPs' states.
        self._auto_choice = "dngo"
        self._model = self._new_surrogate(self.objective)
        self._whole = None
        for name in self._classifiers:
            if name != SUCCESS:
                self._classifiers[name] = self._new_constraint_model(name)
        self._fitted_n = 0  # fit the new model at the next model proposal
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.state_dir / AUTO_STATE_FILE, json.dumps(
                {"model": "dngo", "observations": self.n_observed, "in_flight": n_in_flight}).encode())

    def _refit_duration_model(self, X: torch.Tensor) -> None:
        """Fit the model of log duration on the positive durations seen, if new ones arrived."""
        durations = np.asarray(self._data.durations, dtype=float)
        known = np.isfinite(durations) & (durations > 0)
        if known.sum() < 2 or known.sum() == self._duration_fitted_n:
            return
        if self._duration_model is None:
            self._duration_model = DurationModel(seed=self.seed)
        self._duration_model.fit(X[torch.as_tensor(known)], torch.as_tensor(np.log(durations[known])))
        self._duration_fitted_n = int(known.sum())

    def _predicted_duration(self, x: np.ndarray) -> float | None:
        """Predicted run time in seconds at the encoded point x (D,), or None without a duration model."""
        if self._duration_model is None:
            return None
        with torch.no_grad():
            return float(torch.exp(self._duration_model.predict(_torch_rows(x, self.space.dim)))[0])

    def _restore(self, name: str, fresh: Any) -> Any:
        """The model saved under state_dir/name (:func:`~spearmint_nn.search.model_state.restore`), else ``fresh``."""
        return fresh if self.state_dir is None else restore(self.state_dir / name, fresh, self.space.dim)

    def _save(self, name: str, model: Any) -> None:
        if self.state_dir is not None and hasattr(model, "save"):
            model.save(self.state_dir / name)
