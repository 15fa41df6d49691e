"""How a search is set up: :class:`SearchSettings`, the typed, checked settings of an
:class:`~spearmint_nn.search.optimizer.Optimizer`.

config.json's keys become these fields in :func:`spearmint_nn.experiment.config.search_settings`;
a Python user passes them as keywords to the Optimizer. Either way a wrong value raises
:class:`~spearmint_nn.errors.ConfigError` (a ValueError) whose path is the field's name. Torch-free:
the config module builds the settings in every process.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .arguments import Tasks, choice, count, options, parse_direction, parse_tasks, share
from .names import (ACQUISITIONS, AUTO, CLASSIFIER, CONSTRAINT_MODELS, DEFAULT_TASK_NAME, KERNELS, MODEL_CHOICES,
                    TRANSFORM_CHOICES)
from .policy import DEFAULT_RESTART_AFTER

DEFAULT_FANTASIES = 10

DEFAULT_THOMPSON_EVERY = 10
DEFAULT_CROWDING_SHARE = 0.0


@dataclass(frozen=True)
class SearchSettings:
    """The settings of one search; every field has a default.

    Attributes
    ----------
    model : "auto" (GP, then DNGO; :func:`~spearmint_nn.search.policy.auto_model_choice`), a
        surrogate from :data:`~spearmint_nn.search.names.SURROGATES` ("dngo", "dngo-warp", "gp",
        "gp-nowarp"), or "sobol" for Sobol random search without a model.
    seed : seed of every random choice, so a run is reproducible given the same calls; None:
        fresh randomness.
    acquisition : a name from :data:`~spearmint_nn.search.names.ACQUISITIONS` ("ei", "pi",
        "lcb", "ei-per-second": EI over the predicted duration of the job).
    acquisition_options : keyword options of the acquisition (e.g. ``{"kappa": 2.0}`` for lcb).
    initial_design : Sobol points before the model is used; None: the space's
        ``default_initial_design``.
    fantasies : fantasised outcome sets of the pending jobs (default 10).
    thompson_every : one proposal in every this many (counting every job ever proposed) that is
        made while other jobs are pending is a Thompson sample instead of the acquisition's
        maximiser (default 10; 0: never); see :meth:`Optimizer.suggest`.
    crowding_share : with more than 50 jobs in flight, no proposal lies where this share of them
        already is, within 10% of each range (RMS), while another place is open (default 0: no
        limit; 0.5 kept large batches out of Hartmann6's local basins:
        :func:`~spearmint_nn.search.batch_draws.crowding`).
    tasks : the objective, the constraints and their likelihoods (default: one GAUSSIAN
        objective "main"). A mapping in either form :func:`~spearmint_nn.search.arguments.parse_tasks`
        reads is parsed. A NOISELESS constraint gets the step likelihood classifier, a NOISELESS
        objective a GP with fixed jitter instead of noise, and its failed points' neighbourhoods
        are not proposed again. A constraint value >= 0 means satisfied.
    direction : "minimize" (default) or "maximize" the objective, in any case; constraints are
        unaffected.
    n_candidates : Sobol screening candidates of the acquisition optimiser; None: chosen from D.
    model_options : keyword options of the model factory (e.g. ``{"n_samples": 10}``).
    kernel : the GP's correlation function, "matern52" (Spearmint's, default) or
        "squared-exponential"; DNGO has no kernel.
    constraint_model : "classifier" (success/failure and constraint signs) or "value" (a
        regression on constraint values).
    output_transform : what the objective model is fitted to, from
        :data:`~spearmint_nn.search.names.TRANSFORM_CHOICES`: "standardise", "log-shift" (log of
        the distance above the best value, standardised), "least-skewed" (whichever of those two
        leaves the values less skewed), "yeo-johnson" (a power transform of the z-scores, its
        exponent fitted by maximum likelihood), or "auto" (default): yeo-johnson for the GP,
        least-skewed for DNGO (:func:`spearmint_nn.search.transforms.default_transform`).
    budget : evaluations the search will have in all, or None for no limit; a restart needs at
        least as many left as were spent (:func:`~spearmint_nn.search.policy.restart_index`).
    restart_after : restart the search after this many observations in a row without improving
        on its best (default 10; 0: never), once ten initial designs' worth have been observed
        and while half the budget remains (without a budget: once it has gone as long without
        improving as it took to find its best); with many jobs in flight, counted in rounds of
        that many observations (:attr:`Optimizer.search_start`).
    torch_threads : torch threads of the Optimizer's own work (fits, the acquisition's
        maximisation), set for each call and the caller's count restored after (default 1, as
        the daemon: more stalled on a shared machine and gave no speed-up on an idle one; a seed
        gives the same proposals whatever the caller's count); None: the caller's count.
    """

    model: str = AUTO
    seed: int | None = None
    acquisition: str = "ei"
    acquisition_options: Mapping[str, Any] = field(default_factory=dict)
    initial_design: int | None = None
    fantasies: int = DEFAULT_FANTASIES
    thompson_every: int = DEFAULT_THOMPSON_EVERY
    crowding_share: float = DEFAULT_CROWDING_SHARE
    tasks: Tasks = field(default_factory=lambda: Tasks(DEFAULT_TASK_NAME, (), {}))
    direction: str = "minimize"
    n_candidates: int | None = None
    model_options: Mapping[str, Any] = field(default_factory=dict)
    kernel: str = "matern52"
    constraint_model: str = CLASSIFIER
    output_transform: str = AUTO
    budget: int | None = None
    restart_after: int = DEFAULT_RESTART_AFTER
    torch_threads: int | None = 1

    def __post_init__(self) -> None:
        parse_direction(self.direction)
        checked = {
            "model": choice("model", self.model, MODEL_CHOICES),
            "seed": count("seed", self.seed, 0, optional=True),
            "acquisition": choice("acquisition", self.acquisition, ACQUISITIONS),
            "acquisition_options": MappingProxyType(options("acquisition_options", self.acquisition_options)),
            "initial_design": count("initial_design", self.initial_design, 0, optional=True),
            "fantasies": count("fantasies", self.fantasies, 1),
            "thompson_every": count("thompson_every", self.thompson_every, 0),
            "crowding_share": share("crowding_share", self.crowding_share),
            "tasks": self.tasks if isinstance(self.tasks, Tasks) else parse_tasks(self.tasks, None),
            "direction": self.direction.lower(),
            "n_candidates": count("n_candidates", self.n_candidates, 1, optional=True),
            "model_options": MappingProxyType(options("model_options", self.model_options)),
            "kernel": choice("kernel", self.kernel, KERNELS),
            "constraint_model": choice("constraint_model", self.constraint_model, CONSTRAINT_MODELS),
            "output_transform": choice("output_transform", self.output_transform, TRANSFORM_CHOICES),
            "budget": count("budget", self.budget, 1, optional=True),
            "restart_after": count("restart_after", self.restart_after, 0),
            "torch_threads": count("torch_threads", self.torch_threads, 1, optional=True),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # the checked, normalised value of a frozen field

    @classmethod
    def from_keywords(cls, likelihoods: Mapping[str, str] | None = None, **settings: Any) -> "SearchSettings":
        """The settings the Optimizer's keywords give: the fields by name, ``tasks`` in either
        form, and ``likelihoods`` (task name -> "NOISELESS" | "GAUSSIAN") over what ``tasks``
        says. An unknown keyword is a TypeError naming it."""
        if likelihoods is not None:
            settings["tasks"] = parse_tasks(settings.get("tasks"), likelihoods)
        return cls(**settings)

    @property
    def sign(self) -> float:
        """What observed objective values are multiplied by so the search minimises: 1, or -1
        when maximising."""
        return parse_direction(self.direction)
