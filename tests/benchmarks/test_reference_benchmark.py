"""The established library's loop that the quality benchmarks can run beside our models: its
method names, its clear error when the optional library is missing, and (where the library is
installed) a run that starts from the same kind of Sobol design and then improves on it."""
import importlib.util

import numpy as np
import pytest
from scipy.stats import qmc

from experiments.benchmarks.functions import FUNCTIONS
from experiments.benchmarks.quality import is_reference, run_once

HAVE_BOTORCH = importlib.util.find_spec("botorch") is not None


def test_reference_method_names():
    assert is_reference("botorch") and is_reference("botorch-fixednoise@5")
    assert not is_reference("gp") and not is_reference("gp-nowarp@4") and not is_reference("sobol")


@pytest.mark.skipif(HAVE_BOTORCH, reason="the library is installed")
def test_missing_library_names_the_install_line():
    with pytest.raises(ImportError, match=r"'botorch' needs BoTorch: pip install -r experiments/benchmarks/requirements\.txt"):
        run_once("branin", "botorch", 0, 4)


@pytest.mark.skipif(not HAVE_BOTORCH, reason="needs the harness's references: pip install -r experiments/benchmarks/requirements.txt")
def test_reference_run_starts_from_sobol_and_improves():
    problem = FUNCTIONS["branin"]
    run = run_once("branin", "botorch-fixednoise@4", 3, 12)
    assert run["values"] == run_once("branin", "botorch-fixednoise@4", 3, 12)["values"]  # seeded
    lower, upper = np.array(problem.bounds).T
    design = qmc.Sobol(2, scramble=True, seed=3).random_base2(2)
    assert run["values"][:4] == pytest.approx([problem.function(lower + u * (upper - lower)) for u in design])
    assert len(run["values"]) == 12 and run["suggest_seconds"][:4] == [0.0] * 4
    assert min(run["values"][4:]) < min(run["values"][:4])
