"""The names of the search's choices, declared once: models, acquisitions, kernels, output
transforms, constraint models, task types and likelihoods.

config.json is validated against these lists (:mod:`spearmint_nn.experiment.config`), and so
is :class:`~spearmint_nn.search.settings.SearchSettings`. Each registry that maps a name to its
implementation is checked against its list at import (:func:`check_registry`):
``spearmint_nn.search.acquisition.ACQUISITIONS`` and
``spearmint_nn.search.transforms.OUTPUT_TRANSFORMS`` where they are defined, the models'
``spearmint_nn.models.MODELS`` and ``spearmint_nn.models.kernels.CORRELATIONS`` by the
optimizer that uses them (the models do not import the search). This module imports nothing,
because every job process reads its config through config.py and must not pay for torch or scipy.
"""
from __future__ import annotations

from typing import Iterable

#: The ``model`` (and ``output_transform``) value that lets the search choose.
AUTO = "auto"
#: The ``model`` value for Sobol random search, without a model.
RANDOM_SEARCH = "sobol"
#: Surrogate models, the keys of ``spearmint_nn.models.MODELS``.
SURROGATES = ("dngo", "dngo-warp", "gp", "gp-nowarp")
#: Every value of ``model``, in the order error messages list them.
MODEL_CHOICES = (AUTO, *SURROGATES, RANDOM_SEARCH)

#: Acquisition functions, the keys of ``spearmint_nn.search.acquisition.ACQUISITIONS``.
ACQUISITIONS = ("ei", "pi", "lcb", "ei-per-second")
#: The acquisition that divides EI by a predicted job duration (it needs a duration model).
DURATION_ACQUISITION = "ei-per-second"

#: The GP's correlation functions, the keys of ``spearmint_nn.models.kernels.CORRELATIONS`` in
#: the same order: the first is the default of the settings and of the GP itself.
KERNELS = ("matern52", "squared-exponential")

#: Output transforms, the keys of ``spearmint_nn.search.transforms.OUTPUT_TRANSFORMS``.
OUTPUT_TRANSFORMS = ("least-skewed", "standardise", "log-shift", "yeo-johnson")
#: Every value of ``output_transform``: auto (chosen by the model) first.
TRANSFORM_CHOICES = (AUTO, *OUTPUT_TRANSFORMS)

#: Models of an explicit constraint: a classifier of its sign, or a regression of its value.
CLASSIFIER = "classifier"
VALUE_MODEL = "value"
CONSTRAINT_MODELS = (CLASSIFIER, VALUE_MODEL)

#: Spearmint's task types and likelihoods.
TASK_TYPES = ("OBJECTIVE", "CONSTRAINT")
LIKELIHOODS = ("NOISELESS", "GAUSSIAN")
#: Spearmint's name for the single objective when no tasks are given.
DEFAULT_TASK_NAME = "main"

#: The objective's directions, the default first.
DIRECTIONS = ("minimize", "maximize")


def check_registry(registry: str, implemented: Iterable[str], names: tuple[str, ...]) -> None:
    """Raise RuntimeError unless a registry implements exactly ``names``, in that order.

    Called where each registry is defined, so a name added on one side only fails at import
    rather than as a config value that validates and then has no implementation.
    """
    if tuple(implemented) != names:
        raise RuntimeError(f"{registry} implements {tuple(implemented)}, but spearmint_nn.search.names "
                           f"declares {names}: add the name to both")
