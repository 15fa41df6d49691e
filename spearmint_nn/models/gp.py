"""The Spearmint Gaussian process (Snoek et al. 2012) with input warping (Snoek et al. 2014).

Model: y = f(x) + eps with f ~ GP(m, amp2 * k(w(x) / lengthscales, w(x') / lengthscales)), eps ~ N(0, noise),
k the Matérn 5/2 correlation (or, by choice, the squared exponential: ``kernels.CORRELATIONS``),
w the per-input Beta CDF warping (``warping.py``), optionally the arc embedding of conditional
inputs (``kernels.py``). The hyperparameters are integrated out by slice sampling C chains side by
side (``sampling.slice_sweep``): a burn-in the first time, then a few sweeps per new observation
at each fit, continuing the chains, and the final state of each chain is one of the S = C
posterior samples. Everything downstream (Cholesky factors, posteriors, fantasies) is batched
over those samples, and written once for this GP and the multi-task GP in
:mod:`spearmint_nn.models.gp_posterior`, given this GP's covariance.

The hyperparameters, their layout in a sampled state and their priors are in
:mod:`spearmint_nn.models.gp_hyperparameters`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .base import PathSampler, State, Warped, check_kind
from .gp_posterior import Conditioned, ConditionedGP, factorise, robust_cholesky
from .gp_hyperparameters import LENGTHSCALE_PRIORS, HyperLayout, Hypers, log_prior
from .kernels import CORRELATIONS, DEFAULT_CORRELATION, Conditional, covariance, embed, squared_distances
from .sampling import slice_sweep
from .warping import warp, warped_column_indices, warping_summary

# A refit after a batch (or a daemon restart) sweeps at most this many observations' worth:
# five times a one-at-a-time refit, so its cost stays bounded. The chains continue from the
# posterior of the round before, already close; at 200 observations a sweep costs about a second.
# Ten sweeps after a round instead of twenty were level or ahead on the suite's batch slices
# (benchmarks/RESULTS.md, "Changes judged on the suite").
MAX_CATCH_UP_OBSERVATIONS = 5


class GPCapacityError(ValueError):
    """More observations than an exact GP handles in reasonable time."""


@dataclass
class _GPConditioned(Conditioned):
    """The GP's conditioned state, with what its covariance reads: the hyperparameters and the
    embedded training rows."""

    hypers: Hypers
    embedded: Tensor  # (S, n, E)


class _TrainingCorrelation:
    """Memo of the training inputs' correlation matrix during one fit, (B, N, N) for B states.

    A slice-sampling sweep moves one coordinate at a time. While it moves the mean, amplitude or
    noise the correlation is unchanged, and while it moves a length scale or an arc angle the
    warped inputs are; while it moves the warp shapes of warped input d only column d of the
    warped inputs changes (unwarped columns never do), and only where the sample warps at all.
    Changes are detected on the shapes in effect (``Hypers``: the identity's where the switch is
    off), so moving the switch rewarps every warped column and moving an unused shape changes
    nothing. Recomputing none of that saves most of the cost of a sweep.

    A call holds any of the chains' states (both bracket ends, or the chains still shrinking), so
    the memo keeps the rows of recent calls, as many as its largest call had, each under the
    shapes it was computed for: a state whose shapes are kept is copied, the others are computed
    once per distinct shapes, their warped inputs starting from the kept row whose warp shapes
    differ in the fewest columns. What is reused is decided by comparing shapes, so the result is
    exact for any states; which rows are kept only decides how much is reused.
    """

    def __init__(self, gp: "GP", X: Tensor, layout: HyperLayout):
        self.gp, self.X, self.layout = gp, X, layout
        self.warped = torch.tensor(layout.warped, dtype=torch.long)
        self._capacity = 0
        self._shape_keys: Tensor | None = None  # (K, k) the shapes of each kept correlation
        self._R: Tensor | None = None  # (K, N, N)
        self._warp_keys: Tensor | None = None  # (K', 2W) the warp shapes of each kept warped input
        self._W: Tensor | None = None  # (K', N, D)

    def __call__(self, theta: Tensor, h: Hypers) -> Tensor:
        self._capacity = max(self._capacity, len(theta))
        in_effect = [h.log_lengthscales, h.rho] + ([h.log_alpha, h.log_beta] if self.layout.warping else [])
        keys = torch.cat(in_effect, dim=1)
        distinct, row_of = torch.unique(keys, dim=0, return_inverse=True)
        kept = _matching_rows(self._shape_keys, distinct)
        new = torch.nonzero(kept < 0)[:, 0]
        R = distinct.new_empty(len(distinct), len(self.X), len(self.X))
        if len(new) < len(distinct):
            R[kept >= 0] = self._R[kept[kept >= 0]]
        if len(new):
            # one state of theta per distinct new shapes (any of them: the correlation reads only the shapes)
            first = row_of.new_empty(len(distinct)).scatter_(0, row_of, torch.arange(len(theta)))[new]
            sub = Hypers.unpack(theta[first], self.layout)
            R[new] = self.gp._correlation(self.X, sub, self._warped(sub))
            self._shape_keys, self._R = _keep(self._shape_keys, self._R, distinct[new], R[new], self._capacity)
        return R[row_of]

    def _warped(self, h: Hypers) -> Tensor:
        """Warped training inputs (B, N, D) of B states, recomputing only the warped columns whose
        shapes differ from the nearest kept row's."""
        if not self.layout.warping:
            return self.X
        keys = torch.cat([h.log_alpha, h.log_beta], dim=1)
        if self._W is None:
            W = self.gp._warp(self.X, h)
        else:
            differs = (keys[:, None, :] != self._warp_keys[None, :, :]).reshape(len(keys), len(self._warp_keys), 2, -1)
            differs = differs.any(2)  # (B, K', W): which warped columns differ from each kept row
            nearest = differs.sum(-1).argmin(1)
            W = self._W[nearest]
            shapes = torch.nonzero(differs[torch.arange(len(keys)), nearest].any(0))[:, 0]
            if len(shapes):
                columns = self.warped[shapes]
                W[:, :, columns] = warp(self.X[:, columns], h.log_alpha[:, shapes], h.log_beta[:, shapes])
        self._warp_keys, self._W = _keep(self._warp_keys, self._W, keys, W, self._capacity)
        return W


