"""A GP over related tasks with each task's own input warping: multi-task Bayesian optimisation
(Swersky, Snoek and Adams 2013) with the per-task Beta-CDF warps of Snoek et al. 2014
(``input-warping-2014``, sections 2.3, 2.5 and 3.2).

The covariance of observations (x, t) and (x', t') is the product kernel of eq. 5,

    amp2 * K_T[t, t'] * k(w_t(x), w_t'(x')),

k the ARD correlation of :mod:`spearmint_nn.models.kernels`, w_t task t's Beta-CDF warp (every
task its own shapes, so a related task's inputs can be warped onto the current one's), and K_T
the task covariance, diag(s) C diag(s) with C = L L^T. L is parametrised spherically (Pinheiro
and Bates 1996): row i is a unit vector given by i angles in (0, pi), so C is a correlation
matrix for any angles and every angle can be slice-sampled on an interval. Task 0 is the current
task, with s_0 = 1 (amp2 is its scale); the other s_t are log-normal. Each angle's prior is
proportional to its sine: for two tasks that makes their correlation cos(angle) uniform on
[-1, 1], so an unrelated task is free to go to zero correlation. Every hyperparameter is
slice-sampled jointly, batched over chains as in :mod:`spearmint_nn.models.gp`.

The related tasks' data are fixed at construction; each task's targets are standardised here
on their own (a small dataset's error rates and a large one's need not share a scale). ``fit``
takes the current task's inputs and standardised targets and ``posterior`` predicts the
current task only, which is all expected improvement needs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from .gp import robust_cholesky
from .gp_hyperparameters import HyperLayout, log_prior
from .kernels import CORRELATIONS, squared_distances
from .sampling import slice_sweep
from .warping import LOG_SHAPE_BOUND, LOG_SHAPE_PRIOR_VARIANCE, beta_cdf

LOG_TASK_SCALE_BOUND = 5.0
MAX_CATCH_UP_OBSERVATIONS = 10
SELECTION_GAP = 5.0  # log-density units: e^5, a chain 150 times less likely than the best


def task_cholesky(angles: Tensor, n_tasks: int) -> Tensor:
    """Lower-triangular L (B, T, T) with unit rows from angles (B, T (T - 1) / 2) in (0, pi):
    row i is (cos a_i1, sin a_i1 cos a_i2, ..., prod_k sin a_ik), row 0 is e_1."""
    B = angles.shape[0]
    L = torch.zeros(B, n_tasks, n_tasks, dtype=angles.dtype)
    L[:, 0, 0] = 1.0
    start = 0
    for i in range(1, n_tasks):
        a = angles[:, start:start + i]
        start += i
        sines = torch.cumprod(torch.sin(a), dim=1)  # (B, i): prod of the first k sines
        L[:, i, 0] = torch.cos(a[:, 0])
        if i > 1:
            L[:, i, 1:i] = sines[:, :-1] * torch.cos(a[:, 1:])
        L[:, i, i] = sines[:, -1]
    return L


@dataclass(frozen=True)
class TaskLayout:
    """Where each hyperparameter sits in a state vector: the single-task GP's shared part
    (mean, log amp2, log noise, log length scales; :class:`HyperLayout` without warps), then the
    log warp shapes (T, W) for alpha and for beta, the task angles and the log task scales."""

    shared: HyperLayout
    n_tasks: int
    warped: tuple[int, ...]

    @property
    def log_alpha(self) -> slice:
        start = self.shared.size
        return slice(start, start + self.n_tasks * len(self.warped))

    @property
    def log_beta(self) -> slice:
        start = self.log_alpha.stop
        return slice(start, start + self.n_tasks * len(self.warped))

    @property
    def angles(self) -> slice:
        start = self.log_beta.stop
        return slice(start, start + self.n_tasks * (self.n_tasks - 1) // 2)

    @property
    def log_scales(self) -> slice:
        return slice(self.angles.stop, self.angles.stop + self.n_tasks - 1)

    @property
    def size(self) -> int:
        return self.log_scales.stop

    def widths(self) -> Tensor:
        w = torch.empty(self.size, dtype=torch.float64)
        w[:self.shared.size] = self.shared.widths()
        w[self.log_alpha] = w[self.log_beta] = 2.0
        w[self.angles] = 1.0
        w[self.log_scales] = 2.0
        return w

    def log_prior(self, theta: Tensor) -> Tensor:
        """Log prior of states (B, size); -inf outside the support."""
        logp = log_prior(theta[:, :self.shared.size], self.shared)
        shapes = theta[:, self.log_alpha.start:self.log_beta.stop]
        angles, scales = theta[:, self.angles], theta[:, self.log_scales]
        logp = (logp - 0.5 * (shapes**2).sum(-1) / LOG_SHAPE_PRIOR_VARIANCE
                + torch.log(torch.sin(angles).clamp_min(1e-300)).sum(-1) - 0.5 * (scales**2).sum(-1))
        inside = ((shapes.abs() <= LOG_SHAPE_BOUND).all(-1) & ((angles > 0) & (angles < math.pi)).all(-1)
                  & (scales.abs() <= LOG_TASK_SCALE_BOUND).all(-1))
        return torch.where(inside, logp, torch.full_like(logp, -math.inf))


def _keep_the_likely(theta: Tensor, log_density: Tensor, gap: float = SELECTION_GAP) -> Tensor:
    """Chains whose log density is more than ``gap`` below the best replaced by copies of the
    likelier ones, in turn: with tasks nearly perfectly correlated the posterior of a task's
    angle and warps has separated modes (correlated with matching warps; uncorrelated with
    warps of its own), and a chain started in the wrong one stays there for hundreds of sweeps."""
    good = torch.nonzero(log_density >= log_density.max() - gap)[:, 0]
    keep = theta.clone()
    bad = torch.nonzero(log_density < log_density.max() - gap)[:, 0]
    for k, chain in enumerate(bad.tolist()):
        keep[chain] = theta[good[k % len(good)]]
    return keep


class MultiTaskGP:
    """The multi-task GP of the module docstring.

    Parameters
    ----------
    related : the other tasks' data, each (X_t (N_t, D) in [0, 1], y_t (N_t,)), in the current
        task's columns; y_t in any units (standardised here).
    warping : each task warps its inputs through its own sampled Beta CDFs; False: no warps.
    warped_columns : the warped input columns (None: all).
    noiseless, kernel, n_samples, burn_in, sweeps_per_fit, seed : as for the single-task GP.
    """

    def __init__(self, related: Sequence[tuple[Tensor, Tensor]] = (), warping: bool = True,
                 warped_columns: Sequence[int] | None = None, noiseless: bool = False, kernel: str = "matern52",
                 n_samples: int = 10, burn_in: int = 40, sweeps_per_fit: int = 2, seed: int | None = None):
        if kernel not in CORRELATIONS:
            raise ValueError(f"unknown GP kernel {kernel!r}; known: {', '.join(CORRELATIONS)}")
        self.related = []
        for X_t, y_t in related:
            X_t = torch.as_tensor(X_t, dtype=torch.float64)
            y_t = torch.as_tensor(y_t, dtype=torch.float64).reshape(-1)
            spread = y_t.std() if len(y_t) > 1 else torch.tensor(1.0, dtype=torch.float64)
            self.related.append((X_t, (y_t - y_t.mean()) / spread.clamp_min(1e-12)))
        self.n_tasks = 1 + len(self.related)
        self.warping, self.warped_columns = warping, warped_columns
        self.noiseless, self.kernel = noiseless, kernel
        self.n_samples, self.burn_in, self.sweeps_per_fit = n_samples, burn_in, sweeps_per_fit
        self.generator = torch.Generator()
        self.generator.manual_seed(seed if seed is not None else torch.seed())
        self.layout: TaskLayout | None = None
        self.chains: Tensor | None = None
        self._n_observed = 0
        self._fitted: tuple | None = None

    # ------------------------------------------------------------------ the covariance
    def _layout(self, n_dims: int) -> TaskLayout:
        warped = tuple(range(n_dims)) if self.warped_columns is None else tuple(sorted(self.warped_columns))
        return TaskLayout(HyperLayout(n_dims, (), self.noiseless, 0), self.n_tasks, warped if self.warping else ())

    def _unpack(self, theta: Tensor, layout: TaskLayout) -> dict[str, Tensor]:
        B, T, W = theta.shape[0], layout.n_tasks, len(layout.warped)
        shared = layout.shared
        noise = (torch.full((B,), 1e-6, dtype=theta.dtype) if shared.log_noise is None
                 else torch.exp(theta[:, shared.log_noise]))
        L = task_cholesky(theta[:, layout.angles], T)
        scales = torch.cat([torch.zeros(B, 1, dtype=theta.dtype), theta[:, layout.log_scales]], dim=1).exp()
        K_T = scales[:, :, None] * (L @ L.transpose(1, 2)) * scales[:, None, :]
        return {"mean": theta[:, 0], "amp2": torch.exp(theta[:, 1]), "noise": noise,
                "log_l": theta[:, shared.log_lengthscales], "K_T": K_T,
                "log_alpha": theta[:, layout.log_alpha].reshape(B, T, W),
                "log_beta": theta[:, layout.log_beta].reshape(B, T, W)}

    def _embed(self, X: Tensor, tasks: Tensor, h: dict[str, Tensor], layout: TaskLayout) -> Tensor:
        """Inputs of rows X (N, D) of the given tasks (N,), warped by their tasks and scaled by
        the length scales: (B, N, D)."""
        W = X.expand(h["log_l"].shape[0], *X.shape).clone()
        if layout.warped:
            cols = list(layout.warped)
            a, b = torch.exp(h["log_alpha"]), torch.exp(h["log_beta"])  # (B, T, W)
            # task by task: the Beta CDF's series is prepared once per task's shapes, not per row
            for t in torch.unique(tasks).tolist():
                rows = tasks == t
                warped = beta_cdf(X[rows][:, cols], a[:, t:t + 1], b[:, t:t + 1])  # (B, N_t, W)
                W[:, rows.nonzero()[:, 0][:, None], torch.as_tensor(cols)[None, :]] = warped
        return W * torch.exp(-h["log_l"])[:, None, :]

    def _training(self, theta: Tensor, layout: TaskLayout, X: Tensor, tasks: Tensor):
        h = self._unpack(theta, layout)
        E = self._embed(X, tasks, h, layout)
        K_rows = h["K_T"][:, tasks][:, :, tasks]
        K = (h["amp2"][:, None, None] * K_rows * CORRELATIONS[self.kernel](squared_distances(E, E))
             + h["noise"][:, None, None] * torch.eye(len(X), dtype=X.dtype))
        return h, E, K

    # ------------------------------------------------------------------ fitting
    def _all_data(self, X: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Every task's rows, the current task's first: X (N, D), y (N,), tasks (N,)."""
        parts = [(X, y)] + self.related
        tasks = torch.cat([torch.full((len(p[0]),), t, dtype=torch.long) for t, p in enumerate(parts)])
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]), tasks

    def fit(self, X: Tensor, y: Tensor) -> None:
        """Sample the hyperparameters given the current task's X (N, D) and standardised y (N,)."""
        X = torch.as_tensor(X, dtype=torch.float64)
        y = torch.as_tensor(y, dtype=torch.float64).reshape(-1)
        for X_t, _ in self.related:
            if X_t.shape[1] != X.shape[1]:
                raise ValueError(f"a related task has {X_t.shape[1]} input columns, the current one {X.shape[1]}")
        layout = self._layout(X.shape[1])
        X_all, y_all, tasks = self._all_data(X, y)
        sweeps = self.sweeps_per_fit * min(max(len(X) - self._n_observed, 1), MAX_CATCH_UP_OBSERVATIONS)

        def log_density(theta: Tensor) -> Tensor:
            h, _, K = self._training(theta, layout, X_all, tasks)
            L, _, ok = robust_cholesky(K)
            L = torch.where(ok[:, None, None], L, torch.eye(len(X_all), dtype=X_all.dtype))
            z = torch.linalg.solve_triangular(L, (y_all[None, :] - h["mean"][:, None])[..., None], upper=False)[..., 0]
            ll = -0.5 * (z**2).sum(-1) - torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
            return layout.log_prior(theta) + torch.where(ok & torch.isfinite(ll), ll, torch.full_like(ll, -math.inf))

        theta = self.chains
        if theta is None or self.layout != layout or not torch.isfinite(log_density(theta)).all():
            self.layout = layout
            theta = self._initial_chains(layout)
            for _ in range(self.burn_in // 2):
                theta, _ = slice_sweep(log_density, theta, layout.widths(), self.generator)
            theta = _keep_the_likely(theta, log_density(theta))
            sweeps += self.burn_in - self.burn_in // 2
        for _ in range(sweeps):
            theta, _ = slice_sweep(log_density, theta, layout.widths(), self.generator)
        self.chains, self._n_observed = theta, len(X)
        h, E, K = self._training(theta, layout, X_all, tasks)
        L, _, _ = robust_cholesky(K)
        alpha = torch.cholesky_solve((y_all[None, :] - h["mean"][:, None])[..., None], L)[..., 0]
        self._fitted = (h, E, L, alpha, tasks)

    def _initial_chains(self, layout: TaskLayout) -> Tensor:
        """Chains near the single-task GP's start, identity warps and uncorrelated tasks."""
        theta = torch.zeros(self.n_samples, layout.size, dtype=torch.float64)
        theta[:, :layout.shared.size] = layout.shared.pack(mean=0.0, amp2=1.0, noise=1e-3, lengthscales=0.5)
        theta = theta + 0.1 * torch.randn(theta.shape, generator=self.generator, dtype=torch.float64)
        # the angles spread over (0, pi): each chain starts at other task correlations
        theta[:, layout.angles] = math.pi * (0.05 + 0.9 * torch.rand(self.n_samples, layout.angles.stop
                                                                      - layout.angles.start,
                                                                      generator=self.generator, dtype=torch.float64))
        return theta

    # ------------------------------------------------------------------ the current task
    def posterior(self, X: Tensor, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Mean and variance of the current task's f at X (M, D), each (S, M)."""
        if self._fitted is None:
            raise RuntimeError("MultiTaskGP.posterior called before fit")
        h, E, L, alpha, tasks = self._fitted
        X = torch.as_tensor(X, dtype=torch.float64)
        Es = self._embed(X, torch.zeros(len(X), dtype=torch.long), h, self.layout)
        Ks = (h["amp2"][:, None, None] * h["K_T"][:, tasks, 0][:, :, None]
              * CORRELATIONS[self.kernel](squared_distances(E, Es)))  # (S, N, M)
        mean = h["mean"][:, None] + torch.einsum("sn,snm->sm", alpha, Ks)
        V = torch.linalg.solve_triangular(L, Ks, upper=False)
        var = (h["amp2"][:, None] - (V**2).sum(1)).clamp_min(1e-12)
        return mean, var + h["noise"][:, None] if observation_noise else var

    def task_correlations(self) -> Tensor:
        """Each task's correlation with the current one, per sample: (S, T), column 0 is 1."""
        if self._fitted is None:
            raise RuntimeError("MultiTaskGP.task_correlations called before fit")
        K_T = self._fitted[0]["K_T"]
        return K_T[:, :, 0] / torch.sqrt(torch.diagonal(K_T, dim1=1, dim2=2) * K_T[:, :1, 0])

    def warp_values(self, x: Tensor) -> Tensor:
        """Each task's learned warp of the values x (G,) of every warped column: (S, T, G, W)."""
        if self._fitted is None or not self.layout.warped:
            raise RuntimeError("MultiTaskGP.warp_values needs a fitted, warped model")
        h = self._fitted[0]
        a, b = torch.exp(h["log_alpha"]), torch.exp(h["log_beta"])  # (S, T, W)
        x = torch.as_tensor(x, dtype=torch.float64)
        return beta_cdf(x[None, None, :, None], a[:, :, None, :], b[:, :, None, :])
