"""The search's models, made for the experiment: what each is told about the space and the
tasks (:func:`new_surrogate`, :func:`new_constraint_model`), and the model of job durations that
EI per second divides by (:class:`DurationFit`).

What the models are told: a NOISELESS objective gives the GP a fixed jitter instead of a
sampled noise; a conditional space gives the GP the arc kernel on the value columns of the
conditional variables (:func:`conditional_kernel`), while DNGO reads the encoding as is
(relevance indicator plus neutral value); only value columns are warped.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .candidates import continuous_columns
from ..problem.settings import VALUE_MODEL
from .related import RelatedTask, subset_for_the_gp
from ..problem.settings import SearchSettings
from ..problem.space import Space
from .transforms import OUTPUT_TRANSFORMS
from ..models import GP_MODELS, make_model
from ..models.classifier import ConstraintClassifier
from ..models.constraint_value import ConstraintValueModel
from ..models.duration import DurationModel
from ..models.kernels import Conditional

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
            data, warping=model == "gp", warped_columns=np.flatnonzero(continuous_columns(space)).tolist(),
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

    def predict(self, x: np.ndarray) -> float | None:
        """Predicted run time in seconds at the encoded point x (D,), or None without a model."""
        if self.model is None:
            return None
        with torch.no_grad():
            X = torch.as_tensor(np.asarray(x, dtype=float).reshape(1, -1), dtype=torch.float64)
            return float(torch.exp(self.model.predict(X))[0])
