"""An established GP library's standard loop, run by the quality benchmarks as methods beside ours.

The GP's targets in RESULTS.md ("GP vs DNGO vs random") are quoted from established GP
libraries; measuring one under *this* harness (same problems, a Sobol start of the same size,
D + 1, same regret threshold, as many seeds as ours) says whether a gap is the model's or the
protocol's. The library is BoTorch, in the loop its tutorials teach: ``SingleTaskGP`` with its
default priors (maximum a-posteriori hyperparameters, outcome standardisation),
``LogExpectedImprovement`` on the best observed value, ``optimize_acqf`` with 10 restarts from 512
raw samples, inputs in the unit cube. Two method names:

- ``botorch``: noise inferred (the library's default, with its noise floor of 1e-4);
- ``botorch-fixednoise``: a fixed noise variance of 1e-6 (what a user of a deterministic
  function would pick; the library raises it to 1e-6 of the standardised variance, quietly here).

An ``@N`` suffix sets the initial design as for our methods (``quality.method_options`` parses
the name). Optional dependency: BoTorch, in the harness's ``requirements.txt``; nothing else in the
project imports it.
"""
from __future__ import annotations

import time
import warnings
from typing import Any

import torch

from spearmint_nn.problem.space import Space

from .functions import FUNCTIONS

#: Model names served here -> the fixed noise variance (raw units), None to infer it.
REFERENCE_METHODS = {"botorch": None, "botorch-fixednoise": 1e-6}
RAW_SAMPLES, RESTARTS = 512, 10


def run_reference(problem_name: str, model: str, seed: int, n_evals: int,
                  initial_design: int | None = None) -> dict[str, Any]:
    """One sequential run of the reference loop ``model`` (a key of ``REFERENCE_METHODS``) from
    ``initial_design`` Sobol points (default D + 1); same result shape as ``quality.run_once``:
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
        raise ImportError(f"method {model!r} needs BoTorch: pip install -r experiments/benchmarks/requirements.txt") from error
    fixed_noise = REFERENCE_METHODS[model]
    problem = FUNCTIONS[problem_name]
    space = Space.from_config(problem.variables)  # the unit cube <-> the problem's box

    def evaluate(unit_point: Any) -> float:
        return problem(space.decode(unit_point)[0])

    torch.set_num_threads(1)
    torch.manual_seed(seed)  # optimize_acqf's raw samples
    X = torch.as_tensor(space.sobol(initial_design or space.default_initial_design, seed=seed))
    values = [evaluate(x) for x in X.numpy()]
    seconds = [0.0] * len(values)
    bounds = torch.stack([torch.zeros(space.dim), torch.ones(space.dim)]).to(torch.float64)
    while len(values) < n_evals:
        started = time.perf_counter()
        Y = -torch.tensor(values, dtype=torch.float64)[:, None]  # BoTorch maximises
        noise = None if fixed_noise is None else torch.full_like(Y, fixed_noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumericalWarning)
            gp = SingleTaskGP(X, Y, train_Yvar=noise, outcome_transform=Standardize(1))
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
            candidate, _ = optimize_acqf(LogExpectedImprovement(gp, best_f=Y.max()), bounds, q=1,
                                         num_restarts=RESTARTS, raw_samples=RAW_SAMPLES)
        seconds.append(time.perf_counter() - started)
        X = torch.cat([X, candidate])
        values.append(evaluate(candidate[0].numpy()))
    return {"values": values[:n_evals], "suggest_seconds": seconds[:n_evals]}
