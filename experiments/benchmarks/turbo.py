"""TuRBO-1 with Thompson sampling, the reference method ``turbo`` of the benchmarks.

Trust-region Bayesian optimisation (Eriksson, Pearce, Gardner, Turner and Poloczek, "Scalable
global optimization via local Bayesian optimization", NeurIPS 2019) is what the field runs for
large batches in 10-20+ dimensions. This is the version of BoTorch's tutorial "Scalable Constrained
Bayesian Optimization (TuRBO)" / "BO with TuRBO-1 and TS/qEI" (botorch.org/docs/tutorials/turbo_1),
with its settings:

- the state: a side length of 0.8 of the unit cube at first, halved after ``failure_tolerance`` =
  ceil(max(4 / q, d / q)) batches without an improvement of 1e-3 of |best| and doubled (up to 1.6)
  after ``success_tolerance`` = 10 improving ones; below 0.5^7 the region restarts;
- the model: ``SingleTaskGP`` with a Matern-5/2 ARD kernel (lengthscales in [0.005, 4]) under a
  scale, noise in [1e-8, 1e-3], the region's values standardised, fitted by maximum likelihood
  with exact Cholesky solves at any size;
- the region: a box around the best point of the region's data, its sides the lengthscales
  scaled to a geometric mean of one, times the length, clipped to the cube;
- Thompson sampling: min(5000, max(2000, 200 d)) candidates, each the centre with the
  coordinates of a scrambled Sobol point in the box put in with probability min(20 / d, 1) (at
  least one), and ``MaxPosteriorSampling`` without replacement picking the batch.

Where the harness goes beyond the tutorial's loop: the tutorial evaluates a batch of q and then
updates the state; here q is the batch or the number of workers (``batch_size``), and the state is
updated with every q results that come back, in the order they finish, so on an asynchronous
cluster the region moves at the rate it does in batches. The model takes over once 2d results of
the region's design are back (the tutorial's initial design): the harness's shared Sobol start
and, while it has fewer than 2d points, more points of the same sequence. After a restart (TuRBO-1
as the paper and its reference code run it) the region forgets its data and starts again from
scrambled Sobol points of a new seed until 2d of them are back; results of points proposed for an
earlier region then no longer count. The tutorial ignores running jobs, and so does this.

Two guards the tutorial lacks, for the real tasks' piecewise-constant losses (a decision tree's, an
error rate's): a region whose values are all the same is standardised by one (as BoTorch's
``Standardize`` does), not divided by a zero spread; and where every attempt of
``fit_gpytorch_mll`` fails (many nearly equal points of different values inside a small region),
the proposal is made with the model's initial hyperparameters, with a warning in the run's log.
"""
from __future__ import annotations

import importlib.util
import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from spearmint_nn.problem.space import Space

Params = dict[str, Any]


@dataclass
class TurboState:
    """The tutorial's trust-region state (``best_value`` of the maximised, negated values)."""

    dim: int
    batch_size: int
    length: float = 0.8
    length_min: float = 0.5**7
    length_max: float = 1.6
    failure_counter: int = 0
    failure_tolerance: int = 0  # set from dim and batch_size below
    success_counter: int = 0
    success_tolerance: int = 10
    best_value: float = -math.inf
    restart_triggered: bool = False

    def __post_init__(self) -> None:
        self.failure_tolerance = math.ceil(max(4.0 / self.batch_size, float(self.dim) / self.batch_size))

    def update(self, batch: Sequence[float]) -> None:
        """The tutorial's ``update_state`` after one batch of (maximised) values."""
        if max(batch) > self.best_value + 1e-3 * math.fabs(self.best_value):
            self.success_counter += 1
            self.failure_counter = 0
        else:
            self.success_counter = 0
            self.failure_counter += 1
        if self.success_counter == self.success_tolerance:
            self.length = min(2.0 * self.length, self.length_max)
            self.success_counter = 0
        elif self.failure_counter == self.failure_tolerance:
            self.length /= 2.0
            self.failure_counter = 0
        self.best_value = max(self.best_value, max(batch))
        if self.length < self.length_min:
            self.restart_triggered = True


