"""The model bank: the models one search fits to its observations, refitted together
(:class:`ModelBank`), and what each is told about the experiment when it is made.

They are the objective surrogate with its output transform (fitted to the current search
segment: the observations since the search last restarted), one feasibility model per
CONSTRAINT task (plus "success" once a job has failed), and, for EI per second, the model of
job durations (:class:`DurationFit`). The :class:`~spearmint_nn.search.optimizer.Optimizer`
asks for a refit before it proposes; the refit happens once, however many observations arrived
since the last one. Each model's state goes to the
:class:`~spearmint_nn.search.model_store.ModelStore`, if one is given, after every fit, and a
model made for the first time is restored from it (a restarted daemon warm-starts); nothing here
touches a file otherwise.

What the models are told (:func:`new_surrogate`, :func:`new_constraint_model`): a NOISELESS
objective gives the GP a fixed jitter instead of a sampled noise; a conditional space gives the
GP the arc kernel on the value columns of the conditional variables (:func:`conditional_kernel`),
while DNGO reads the encoding as is (relevance indicator plus neutral value); only value columns
are warped.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
import torch

from ..models import GP_MODELS, MODEL_SPECS, make_model
from ..models.base import Conditionable, Warped
from ..models.classifier import ConstraintClassifier
from ..models.constraint_value import ConstraintValueModel
from ..models.duration import DurationModel
from ..models.kernels import Conditional
from ..problem.settings import AUTO, DURATION_ACQUISITION, VALUE_MODEL, SearchSettings
from ..problem.space import Space
from .candidates import continuous_columns
from .model_store import OBJECTIVE_MODEL, ModelStore, constraint_model_name
from .observations import Observations
from .related import RelatedTask, subset_for_the_gp
from .transforms import OUTPUT_TRANSFORMS, LogShift, Standardisation, YeoJohnson, default_transform

SUCCESS = "success"  # the implicit constraint "the job returned a finite objective"


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


# The sampler budgets a multi-task GP takes from model_options; the rest are the GP's own.
MULTITASK_OPTIONS = ("n_samples", "burn_in", "sweeps_per_fit")


def new_surrogate(space: Space, settings: SearchSettings, model: str, task: str,
                  related: Sequence[RelatedTask] = (), transform: str = "standardise") -> Any:
    """A fresh regression surrogate (``model``, a name of :data:`spearmint_nn.models.MODELS`) of a
    task's values, told its likelihood and the space's structure.

    With ``related`` searches and a GP model, the multi-task GP over this task and theirs
    (:class:`~spearmint_nn.models.multitask_gp.MultiTaskGP`; "gp" warps each task's inputs,
    "gp-nowarp" none), each related task's values passed through its own fit of the
    ``transform`` this task's values get, at most ``MAX_RELATED_OBSERVATIONS`` of them in all."""
    if related and model in GP_MODELS:
        from ..models.multitask_gp import MultiTaskGP

        data = [(torch.as_tensor(t.X), torch.as_tensor(OUTPUT_TRANSFORMS[transform].fit(t.y)(t.y)))
                for t in subset_for_the_gp(related, seed=settings.seed)]
        return MultiTaskGP(
            data, warping=MODEL_SPECS[model].warps, warped_columns=np.flatnonzero(continuous_columns(space)).tolist(),
            noiseless=settings.tasks.likelihoods.get(task) == "NOISELESS", kernel=settings.kernel,
            seed=settings.seed, **{k: v for k, v in settings.model_options.items() if k in MULTITASK_OPTIONS})
    options = dict(settings.model_options)
    if model in GP_MODELS:
        options.setdefault("kernel", settings.kernel)
        options.setdefault("noiseless", settings.tasks.likelihoods.get(task) == "NOISELESS")
        options.setdefault("conditional", conditional_kernel(space))
    # Only value columns vary within (0, 1); a warp of a 0/1 column is the identity.
    options.setdefault("warped_columns", continuous_columns(space))
    return make_model(model, space.dim, seed=settings.seed, **options)


def new_constraint_model(space: Space, settings: SearchSettings, model: str,
                         task: str) -> ConstraintClassifier | ConstraintValueModel:
    """The model of one constraint: the DNGO classifier (section 3.2; step likelihood for a
    NOISELESS constraint, logistic otherwise), or with ``constraint_model="value"`` a regression
    (a ``model`` surrogate) of an explicit constraint's value, P(c >= 0) from its predictive.
    "success" (the job returned a finite objective) has only a sign: always the classifier."""
    if task == SUCCESS or settings.constraint_model != VALUE_MODEL:
        noiseless = settings.tasks.likelihoods.get(task, "NOISELESS") == "NOISELESS"
        return ConstraintClassifier(space.dim, seed=settings.seed, noiseless=noiseless)
    return ConstraintValueModel(new_surrogate(space, settings, model, task), space.dim)


