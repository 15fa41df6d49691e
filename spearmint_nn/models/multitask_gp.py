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
task, with s_0 = 1 (amp2 is its scale); the other s_t are log-normal. As in the single-task GP
(:mod:`spearmint_nn.models.gp_hyperparameters`), whether a task warps at all is a sampled switch,
uniform on [0, 1], the task warping where it is below ``WARP_PROBABILITY``: a task keeps its
warps only when its data favour them, so the warped model costs little where warps do not help
(half the chains start unwarped, half warped at the identity; see ``_initial_chains``). Each
angle's prior is proportional to its sine: for two tasks that makes their correlation
cos(angle) uniform on [-1, 1], so an unrelated task is free to go to zero correlation. Every hyperparameter is
slice-sampled jointly, batched over chains as in :mod:`spearmint_nn.models.gp`.

The related tasks' data are fixed at construction; each task's targets are standardised here
on their own (a small dataset's error rates and a large one's need not share a scale). ``fit``
takes the current task's inputs and standardised targets and ``posterior`` predicts the
current task only, which is all expected improvement needs; the posterior, its fantasies and
its draws are :mod:`spearmint_nn.models.gp_posterior`'s, given this model's covariance.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from .base import MultiTask, State, check_kind
from .gp import MAX_CATCH_UP_OBSERVATIONS
from .gp_posterior import Conditioned, ConditionedGP, factorise, robust_cholesky
from .gp_hyperparameters import HyperLayout, log_prior
from .kernels import CORRELATIONS, DEFAULT_CORRELATION, squared_distances
from .sampling import slice_sweep
from .warping import LOG_SHAPE_BOUND, LOG_SHAPE_PRIOR_VARIANCE, WARP_PROBABILITY, WARP_SWITCH_OFF, beta_cdf

