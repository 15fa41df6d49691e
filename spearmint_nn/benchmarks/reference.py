"""An established GP library's standard loop, run by the quality benchmarks as methods beside ours.

The GP's targets in the README ("GP vs DNGO vs random") are quoted from established GP
libraries; measuring one under *this* harness (same problems, a Sobol start of the same size,
D + 1, same regret threshold, as many seeds as ours) says whether a gap is the model's or the
protocol's. The
library is BoTorch, in the loop its tutorials teach: ``SingleTaskGP`` with its default priors
(maximum a-posteriori hyperparameters, outcome standardisation), ``LogExpectedImprovement`` on the
best observed value, ``optimize_acqf`` with 10 restarts from 512 raw samples, inputs in the unit
cube. Two method names:

- ``botorch``: noise inferred (the library's default, with its noise floor of 1e-4);
- ``botorch-fixednoise``: a fixed noise variance of 1e-6 (what a user of a deterministic
  function would pick; the library raises it to 1e-6 of the standardised variance, quietly here).

An ``@N`` suffix sets the initial design as for our methods. Optional dependency:
``pip install -e '.[reference]'``; nothing else in the project imports BoTorch.
"""
from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
import torch
from scipy.stats import qmc

from .functions import FUNCTIONS

#: Method names served here -> the fixed noise variance (raw units), None to infer it.
REFERENCE_METHODS = {"botorch": None, "botorch-fixednoise": 1e-6}
RAW_SAMPLES, RESTARTS = 512, 10


def is_reference(method: str) -> bool:
    """Whether a benchmark method name (with any "@N" suffix) is run by this module."""
    return method.partition("@")[0] in REFERENCE_METHODS


def run_reference(problem_name: str, method: str, seed: int, n_evals: int) -> dict[str, Any]:
    """One sequential run of the reference loop; same result shape as ``quality.run_once``:
    the values in order (n_evals,) and the seconds of each suggestion (0 for the Sobol start)."""
    try:
        from botorch.acquisition import LogExpectedImprovement
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Standardize
        from botorch.optim import optimize_acqf
        from gpytorch.mlls import ExactMarginalLogLikelihood
        from gpytorch.utils.warnings import NumericalWarning
    except ImportError as error:
        raise ImportError(f"method {method!r} needs BoTorch: pip install -e '.[reference]'") from error
    name, _, design = method.partition("@")
    fixed_noise = REFERENCE_METHODS[name]
    problem = FUNCTIONS[problem_name]
    lower, upper = np.array(problem.bounds, dtype=float).T
    dim = len(lower)
    torch.set_num_threads(1)
    torch.manual_seed(seed)  # optimize_acqf's raw samples
    n_design = int(design) if design else dim + 1
    unit = qmc.Sobol(dim, scramble=True, seed=seed).random_base2(math.ceil(math.log2(n_design)))[:n_design]
    X = torch.as_tensor(unit, dtype=torch.float64)
    values = [problem.function(lower + u * (upper - lower)) for u in unit]
    seconds = [0.0] * len(values)
    bounds = torch.stack([torch.zeros(dim), torch.ones(dim)]).to(torch.float64)
    while len(values) < n_evals:
        started = time.perf_counter()
        Y = -torch.tensor(values, dtype=torch.float64)[:, None]  # BoTorch maximises
        noise = None if fixed_noise is None else torch.full_like(Y, fixed_noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumericalWarning)
            model = SingleTaskGP(X, Y, train_Yvar=noise, outcome_transform=Standardize(1))
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            candidate, _ = optimize_acqf(LogExpectedImprovement(model, best_f=Y.max()), bounds, q=1,
                                         num_restarts=RESTARTS, raw_samples=RAW_SAMPLES)
        seconds.append(time.perf_counter() - started)
        X = torch.cat([X, candidate])
        values.append(problem.function(lower + candidate[0].numpy() * (upper - lower)))
    return {"values": [float(v) for v in values[:n_evals]], "suggest_seconds": seconds[:n_evals]}