class Turbo:
    """TuRBO-1 with Thompson sampling on the unit cube (see the module docstring)."""

    def __init__(self, space: Space, seed: int, batch_size: int, shared: int):
        if importlib.util.find_spec("botorch") is None:
            raise ImportError("the turbo method needs BoTorch: pip install -r experiments/benchmarks/requirements.txt")
        import torch

        self.space, self.seed, self.batch_size = space, seed, max(1, batch_size)
        self.n_init = 2 * space.dim
        self.n_candidates = min(5000, max(2000, 200 * space.dim))
        self.generator = torch.Generator().manual_seed(seed)
        self.restarts = 0
        self._issued: dict[int, tuple[int, bool]] = {}  # id(params) -> (its region, a design point)
        self._start_region(design_seed=seed, drawn=shared)  # after the harness's shared design

    def _start_region(self, design_seed: int, drawn: int) -> None:
        self.state = TurboState(self.space.dim, self.batch_size)
        self._X: list[np.ndarray] = []
        self._y: list[float] = []  # maximised: the negated values
        self._unsettled: list[float] = []  # results of the model's proposals since the last update
        self._design_seed, self._drawn = design_seed, drawn  # the region's Sobol design, points handed out

    def observe(self, params: Params, value: float) -> None:
        # a point it did not propose is the harness's shared design, the first region's
        region, design = self._issued.pop(id(params), (0, True))
        if region != self.restarts:
            return  # proposed for a region that has restarted since
        self._X.append(self.space.encode([params])[0])
        self._y.append(-value)
        if design:  # the design's results set the best value, as the tutorial's initial points do
            self.state.best_value = max(self.state.best_value, -value)
            return
        self._unsettled.append(-value)
        while len(self._unsettled) >= self.batch_size and not self.state.restart_triggered:
            self.state.update(self._unsettled[:self.batch_size])
            self._unsettled = self._unsettled[self.batch_size:]
        if self.state.restart_triggered:
            self.restarts += 1
            self._start_region(design_seed=self.seed + 1000 * self.restarts, drawn=0)

    def propose(self, n: int, running: Sequence[Params]) -> list[Params]:
        if len(self._y) < self.n_init:  # the region's design is not back yet: more of it
            units = self.space.sobol(self._drawn + n, seed=self._design_seed)[self._drawn:]
            self._drawn += n
        else:
            units = self._thompson(n)
        points = self.space.decode(units)
        self._issued.update((id(p), (self.restarts, len(self._y) < self.n_init)) for p in points)
        return points

    def _thompson(self, n: int) -> np.ndarray:
        import gpytorch
        import torch
        from botorch.exceptions.errors import ModelFittingError
        from botorch.fit import fit_gpytorch_mll
        from botorch.generation import MaxPosteriorSampling
        from botorch.models import SingleTaskGP
        from gpytorch.constraints import Interval
        from gpytorch.kernels import MaternKernel, ScaleKernel
        from gpytorch.likelihoods import GaussianLikelihood
        from gpytorch.mlls import ExactMarginalLogLikelihood
        from torch.quasirandom import SobolEngine

        dim = self.space.dim
        X = torch.as_tensor(np.array(self._X), dtype=torch.float64)
        Y = torch.tensor(self._y, dtype=torch.float64)[:, None]
        # The tutorial divides by the standard deviation, zero where every value of the region is
        # the same (an error rate's plateau): then by one, as BoTorch's Standardize transform does.
        spread = Y.std()
        Y = (Y - Y.mean()) / (spread if spread > 1e-8 else 1.0)
        fitted = True
        with warnings.catch_warnings(), gpytorch.settings.max_cholesky_size(float("inf")):
            warnings.simplefilter("ignore")
            likelihood = GaussianLikelihood(noise_constraint=Interval(1e-8, 1e-3))
            kernel = ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=dim, lengthscale_constraint=Interval(0.005, 4.0)))
            model = SingleTaskGP(X, Y, covar_module=kernel, likelihood=likelihood)
            try:
                fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            except ModelFittingError:  # BoTorch has rolled the hyperparameters back to their initial values
                fitted = False
            centre = X[Y.argmax(), :].clone()
            weights = model.covar_module.base_kernel.lengthscale.squeeze().detach().reshape(dim)
            weights = weights / weights.mean()
            weights = weights / torch.prod(weights.pow(1.0 / len(weights)))
            low = torch.clamp(centre - weights * self.state.length / 2.0, 0.0, 1.0)
            high = torch.clamp(centre + weights * self.state.length / 2.0, 0.0, 1.0)
            sobol = SobolEngine(dim, scramble=True, seed=int(torch.randint(0, 2**31, (), generator=self.generator)))
            perturbation = low + (high - low) * sobol.draw(self.n_candidates).to(torch.float64)
            chance = min(20.0 / dim, 1.0)  # of each coordinate being perturbed
            mask = torch.rand(self.n_candidates, dim, generator=self.generator, dtype=torch.float64) <= chance
            none = torch.where(mask.sum(dim=1) == 0)[0]  # every candidate moves at least one coordinate
            mask[none, torch.randint(0, dim, (len(none),), generator=self.generator)] = True
            candidates = centre.expand(self.n_candidates, dim).clone()
            candidates[mask] = perturbation[mask]
            torch.manual_seed(int(torch.randint(0, 2**31, (), generator=self.generator)))  # the posterior draw
            with torch.no_grad():
                chosen = MaxPosteriorSampling(model=model, replacement=False)(candidates, num_samples=n)
        if not fitted:
            warnings.warn(f"turbo: every fit of the region's GP failed ({len(X)} points); proposed with its "
                          f"initial hyperparameters", RuntimeWarning)
        return chosen.numpy()