LOG_TASK_SCALE_BOUND = 5.0
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
    log warp shapes (T, W) for alpha and for beta, each task's warp switch (T, with warps), the
    task angles and the log task scales."""

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
    def switches(self) -> slice:
        start = self.log_beta.stop
        return slice(start, start + (self.n_tasks if self.warped else 0))

    @property
    def angles(self) -> slice:
        start = self.switches.stop
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
        w[self.switches] = w[self.angles] = 1.0
        w[self.log_scales] = 2.0
        return w

    def log_prior(self, theta: Tensor) -> Tensor:
        """Log prior of states (B, size); -inf outside the support."""
        logp = log_prior(theta[:, :self.shared.size], self.shared)
        shapes = theta[:, self.log_alpha.start:self.log_beta.stop]
        angles, scales, switches = theta[:, self.angles], theta[:, self.log_scales], theta[:, self.switches]
        logp = (logp - 0.5 * (shapes**2).sum(-1) / LOG_SHAPE_PRIOR_VARIANCE
                + torch.log(torch.sin(angles).clamp_min(1e-300)).sum(-1) - 0.5 * (scales**2).sum(-1))
        inside = ((shapes.abs() <= LOG_SHAPE_BOUND).all(-1) & ((angles > 0) & (angles < math.pi)).all(-1)
                  & (scales.abs() <= LOG_TASK_SCALE_BOUND).all(-1) & ((switches >= 0) & (switches <= 1)).all(-1))
        return torch.where(inside, logp, torch.full_like(logp, -math.inf))


@dataclass
class _TaskConditioned(Conditioned):
    """The multi-task GP's conditioned state (its rows every task's, the current task's first,
    fantasies of the current task), with what its covariance reads."""

    theta: Tensor  # (S, P) the chains' states
    h: dict[str, Tensor]  # their unpacked hyperparameters
    tasks: Tensor  # (n,) task index of each row
    E: Tensor  # (S, n, D) warped, length-scaled inputs


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


class MultiTaskGP(ConditionedGP, MultiTask):
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
                 warped_columns: Sequence[int] | None = None, noiseless: bool = False, kernel: str = DEFAULT_CORRELATION,
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
        self._data: _TaskConditioned | None = None

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
        # a task whose switch is off has the identity's shapes (log 0), whatever its sampled ones
        warp_on = theta[:, layout.switches, None] < WARP_PROBABILITY  # (B, T, 1); (B, 0, 1) without warps
        log_alpha, log_beta = (torch.where(warp_on, theta[:, part].reshape(B, T, W), 0.0) if W
                               else theta[:, part].reshape(B, T, 0) for part in (layout.log_alpha, layout.log_beta))
        return {"mean": theta[:, 0], "amp2": torch.exp(theta[:, 1]), "noise": noise,
                "log_l": theta[:, shared.log_lengthscales], "K_T": K_T, "log_alpha": log_alpha, "log_beta": log_beta}

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
        self._data = self._condition(theta, X_all, tasks, y_all.expand(self.n_samples, 1, len(y_all)), len(y_all))

    @torch.no_grad()
    def _condition(self, theta: Tensor, X: Tensor, tasks: Tensor, Y: Tensor, n_observed: int) -> _TaskConditioned:
        """Factorise every sample's training covariance for targets Y (S, F, n), whose first
        n_observed columns are observations (the rest fantasies of the current task)."""
        h, E, K = self._training(theta, self.layout, X, tasks)
        L, alpha = factorise(K, Y, h["mean"], "multi-task")
        return _TaskConditioned(X, Y, h["mean"], h["amp2"], h["noise"], L, alpha, n_observed,
                                theta=theta, h=h, tasks=tasks, E=E)

    def _initial_chains(self, layout: TaskLayout) -> Tensor:
        """Chains near the single-task GP's start, tasks uncorrelated; the even chains with every
        task's warp switch off, the odd ones with every switch on at near-identity shapes."""
        theta = torch.zeros(self.n_samples, layout.size, dtype=torch.float64)
        theta[:, :layout.shared.size] = layout.shared.pack(mean=0.0, amp2=1.0, noise=1e-3, lengthscales=0.5)
        theta = theta + 0.1 * torch.randn(theta.shape, generator=self.generator, dtype=torch.float64)
        # _keep_the_likely then keeps whichever start the data favour; why both: models/DESIGN.md,
        # "Warped or not, per task"
        theta[:, layout.switches] = WARP_SWITCH_OFF
        theta[1::2, layout.switches] = WARP_PROBABILITY / 2
        # the angles spread over (0, pi): each chain starts at other task correlations
        theta[:, layout.angles] = math.pi * (0.05 + 0.9 * torch.rand(self.n_samples, layout.angles.stop
                                                                      - layout.angles.start,
                                                                      generator=self.generator, dtype=torch.float64))
        return theta

    # ------------------------------------------------------------------ the current task
    # The posterior, its fantasies and its Thompson draws are ConditionedGP's, of the current
    # task only: queries and pending points are rows of task 0. Its joint draws are not offered
    # as PathSampler's sample_paths, so a batch is chosen by fantasies, one point at a time.
    def _query(self, d: _TaskConditioned, X: Tensor) -> Tensor:
        return self._embed(X, torch.zeros(len(X), dtype=torch.long), d.h, self.layout)

    def _cross(self, d: _TaskConditioned, Q: Tensor, samples: slice) -> Tensor:
        return (d.amp2[samples][:, None, None] * d.h["K_T"][samples][:, d.tasks, 0][:, :, None]
                * CORRELATIONS[self.kernel](squared_distances(d.E[samples], Q[samples])))

    def _joint(self, d: _TaskConditioned, A: Tensor, B: Tensor, samples: slice) -> Tensor:
        return d.amp2[samples][:, None, None] * CORRELATIONS[self.kernel](squared_distances(A[samples], B[samples]))

    def _with_pending(self, d: _TaskConditioned, X_pending: Tensor, Y: Tensor) -> _TaskConditioned:
        return self._condition(d.theta, torch.cat([d.X, X_pending]),
                               torch.cat([d.tasks, torch.zeros(len(X_pending), dtype=torch.long)]), Y, d.n_observed)

    def task_correlations(self) -> Tensor:
        """Each task's correlation with the current one, per sample: (S, T), column 0 is 1."""
        K_T = self._require_fit().h["K_T"]
        return K_T[:, :, 0] / torch.sqrt(torch.diagonal(K_T, dim1=1, dim2=2) * K_T[:, :1, 0])

    def warp_values(self, x: Tensor) -> Tensor:
        """Each task's learned warp of the values x (G,) of every warped column: (S, T, G, W)."""
        h = self._require_fit().h
        if not self.layout.warped:
            raise RuntimeError("MultiTaskGP.warp_values needs a warped model")
        a, b = torch.exp(h["log_alpha"]), torch.exp(h["log_beta"])  # (S, T, W)
        x = torch.as_tensor(x, dtype=torch.float64)
        return beta_cdf(x[None, None, :, None], a[:, :, None, :], b[:, :, None, :])

    # ------------------------------------------------------------------ state
    def state_dict(self) -> State:
        """The chains, their layout and the conditioned data (every task's rows, their task
        indices, targets (S, F, n) of which the first ``n_observed`` are observations)."""
        d = self._data
        return {"kind": type(self).__name__, "n_tasks": self.n_tasks,
                "layout": None if self.layout is None else {"n_dims": self.layout.shared.n_dims,
                                                            "warped": list(self.layout.warped),
                                                            "noiseless": self.noiseless},
                "chains": self.chains, "X": None if d is None else d.X, "tasks": None if d is None else d.tasks,
                "Y": None if d is None else d.Y, "n_observed": 0 if d is None else d.n_observed}

    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place; ValueError (nothing changed) for
        chains of another number of tasks, layout or number of chains."""
        check_kind(state, type(self).__name__)
        if state["chains"] is None:
            return
        if state["n_tasks"] != self.n_tasks:
            raise ValueError(f"saved multi-task GP has {state['n_tasks']} tasks, this one {self.n_tasks}")
        layout = self._layout(int(state["layout"]["n_dims"]))
        if list(layout.warped) != list(state["layout"]["warped"]) or bool(state["layout"]["noiseless"]) != self.noiseless:
            raise ValueError(f"saved multi-task GP layout {state['layout']} differs from this model's")
        chains = torch.as_tensor(state["chains"], dtype=torch.float64).clone()
        if chains.shape != (self.n_samples, layout.size):
            raise ValueError(f"saved chains have shape {tuple(chains.shape)}, this model runs "
                             f"{(self.n_samples, layout.size)}")
        previous = self.layout
        self.layout = layout
        try:
            data = None if state["X"] is None else self._condition(chains, state["X"], state["tasks"], state["Y"],
                                                                  int(state["n_observed"]))
        except (RuntimeError, IndexError) as exc:
            self.layout = previous
            raise ValueError(f"saved multi-task GP data do not fit its chains: {exc}") from None
        self.chains, self._data, self._n_observed = chains, data, 0
