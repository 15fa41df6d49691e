"""COCO's 24 noiseless BBOB functions as problems of the benchmarks, named ``bbob-f<k>-d<dim>-i<inst>``.

The field judges black-box optimisers on BBOB (Hansen, Finck, Ros and Auger, "Real-parameter
black-box optimization benchmarking 2009: noiseless functions definitions", INRIA RR-6829; the
platform: Hansen, Auger, Ros, Mersmann, Tusar and Brockhoff, "COCO: a platform for comparing
continuous optimizers in a black-box setting", Optimization Methods and Software 36(1), 2021).
Each function ``k`` (1-24) has instances (``inst``: a random shift of the optimum, a rotation and
an offset of the value, drawn from the instance number) in any dimension, on the box [-5, 5]^d,
with a known optimum f_opt.

The functions come from IOHprofiler's ``ioh`` package (Python wheels, in the harness's
``requirements.txt``), not from ``coco-experiment``: both ship COCO's own definitions, but
``ioh`` hands out one problem object with its optimum (``problem.optimum.y`` and ``.x``) and
evaluates it with no observer, no output folder and no fixed budget, which is what a harness that
runs several methods on the same instance needs; ``cocoex`` exposes f_opt only through its
logging observer and writes an experiment folder of its own. No other module of the project
imports ``ioh``, and only when a BBOB problem is built.

Targets, as COCO's runtime ECDFs use them: f_opt + 10^k for the 51 exponents k = 2, 1.8, ..., -8
(the "bbob" target set of COCO's postprocessing, ``cocopp``; Hansen, Auger, Brockhoff and Tusar,
"Anytime performance assessment in blackbox optimization benchmarking", IEEE Transactions on
Evolutionary Computation 26(6), 2022, section on runtime ECDFs).
"""
from __future__ import annotations

import re

import numpy as np

from .functions import TestFunction

PREFIX = "bbob-"
NAME = re.compile(r"bbob-f(\d+)-d(\d+)-i(\d+)$")
FUNCTIONS = range(1, 25)
BOX = (-5.0, 5.0)
#: COCO's 51 target exponents: the targets are f_opt + 10**k for k from 2 down to -8 in steps of 0.2.
TARGET_EXPONENTS = np.round(np.linspace(2.0, -8.0, 51), 10)
#: COCO's function groups (its postprocessing's names and splits).
GROUPS = {
    "separable": range(1, 6),
    "low or moderate conditioning": range(6, 10),
    "high conditioning, unimodal": range(10, 15),
    "multimodal, adequate global structure": range(15, 20),
    "multimodal, weak global structure": range(20, 25),
}


def problem_name(function: int, dim: int, instance: int) -> str:
    """The harness's name of BBOB function ``function`` in ``dim`` dimensions, instance ``instance``."""
    return f"{PREFIX}f{function}-d{dim}-i{instance}"


def parse_name(name: str) -> tuple[int, int, int]:
    """(function, dim, instance) of a name made by :func:`problem_name`; ValueError saying why not."""
    match = NAME.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a BBOB problem name (bbob-f<1-24>-d<dim>-i<instance>)")
    function, dim, instance = (int(part) for part in match.groups())
    if function not in FUNCTIONS or dim < 2 or instance < 1:
        raise ValueError(f"{name!r}: BBOB has functions 1-24, dimensions from 2 and instances from 1")
    return function, dim, instance


def group_of(function: int) -> str:
    """The COCO function group that BBOB function ``function`` belongs to."""
    return next(group for group, members in GROUPS.items() if function in members)


def make_problem(name: str) -> TestFunction:
    """The BBOB problem called ``name`` as a :class:`TestFunction` on [-5, 5]^d, with its known
    optimum (ImportError naming the requirements when ``ioh`` is not installed)."""
    function, dim, instance = parse_name(name)
    try:
        import ioh
    except ImportError as error:
        raise ImportError("the BBOB problems need ioh: pip install -r experiments/benchmarks/requirements.txt") from error
    bbob = ioh.get_problem(function, instance=instance, dimension=dim, problem_class=ioh.ProblemClass.BBOB)

    def evaluate(x: np.ndarray) -> float:
        return float(bbob(np.asarray(x, dtype=float).tolist()))

    return TestFunction(name, evaluate, (BOX,) * dim, float(bbob.optimum.y), tuple(float(v) for v in bbob.optimum.x))


def targets(minimum: float) -> np.ndarray:
    """COCO's 51 targets of a problem whose optimum is ``minimum`` (hardest last)."""
    return minimum + 10.0 ** TARGET_EXPONENTS
