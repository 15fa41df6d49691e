"""Every problem the benchmarks run, found by its name.

A name is one of :data:`~experiments.benchmarks.functions.FUNCTIONS`, a BBOB problem
(``bbob-f<k>-d<dim>-i<inst>``, :mod:`experiments.benchmarks.bbob`) or a real hyperparameter task
(``hpo-<model>-<dataset>-<metric>``, :mod:`experiments.benchmarks.hpo`). The families build on
:class:`~experiments.benchmarks.functions.TestFunction`; this module stands above them all, so
the lookup needs no import back into a family.
"""
from __future__ import annotations

from types import ModuleType

from . import bbob, hpo
from .functions import FUNCTIONS, TestFunction

#: The module of each family of named problems, by the prefix of its names.
FAMILIES: dict[str, ModuleType] = {bbob.PREFIX: bbob, hpo.PREFIX: hpo}


def get_function(name: str) -> TestFunction:
    """The problem called ``name``; a BBOB problem or a real task is built only when asked for
    (it needs ``ioh`` or scikit-learn)."""
    family = _family(name)
    return FUNCTIONS[name] if family is None else family.make_problem(name)


def is_function(name: str) -> bool:
    """Whether :func:`get_function` knows ``name``, checked without building it (no ``ioh`` or
    scikit-learn needed)."""
    family = _family(name)
    if family is None:
        return name in FUNCTIONS
    try:
        family.parse_name(name)
    except ValueError:
        return False
    return True


def _family(name: str) -> ModuleType | None:
    """The module of the problems named like ``name`` (None: :data:`FUNCTIONS`)."""
    return next((module for prefix, module in FAMILIES.items() if name.startswith(prefix)), None)