class DurationFit:
    """The model of log job duration (:class:`~spearmint_nn.models.duration.DurationModel`),
    made once two positive durations are known and refitted when new ones arrive."""

    def __init__(self, seed: int | None):
        self.model: DurationModel | None = None
        self._seed = seed
        self._fitted_n = 0

    def refit(self, X: torch.Tensor, durations: np.ndarray) -> None:
        """Fit on the rows of X (N, D) whose duration (N,), in seconds, is known and positive,
        if new ones arrived since the last fit."""
        known = np.isfinite(durations) & (durations > 0)
        if known.sum() < 2 or known.sum() == self._fitted_n:
            return
        if self.model is None:
            self.model = DurationModel(seed=self._seed)
        self.model.fit(X[torch.as_tensor(known)], torch.as_tensor(np.log(durations[known])))
        self._fitted_n = int(known.sum())

    def data_revised(self) -> None:
        """A duration may have changed in place: refit at the next :meth:`refit`."""
        self._fitted_n = -1

    def predict(self, x: np.ndarray) -> float | None:
        """Predicted run time in seconds at the encoded point x (D,), or None without a model."""
        if self.model is None:
            return None
        with torch.no_grad():
            X = torch.as_tensor(np.asarray(x, dtype=float).reshape(1, -1), dtype=torch.float64)
            return float(torch.exp(self.model.predict(X))[0])


# A surrogate is fitted once this many objective values are finite (standardising needs a spread).
MIN_VALUES_TO_FIT = 2


def torch_rows(rows: Sequence[np.ndarray] | np.ndarray, dim: int) -> torch.Tensor:
    """Encoded points (K rows of dim) as a float64 tensor (K, dim)."""
    return torch.as_tensor(np.asarray(rows, dtype=float).reshape(-1, dim), dtype=torch.float64)