def _matching_rows(kept: Tensor | None, keys: Tensor) -> Tensor:
    """For each row of keys (B, k), the index of an equal row of kept (K, k), or -1."""
    if kept is None:
        return torch.full((len(keys),), -1, dtype=torch.long)
    equal = (keys[:, None, :] == kept[None, :, :]).all(-1)
    return torch.where(equal.any(1), equal.int().argmax(1), -1)


def _keep(keys: Tensor | None, rows: Tensor | None, new_keys: Tensor, new_rows: Tensor,
          capacity: int) -> tuple[Tensor, Tensor]:
    """The memo's rows after a call: the call's new rows first, then the kept ones they do not
    replace, at most ``capacity``."""
    if keys is None:
        return new_keys[:capacity], new_rows[:capacity]
    stale = _matching_rows(new_keys, keys) < 0
    return (torch.cat([new_keys, keys[stale]])[:capacity], torch.cat([new_rows, rows[stale]])[:capacity])


class GP(ConditionedGP, PathSampler, Warped):
    """Spearmint's GP: ARD Matérn 5/2, slice-sampled hyperparameters, optional Beta-CDF warping.

    Parameters
    ----------
    n_inputs : D, if known in advance (checked against the data).
    kernel : the correlation function, a name from ``kernels.CORRELATIONS``: "matern52"
        (Spearmint's, default) or "squared-exponential".
    lengthscale_prior : "log-normal" (default, log l ~ N(log 0.5, 1)) or "top-hat" (Spearmint's,
        l uniform on its bounds); see ``gp_hyperparameters.LOG_LENGTHSCALE_PRIOR_MEAN`` for why the
        default differs.
    warping : warp inputs through sampled Beta CDFs (on by default).
    warped_columns : which inputs to warp, as column indices or a boolean mask of length D;
        None (default) warps every input. The others enter the kernel unwarped and have no
        warp shapes to sample.
    noiseless : fixed tiny noise (``gp_hyperparameters.NOISELESS_JITTER``) instead of a sampled noise variance.
    n_samples : S, the number of slice-sampling chains run side by side; each contributes its
        current state as one posterior sample.
    burn_in : sweeps on the first fit (and after the input dimension changes).
    sweeps_per_fit : sweeps on every later fit per observation added since the last fit (at
        most ``MAX_CATCH_UP_OBSERVATIONS`` counted), continuing the chains.
    conditional : arc-kernel treatment of inputs that are only active under a condition.
    max_observations : fit refuses more observations than this (exact GPs cost O(N^3)).
    seed : seed of the sampler's random stream (fantasies use the generator they are given).
    """

    def __init__(
        self,
        n_inputs: int | None = None,
        kernel: str = DEFAULT_CORRELATION,
        lengthscale_prior: str = "log-normal",
        warping: bool = True,
        warped_columns: Sequence[int] | Sequence[bool] | Tensor | None = None,
        noiseless: bool = False,
        n_samples: int = 10,
        burn_in: int = 20,
        sweeps_per_fit: int = 2,
        conditional: Conditional | None = None,
        max_observations: int = 3000,
        seed: int | None = None,
    ):
        if kernel not in CORRELATIONS:
            raise ValueError(f"unknown GP kernel {kernel!r}; known: {', '.join(CORRELATIONS)}")
        if lengthscale_prior not in LENGTHSCALE_PRIORS:
            raise ValueError(f"unknown length-scale prior {lengthscale_prior!r}; known: {', '.join(LENGTHSCALE_PRIORS)}")
        self.n_inputs = n_inputs
        self.kernel = kernel
        self.lengthscale_prior = lengthscale_prior
        self.warping = warping
        self.warped_columns = warped_columns
        if n_inputs is not None:
            self._warped_for(n_inputs)  # a bad column list fails here, not at the first fit
        self.noiseless = noiseless
        self.n_samples = n_samples
        self.burn_in = burn_in
        self.sweeps_per_fit = sweeps_per_fit
        self.conditional = conditional
        self.max_observations = max_observations
        self.generator = torch.Generator()
        self.generator.manual_seed(seed if seed is not None else torch.seed())
        self.layout: HyperLayout | None = None
        self.chains: Tensor | None = None  # (C, P) current sampler states
        self._data: _GPConditioned | None = None
        self._n_observed = 0

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Tensor, y: Tensor) -> None:
        """Sample hyperparameters given X (N, D) in [0, 1] and standardised y (N,); N >= 1."""
        X = torch.as_tensor(X, dtype=torch.float64)
        y = torch.as_tensor(y, dtype=torch.float64).reshape(-1)
        N, D = X.shape
        if self.n_inputs is not None and D != self.n_inputs:
            raise ValueError(f"GP built for {self.n_inputs} inputs got X with {D} columns")
        if N > self.max_observations:
            raise GPCapacityError(
                f"the GP model got {N} observations, more than its limit of {self.max_observations}: "
                f"an exact GP costs O(N^3) per hyperparameter sample and per slice-sampling step, so it "
                f"would take hours per suggestion; use the DNGO model (\"model\": \"dngo\"), which scales "
                f"linearly in N"
            )
        layout = self.layout_for(D)
        # The chains advance in proportion to the new data, up to the cap: a batch of five results
        # moves them as far as five one-at-a-time refits would (batch runs otherwise mix less).
        sweeps = self.sweeps_per_fit * min(max(N - self._n_observed, 1), MAX_CATCH_UP_OBSERVATIONS)
        if self.chains is None or self.layout != layout:
            self.layout = layout
            self.chains = self._initial_chains(y)
            sweeps = self.sweeps_per_fit + self.burn_in

        correlation = _TrainingCorrelation(self, X, layout)

        def log_density(theta: Tensor) -> Tensor:
            return log_prior(theta, layout, self.lengthscale_prior) + self._log_likelihood(theta, X, y, layout, correlation)

        if not torch.isfinite(log_density(self.chains)).all():
            # New data can make an old state impossible (e.g. a far-off outlier under tiny noise).
            self.chains = self._initial_chains(y)
            sweeps = self.sweeps_per_fit + self.burn_in
        theta = self.chains
        for _ in range(sweeps):
            theta, _ = slice_sweep(log_density, theta, layout.widths(), self.generator)
        self.chains = theta
        self._n_observed = N
        self._data = self._condition(Hypers.unpack(theta, layout), X, y.expand(self.n_samples, 1, N), N)

    def _initial_chains(self, y: Tensor) -> Tensor:
        """Chains dispersed around moderate length scales and small noise, all starting with the
        switch off: the simpler, unwarped model, left only when the data favour warps."""
        theta = self.layout.pack(mean=float(y.mean()) if y.numel() else 0.0, amp2=1.0, noise=1e-3, lengthscales=0.5,
                                 warped=False)
        spread = 0.1 * torch.randn(self.n_samples, self.layout.size, generator=self.generator, dtype=torch.float64)
        spread[:, self.layout.rho] = 0.0
        if self.layout.warping:
            spread[:, self.layout.warp_switch] = 0.0
        return theta + spread

    def layout_for(self, n_dims: int) -> HyperLayout:
        """The state-vector layout of this model's hyperparameters for D = n_dims inputs."""
        return HyperLayout(n_dims, self._warped_for(n_dims), self.noiseless,
                           len(self.conditional.dims) if self.conditional else 0)

    def _warped_for(self, n_dims: int) -> tuple[int, ...]:
        """The warped input columns, ascending, for D = n_dims inputs (empty without warping)."""
        return warped_column_indices(self.warped_columns, n_dims) if self.warping else ()

    def log_marginal_likelihood(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """log p(y | X, theta) = log N(y; mean, K + noise I) for states theta (C, size) -> (C,).

        -inf where no Cholesky factor exists even with jitter.
        """
        X = torch.as_tensor(X, dtype=torch.float64)
        return self._log_likelihood(theta, X, torch.as_tensor(y, dtype=torch.float64), self.layout_for(X.shape[1]))

    def _log_likelihood(
        self, theta: Tensor, X: Tensor, y: Tensor, layout: HyperLayout, correlation: "_TrainingCorrelation | None" = None
    ) -> Tensor:
        h = Hypers.unpack(theta, layout)
        R = correlation(theta, h) if correlation is not None else self._correlation(X, h)
        # The noise goes onto the diagonal in place: the slice sampler calls this thousands of
        # times per fit, and a (B, N, N) noise matrix cost two more passes over K each time.
        K = h.amp2[:, None, None] * R
        K.diagonal(dim1=-2, dim2=-1).add_(h.noise[:, None])
        L, _, ok = robust_cholesky(K)
        if not ok.all():
            L = torch.where(ok[:, None, None], L, torch.eye(len(X), dtype=X.dtype))
        r = (y[None, :] - h.mean[:, None])[..., None]
        z = torch.linalg.solve_triangular(L, r, upper=False)[..., 0]
        half_logdet = torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
        ll = -0.5 * (z**2).sum(-1) - half_logdet - 0.5 * len(X) * math.log(2 * math.pi)
        return torch.where(ok & torch.isfinite(ll), ll, torch.full_like(ll, -math.inf))

    def _warp(self, X: Tensor, h: Hypers) -> Tensor:
        """Warped inputs, (S, N, D) with warping (unwarped columns copied), else X itself (N, D)."""
        return X if h.warp is None else h.warp(X)

    def _embed(self, X: Tensor, h: Hypers, W: Tensor | None = None) -> Tensor:
        """Warped, length-scaled (and arc-embedded) inputs of X (N, D): (S, N, E)."""
        W = self._warp(X, h) if W is None else W
        active = self.conditional.active(X.detach()) if self.conditional else None
        return embed(W, h.log_lengthscales, self.conditional, active, h.rho)

    def _correlation(self, X: Tensor, h: Hypers, W: Tensor | None = None) -> Tensor:
        """Kernel correlation (unit amplitude) of X with itself, (S, N, N)."""
        E = self._embed(X, h, W)
        return CORRELATIONS[self.kernel](squared_distances(E, E))

    def _covariance(self, A: Tensor, B: Tensor, amp2: Tensor) -> Tensor:
        """Kernel covariance of embedded points A (S, N, E) and B (S, M, E) for amplitudes (S,)."""
        return covariance(A, B, amp2, CORRELATIONS[self.kernel])

    @torch.no_grad()
    def _condition(self, h: Hypers, X: Tensor, Y: Tensor, n_observed: int) -> _GPConditioned:
        """Factorise the training covariance of every sample for targets Y (S, F, n), whose first
        n_observed columns are observations (the rest fantasies)."""
        E = self._embed(X, h)
        K = self._covariance(E, E, h.amp2) + h.noise[:, None, None] * torch.eye(len(X), dtype=X.dtype)
        L, alpha = factorise(K, Y, h.mean, "GP")
        return _GPConditioned(X, Y, h.mean, h.amp2, h.noise, L, alpha, n_observed, hypers=h, embedded=E)

    # ------------------------------------------------------ the covariance of the posterior
    def _query(self, d: _GPConditioned, X: Tensor) -> Tensor:
        return self._embed(X, d.hypers)

    def _cross(self, d: _GPConditioned, Q: Tensor, samples: slice) -> Tensor:
        return self._covariance(d.embedded[samples], Q[samples], d.amp2[samples])

    def _joint(self, d: _GPConditioned, A: Tensor, B: Tensor, samples: slice) -> Tensor:
        return self._covariance(A[samples], B[samples], d.amp2[samples])

    def _with_pending(self, d: _GPConditioned, X_pending: Tensor, Y: Tensor) -> _GPConditioned:
        return self._condition(d.hypers, torch.cat([d.X, X_pending]), Y, d.n_observed)

    def sample_paths(self, X: Tensor, n: int, generator: torch.Generator) -> Tensor:
        """n exact joint draws of f at X (M, D), shape (n, M), M a candidate set of one or two
        thousand points (``ConditionedGP._draw_paths``)."""
        return self._draw_paths(X, n, generator)

    # ------------------------------------------------------------- introspection
    def warpings(self, grid_size: int = 51) -> dict | None:
        """JSON-able learned warpings of the warped columns (see ``warping.warping_summary``; its
        "columns" names the encoded input of each entry, "share_warped" the fraction of samples
        that warp at all; unwarped samples count as the identity), None without warped columns."""
        h = self._require_fit().hypers
        if h.log_alpha is None:
            return None
        summary = warping_summary(h.log_alpha, h.log_beta, grid_size, columns=h.warped)
        return {**summary, "share_warped": float(h.warp_on.double().mean())}

    def hyperparameters(self) -> dict:
        """JSON-able current samples: lists over the S samples (per input for length scales, per
        warped input for alpha and beta, whose input columns "warped_columns" lists, the identity's
        1 where the sample's "warp_on" is False)."""
        h = self._require_fit().hypers
        out = {
            "mean": h.mean.tolist(),
            "amp2": h.amp2.tolist(),
            "noise": h.noise.tolist(),
            "lengthscales": torch.exp(h.log_lengthscales).tolist(),
        }
        if h.log_alpha is not None:
            out["warped_columns"] = list(h.warped)
            out["alpha"] = torch.exp(h.log_alpha).tolist()
            out["beta"] = torch.exp(h.log_beta).tolist()
            out["warp_on"] = h.warp_on.tolist()
        if self.conditional:
            out["rho"] = h.rho.tolist()
        return out

    def state_dict(self) -> State:
        """The sampler's chains and their layout, and the data the posterior is conditioned on
        (X (n, D), targets Y (S, F, n) of which the first ``n_observed`` columns are observed),
        so that a restarted process predicts as this one does and continues the chains.

        The sampler's random stream is not part of it: a restored GP draws from its own seed.
        """
        d = self._data
        return {
            "kind": type(self).__name__,
            "n_inputs": self.n_inputs,
            "layout": None if self.layout is None else self.layout.to_json(),
            "chains": self.chains,
            "X": None if d is None else d.X,
            "Y": None if d is None else d.Y,
            "n_observed": 0 if d is None else d.n_observed,
        }

    def load_state_dict(self, state: State) -> None:
        """Continue from ``state_dict()``'s result, in place: the next fit continues the chains
        (no burn-in), and until then the posterior is the saved model's.

        ValueError (and nothing changed) when the chains were sampled for other inputs, under
        another layout (warped columns, noise model or arc inputs) or by another number of
        chains: they cannot be continued.
        """
        check_kind(state, type(self).__name__)
        if self.n_inputs is not None and state["n_inputs"] not in (None, self.n_inputs):
            raise ValueError(f"saved GP is for {state['n_inputs']} inputs, not {self.n_inputs}")
        if state["chains"] is None:
            return
        layout = HyperLayout.from_json(state["layout"])
        expected = self.layout_for(layout.n_dims)
        if layout != expected:
            raise ValueError(f"saved GP chains were sampled with layout {layout.to_json()}, this model "
                             f"samples {expected.to_json()}; they cannot be continued")
        chains = torch.as_tensor(state["chains"], dtype=torch.float64).clone()
        if chains.shape != (self.n_samples, layout.size):
            raise ValueError(f"saved GP chains have shape {tuple(chains.shape)}, this model runs "
                             f"{(self.n_samples, layout.size)}")
        data = None
        if state["X"] is not None:
            X, Y, n_observed = state["X"], state["Y"], state["n_observed"]
            if (X.ndim != 2 or X.shape[1] != layout.n_dims or Y.ndim != 3 or Y.shape[0] != self.n_samples
                    or Y.shape[2] != X.shape[0] or not 0 < n_observed <= X.shape[0]):
                raise ValueError(f"saved GP data of shapes {tuple(X.shape)} and {tuple(Y.shape)} do not fit "
                                 f"{self.n_samples} chains over {layout.n_dims} inputs")
            data = self._condition(Hypers.unpack(chains, layout), X, Y, n_observed)
        self.layout, self.chains, self._data = layout, chains, data
        # Not n_observed: the first fit after a load sweeps as for min(N, MAX_CATCH_UP_OBSERVATIONS)
        # new observations, extra mixing after a restart where a one-at-a-time refit sweeps as for one.
        self._n_observed = 0