class ModelBank:
    """The fitted models of one search over ``space``: ``objective`` (the surrogate named
    ``surrogate_name``, None before its first fit), ``transform`` (the output transform its
    values went through), ``feasibility`` (the constraint models), ``durations``.

    ``settings`` are the Optimizer's, which owns them and passes new ones on; ``related``
    searches make the objective GP a multi-task GP; ``store`` keeps the states (None: nothing kept)."""

    def __init__(self, space: Space, settings: SearchSettings, surrogate_name: str,
                 store: ModelStore | None = None, related: Sequence[RelatedTask] = ()):
        self.space, self.settings, self.surrogate_name = space, settings, surrogate_name
        self.store, self.related = store, related
        self.objective: Any = None
        self.transform: Standardisation | LogShift | YeoJohnson = Standardisation()
        self.constraints: dict[str, ConstraintClassifier | ConstraintValueModel] = {}
        self.durations = DurationFit(settings.seed)
        self.fits = 0  # refits so far: a proposal tells whether it made one
        self.last_fit_seconds: float | None = None
        # The objective model's latest input warpings, and whether they are new since the last
        # proposal (a Suggestion carries them once).
        self.warpings: dict[str, Any] | None = None
        self.warpings_new = False
        self._fitted_n = 0  # observations at the last refit (-1: refit whatever arrived)
        self._trained_on = 0  # observations (failures too) in the segment when its network was last trained
        # After a restart, the reports' model of every observation (whole_data_model): the
        # surrogate, its transform, and the count it was fitted at.
        self._whole: tuple[Any, Any, int] | None = None

    @property
    def feasibility(self) -> list[ConstraintClassifier | ConstraintValueModel]:
        """The constraint models that have learned anything (a classifier of one label has not)."""
        return [model for model in self.constraints.values() if not model.trivial]

    def output_transform_name(self) -> str:
        """The configured output transform, or for "auto" the one measured best for the surrogate."""
        if self.settings.output_transform != AUTO:
            return self.settings.output_transform
        return default_transform(model_is_gp=self.surrogate_name in GP_MODELS)

    def data_revised(self) -> None:
        """An observation's values changed in place (:meth:`Optimizer.revise`): the number of
        observations, which decides whether to refit, is the same, so refit whatever it is."""
        self._fitted_n, self._whole = -1, None
        self.durations.data_revised()

    def restart(self) -> None:
        """A fresh objective model, trained from scratch at the next refit: nothing of the
        stuck fit (hyperparameters, network) carries over to the restarted search."""
        self.objective = self.new_surrogate(self.settings.tasks.objective)
        self._fitted_n, self._trained_on = -1, 0

    def switch_surrogate(self, name: str) -> None:
        """Use the surrogate ``name`` from now on: fresh objective and constraint value models
        (not restored from the store, which holds the earlier surrogate's states); the
        "success" classifier does not depend on the surrogate and stays."""
        self.surrogate_name = name
        self.objective, self._whole = self.new_surrogate(self.settings.tasks.objective), None
        for task in self.constraints:
            if task != SUCCESS:
                self.constraints[task] = self._new_constraint_model(task)
        self._fitted_n, self._trained_on = 0, 0

    def refit(self, data: Observations, segment_start: int, round_size: int) -> None:
        """Refit the models once if observations arrived since the last refit: the objective
        model to the finite values from index ``segment_start`` on, the constraint models to
        every observation. ``round_size`` is the most jobs the search has had in flight at once."""
        n = len(data)
        if self._fitted_n == n:
            return
        start = time.perf_counter()
        X = torch_rows(data.X, self.space.dim)
        objective = np.asarray(data.objective, dtype=float)
        finite = np.isfinite(objective)
        in_segment = finite & (np.arange(n) >= segment_start)
        if in_segment.sum() >= MIN_VALUES_TO_FIT:
            self._refit_objective(X[torch.as_tensor(in_segment)], objective[in_segment], n - segment_start, round_size)
        labels = {name: np.asarray(values, dtype=float) for name, values in data.constraints.items()}
        if not finite.all() or SUCCESS in self.constraints:
            labels[SUCCESS] = np.where(finite, 1.0, -1.0)
        for name, values in labels.items():
            known = np.isfinite(values)
            # A value regression (ConstraintValueModel) needs two values; a classifier one label.
            by_value = name != SUCCESS and self.settings.constraint_model == VALUE_MODEL
            if known.sum() < (2 if by_value else 1):
                continue
            if name not in self.constraints:
                self.constraints[name] = self._restore(constraint_model_name(name), self._new_constraint_model(name))
            target = values[known] if by_value else values[known] >= 0
            self.constraints[name].fit(X[torch.as_tensor(known)], torch.as_tensor(target))
            self._save(constraint_model_name(name), self.constraints[name])
        if self.settings.acquisition == DURATION_ACQUISITION:
            self.durations.refit(X, np.asarray(data.durations, dtype=float))
        self._fitted_n = n
        self.fits += 1
        self.last_fit_seconds = time.perf_counter() - start

    def _refit_objective(self, X: torch.Tensor, y: np.ndarray, n_segment: int, round_size: int) -> None:
        """Fit the objective model to the finite values y (K,) at X (K, dim) of the segment's
        n_segment observations."""
        self.transform = OUTPUT_TRANSFORMS[self.output_transform_name()].fit(y)
        if self.objective is None:
            self.objective = self._restore(OBJECTIVE_MODEL, self.new_surrogate(self.settings.tasks.objective))
        y_fit = torch.as_tensor(self.transform(y))
        # DNGO absorbs new results into its output layer without training its network. It
        # trains once per round of results (the most jobs in flight: each result when
        # sequential, each batch when synchronous), so that on an asynchronous cluster
        # proposals keep pace with completions; and whenever the data have doubled, so that
        # a basis trained on the first few results of 800 is not kept for the next 800.
        # Failed jobs count as results: a sequential run that conditions after a crash keeps
        # its basis and proposes beside the crash again (measured on crash_region).
        since = n_segment - self._trained_on
        if isinstance(self.objective, Conditionable) and since < min(round_size, max(1, self._trained_on)):
            self.objective.condition(X, y_fit)
        else:
            self.objective.fit(X, y_fit)
            self._trained_on = n_segment
        self._save(OBJECTIVE_MODEL, self.objective)
        # A test double or another model may have no warps to report.
        self.warpings = self.objective.warpings() if isinstance(self.objective, Warped) else None
        self.warpings_new = True

    def whole_data_model(self, data: Observations) -> tuple[Any, Any]:
        """A surrogate of the objective fitted to every finite value and its output transform,
        refitted only when observations arrived since: after a restart the objective model
        sees only the segment, and the best point most likely lies before it (the reports)."""
        if self._whole is None or self._whole[2] != len(data):
            objective = np.asarray(data.objective, dtype=float)
            finite = np.isfinite(objective)
            model = self._whole[0] if self._whole is not None else self.new_surrogate(self.settings.tasks.objective)
            transform = OUTPUT_TRANSFORMS[self.output_transform_name()].fit(objective[finite])
            X = torch_rows(data.X, self.space.dim)[torch.as_tensor(finite)]
            model.fit(X, torch.as_tensor(transform(objective[finite])))
            self._whole = (model, transform, len(data))
        return self._whole[0], self._whole[1]

    def new_surrogate(self, task: str) -> Any:
        """A fresh surrogate of ``task``'s values (:func:`new_surrogate`)."""
        related = self.related if task == self.settings.tasks.objective else ()
        return new_surrogate(self.space, self.settings, self.surrogate_name, task, related,
                             self.output_transform_name())

    def _new_constraint_model(self, task: str) -> ConstraintClassifier | ConstraintValueModel:
        return new_constraint_model(self.space, self.settings, self.surrogate_name, task)

    def _restore(self, name: str, fresh: Any) -> Any:
        """The model saved in the store under name, else ``fresh``."""
        return fresh if self.store is None else self.store.restore(name, fresh, self.space.dim)

    def _save(self, name: str, model: Any) -> None:
        if self.store is not None:
            self.store.save(name, model)
