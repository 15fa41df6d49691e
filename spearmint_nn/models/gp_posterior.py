"""The posterior of a Gaussian process conditioned on data, written once for every GP here: its
predictions, its fantasies and its joint draws (:class:`ConditionedGP`), parameterised by the
covariance of the model that conditions it.

A model conditions on its training rows and hands over a :class:`Conditioned` state: for each of
S hyperparameter samples the constant prior mean, the prior variance of f at any point (the
kernel's amplitude) and the noise, and the Cholesky factor of the training covariance with the
solved targets, F target vectors per sample (F = 1 until fantasised). The model says how its
covariance reads query points of the current task (:meth:`ConditionedGP._query`, once for all
samples), their covariance with the training rows (:meth:`ConditionedGP._cross`) and with
themselves (:meth:`ConditionedGP._joint`), and how it conditions on pending points added to its
rows (:meth:`ConditionedGP._with_pending`); everything else follows from the conditioned algebra,
as BoTorch's ``FantasizeMixin`` writes ``fantasize`` once over ``condition_on_observations``.

Shapes: X (M, D) query points; n training rows; S samples; F target vectors per sample; every
result is batched over S (and F) as the acquisitions average over them.
"""
from __future__ import annotations

import abc
import copy
from dataclasses import dataclass
from typing import Self

import torch
from torch import Tensor

from .base import Surrogate


class CholeskyError(RuntimeError):
    """A covariance matrix stayed indefinite after the largest jitter."""


def robust_cholesky(K: Tensor, max_tries: int = 7) -> tuple[Tensor, Tensor, Tensor]:
    """Batched Cholesky factor of K (S, n, n) with jitter escalation per batch element.

    A failed element is retried with jitter = mean(diag K) * 1e-10, 1e-9, ... (max_tries steps).
    Returns (L, jitter, ok): L (S, n, n) lower with L L^T = K + jitter I, jitter (S,), ok (S,) bool;
    where ok is False, L is not a valid factor.
    """
    L, info = torch.linalg.cholesky_ex(K)
    jitter = K.new_zeros(K.shape[:-2])
    ok = (info == 0) & torch.isfinite(torch.diagonal(L, dim1=-2, dim2=-1)).all(-1)
    if ok.all():
        return L, jitter, ok
    scale = torch.diagonal(K, dim1=-2, dim2=-1).mean(-1).abs().clamp_min(1e-12)
    eye = torch.eye(K.shape[-1], dtype=K.dtype)
    for attempt in range(max_tries):
        bad = ~ok
        if not bad.any():
            break
        jitter = torch.where(bad, scale * 10.0 ** (attempt - 10), jitter)
        L_bad, info_bad = torch.linalg.cholesky_ex(K[bad] + jitter[bad, None, None] * eye)
        L[bad] = L_bad
        ok[bad] = (info_bad == 0) & torch.isfinite(torch.diagonal(L_bad, dim1=-2, dim2=-1)).all(-1)
    return L, jitter, ok


@dataclass
class Conditioned:
    """A GP conditioned on n training rows: S hyperparameter samples times F target vectors per
    sample. The first ``n_observed`` rows are observations, the rest pending points' fantasies.

    A model keeps what its covariance needs besides (its hyperparameters, its embedded rows) in a
    subclass of its own.
    """

    X: Tensor  # (n, D)
    Y: Tensor  # (S, F, n)
    mean: Tensor  # (S,) the constant prior mean
    amp2: Tensor  # (S,) the prior variance of f at any point
    noise: Tensor  # (S,) the noise variance of an observation
    L: Tensor  # (S, n, n) Cholesky factor of the training covariance, noise included
    alpha: Tensor  # (S, n, F) = (K + noise I)^-1 (Y - mean)
    n_observed: int


@torch.no_grad()
def factorise(K: Tensor, Y: Tensor, mean: Tensor, what: str) -> tuple[Tensor, Tensor]:
    """(L, alpha) of :class:`Conditioned` for the training covariance K (S, n, n), noise included,
    and targets Y (S, F, n) about the prior means (S,); CholeskyError naming ``what`` when a
    sample's K is indefinite even with jitter."""
    L, _, ok = robust_cholesky(K)
    if not ok.all():
        raise CholeskyError(f"{what} covariance not positive definite for {int((~ok).sum())} samples after jitter")
    return L, torch.cholesky_solve((Y - mean[:, None, None]).transpose(1, 2), L)


# Rounding can leave a posterior variance a hair below zero where the data pin f down.
VARIANCE_FLOOR = 1e-12


def _fantasy_rows(mean: Tensor, var: Tensor) -> tuple[Tensor, Tensor]:
    """A posterior's rows from its means (S, F, M) and variances (S, M), which the F fantasies of
    a hyperparameter sample share: each (S * F, M), a sample's fantasies side by side."""
    S, F, M = mean.shape
    return mean.reshape(S * F, M), var[:, None, :].expand(S, F, M).reshape(S * F, M)


class ConditionedGP(Surrogate):
    """A surrogate whose posterior is a GP conditioned on data (the module docstring): prediction,
    fantasies and joint draws of f, given the model's covariance through four methods."""

    generator: torch.Generator  # the sampler's random stream, copied into each fantasy
    _data: Conditioned | None
    #: a fantasy of a model that was not fantasised itself: its draws z (S, F, J) at the pending
    #: points, whitened (the outcomes drawn are mean + L_pp z, L_pp the pending points' factor)
    whitened_fantasies: Tensor | None = None

    # ---------------------------------------------------------------- the model's covariance
    @abc.abstractmethod
    def _query(self, d: Conditioned, X: Tensor) -> Tensor:
        """The query points X (M, D) of the current task as the covariance reads them, for every
        sample: a tensor whose leading dimension is S (e.g. embedded inputs (S, M, E))."""

    @abc.abstractmethod
    def _cross(self, d: Conditioned, Q: Tensor, samples: slice) -> Tensor:
        """Prior covariance of the training rows with the query points Q (``_query``'s result)
        under the given samples: (s, n, M)."""

    @abc.abstractmethod
    def _joint(self, d: Conditioned, A: Tensor, B: Tensor, samples: slice) -> Tensor:
        """Prior covariance of f at the query points A with f at B (``_query``'s results) under the
        given samples: (s, M_A, M_B)."""

    @abc.abstractmethod
    def _with_pending(self, d: Conditioned, X_pending: Tensor, Y: Tensor) -> Conditioned:
        """``d`` conditioned anew with the pending points X_pending (J, D) of the current task
        appended to its rows, and targets Y (S, F', n + J); ``n_observed`` unchanged."""

    # ---------------------------------------------------------------------- the posterior
    def _require_fit(self) -> Conditioned:
        if self._data is None:
            raise RuntimeError(f"{type(self).__name__} used before fit")
        return self._data

    def posterior(self, X: Tensor, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Mean and variance of f at X (M, D), each (S * F, M) with F = 1 unless fantasised;
        ``observation_noise`` adds the noise variance (that of a new observation)."""
        d = self._require_fit()
        X = torch.as_tensor(X, dtype=torch.float64)
        S, F, _ = d.Y.shape
        Ks = self._cross(d, self._query(d, X), slice(None))  # (S, n, M)
        mean = d.mean[:, None, None] + torch.einsum("snf,snm->sfm", d.alpha, Ks)
        V = torch.linalg.solve_triangular(d.L, Ks, upper=False)
        # In place where autograd keeps no V: one pass less over the largest tensor of a scoring.
        var = (d.amp2[:, None] - (V**2 if V.requires_grad else V.square_()).sum(1)).clamp_min(VARIANCE_FLOOR)
        if observation_noise:
            var = var + d.noise[:, None]
        return _fantasy_rows(mean, var)

    def screening_bytes(self, M: int) -> int:
        """What :meth:`screen` keeps for M candidates, in bytes: its (S, n, M) solves."""
        S, _, n = self._require_fit().Y.shape
        return 8 * S * n * M

    def screen(self, X: Tensor) -> "ScreenedPosterior":
        """The posterior at a fixed candidate set X (M, D), to which pending points are added one
        at a time (:class:`ScreenedPosterior`); only for a model that is not a fantasy."""
        return ScreenedPosterior(self, torch.as_tensor(X, dtype=torch.float64))

    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> Self:
        """A model conditioned on joint posterior draws of y (f plus noise) at X_pending (J, D).

        The result's posterior has S * F_old * n_fantasies rows (sample-major); its
        ``fantasy_values`` (rows, J_total) are the drawn targets at all pending points. It shares
        the chains but has its own copy of the sampler's random stream, so fitting it leaves this
        model as it is.
        """
        d = self._require_fit()
        Xp = torch.as_tensor(X_pending, dtype=torch.float64)
        S, F, n = d.Y.shape
        J = len(Xp)
        with torch.no_grad():
            Q = self._query(d, Xp)
            Knp = self._cross(d, Q, slice(None))
            V = torch.linalg.solve_triangular(d.L, Knp, upper=False)
            cov = (self._joint(d, Q, Q, slice(None)) - V.transpose(1, 2) @ V
                   + d.noise[:, None, None] * torch.eye(J, dtype=Xp.dtype))
            Lp, _, ok = robust_cholesky(cov)
            if not ok.all():
                raise CholeskyError("fantasy covariance not positive definite after jitter")
            mean = d.mean[:, None, None] + torch.einsum("snf,snj->sfj", d.alpha, Knp)  # (S, F, J)
            z = torch.randn(S, F, n_fantasies, J, generator=generator, dtype=Xp.dtype)
            draws = mean[:, :, None, :] + torch.einsum("sij,sfkj->sfki", Lp, z)  # (S, F, n_fantasies, J)
            Y = torch.cat([d.Y[:, :, None, :].expand(S, F, n_fantasies, n), draws], dim=-1)
            fantasy = copy.copy(self)
            fantasy.generator = torch.Generator()
            fantasy.generator.set_state(self.generator.get_state())
            fantasy._data = self._with_pending(d, Xp, Y.reshape(S, F * n_fantasies, n + J))
            # what the draws are in the training covariance's own terms (ScreenedPosterior)
            fantasy.whitened_fantasies = z.reshape(S, F * n_fantasies, J) if F == 1 else None
        return fantasy

    @property
    def fantasy_values(self) -> Tensor:
        """Targets drawn at the pending points, (S * F, J); (S, 0) for a model without fantasies."""
        d = self._require_fit()
        S, F, n = d.Y.shape
        return d.Y[:, :, d.n_observed:].reshape(S * F, n - d.n_observed)

    def sample_f(self, X: Tensor, generator: torch.Generator) -> Tensor:
        """One joint draw of f at X (M, D) from a random (sample, fantasy) row, shape (M,): see
        :meth:`_draw_paths`."""
        return self._draw_paths(X, 1, generator)[0]

    @torch.no_grad()
    def _draw_paths(self, X: Tensor, n: int, generator: torch.Generator) -> Tensor:
        """n joint draws of f at X (M, D), shape (n, M), exact: one M x M Cholesky factor per
        hyperparameter sample drawn from, so M is meant to be a candidate set of one or two
        thousand points.

        Draw j uses (sample, fantasy) row (r + j) mod R of the R = S * F rows, r random, as
        ``DNGO.sample_paths`` does: n >= R draws cover the rows evenly. A model that offers these
        draws to the search declares :class:`~spearmint_nn.models.base.PathSampler`.
        """
        d = self._require_fit()
        S, F, _ = d.Y.shape
        X = torch.as_tensor(X, dtype=torch.float64)
        rows = (int(torch.randint(S * F, (1,), generator=generator)) + torch.arange(n)) % (S * F)
        Q = self._query(d, X)
        paths = X.new_empty(n, len(X))
        for s in torch.unique(rows // F).tolist():
            mine = torch.nonzero(rows // F == s)[:, 0]
            one = slice(s, s + 1)
            Ks = self._cross(d, Q, one)[0]  # (n_train, M)
            V = torch.linalg.solve_triangular(d.L[s], Ks, upper=False)
            L, _, ok = robust_cholesky(self._joint(d, Q, Q, one) - V.T @ V)
            if not ok.all():
                raise CholeskyError("posterior covariance of the joint draws not positive definite after jitter")
            mean = d.mean[s] + d.alpha[s, :, rows[mine] % F].T @ Ks  # (draws, M)
            z = torch.randn(len(mine), len(X), generator=generator, dtype=torch.float64)
            paths[mine] = mean + z @ L[0].T
        return paths


class ScreenedPosterior:
    """A GP's posterior at one candidate set C (M, D) under fantasies of pending points that are
    added one at a time: what the members of a batch chosen point by point share.

    The factor L of the training covariance of the observed rows and the pending points has the
    observed rows' factor L_o as its leading block, so V = L^-1 K(rows, C) is V_o = L_o^-1
    K(observed, C), computed once, followed by one row per pending point p, v = (k(p, C) - l^T V)
    / l_p, with (l, l_p) the row p adds to L. A fantasy draws the pending outcomes as their
    posterior mean plus L_p z (``ConditionedGP.fantasize``, which keeps z as its
    ``whitened_fantasies``); whitened by L its targets are w_o = L_o^-1 (y - m) followed by z
    itself. Under fantasy z therefore

        mean = m + V_o^T w_o + V_p^T z,    var = amp2 - |V_o|^2 - |V_p|^2,

    the fantasy's own posterior at C to rounding, at a cost of O(M (J F)) per member of a batch
    instead of the O(M (N + J)^2) of conditioning anew.
    """

    def __init__(self, model: ConditionedGP, C: Tensor):
        d = model._require_fit()
        S, F, n = d.Y.shape
        if F != 1 or d.n_observed != n:
            raise ValueError("a screened posterior starts from the model itself, not from a fantasy of it")
        self.model, self.candidates = model, C
        with torch.no_grad():
            self.Q = model._query(d, C)
            self.V = torch.linalg.solve_triangular(d.L, model._cross(d, self.Q, slice(None)), upper=False)  # (S, n, M)
            w = torch.linalg.solve_triangular(d.L, (d.Y[:, 0, :] - d.mean[:, None])[..., None], upper=False)
            self.mean = d.mean[:, None] + (self.V * w).sum(1)  # (S, M): the model's own mean
            self.var = d.amp2[:, None] - self.V.square().sum(1)
        self.L = d.L  # grows by a row and a column per pending point
        self.Q_pending: Tensor | None = None  # (S, J, E) as _query reads them
        self._V_pending = self.V.new_empty(S, 8, len(C))  # (S, >= J, M): room for more rows
        self.X_pending = C.new_zeros(0, C.shape[1])

    @property
    def V_pending(self) -> Tensor:
        """The solves' rows of the pending points, (S, J, M)."""
        return self._V_pending[:, :len(self.X_pending)]

    @torch.no_grad()
    def add_pending(self, X: Tensor) -> None:
        """Condition on more pending points X (K, D), one after another."""
        model, d = self.model, self.model._require_fit()
        for x in torch.as_tensor(X, dtype=torch.float64).reshape(-1, self.candidates.shape[1]):
            Qx = model._query(d, x[None])
            k = model._cross(d, Qx, slice(None))  # (S, n, 1) with the observed rows
            if self.Q_pending is not None:
                k = torch.cat([k, model._joint(d, self.Q_pending, Qx, slice(None))], dim=1)
            l = torch.linalg.solve_triangular(self.L, k, upper=False)[..., 0]  # (S, r)
            l_p = (model._joint(d, Qx, Qx, slice(None))[:, 0, 0] + d.noise - l.square().sum(1))
            l_p = l_p.clamp_min(VARIANCE_FLOOR).sqrt()
            n, J = self.V.shape[1], len(self.X_pending)
            v = (model._joint(d, Qx, self.Q, slice(None))[:, 0, :] - torch.einsum("sr,srm->sm", l[:, :n], self.V)
                 - torch.einsum("sr,srm->sm", l[:, n:], self.V_pending)) / l_p[:, None]
            S, r = l.shape
            L = self.L.new_zeros(S, r + 1, r + 1)
            L[:, :r, :r], L[:, r, :r], L[:, r, r] = self.L, l, l_p
            self.L = L
            self.Q_pending = Qx if self.Q_pending is None else torch.cat([self.Q_pending, Qx], dim=1)
            if J == self._V_pending.shape[1]:
                self._V_pending = torch.cat([self._V_pending, torch.empty_like(self._V_pending)], dim=1)
            self._V_pending[:, J] = v
            self.X_pending = torch.cat([self.X_pending, x[None]])

    def posterior(self, whitened: Tensor | None = None, rows: slice = slice(None)) -> tuple[Tensor, Tensor]:
        """Mean and variance of f at the candidates ``rows`` under the fantasies ``whitened``
        (S, F, J) of the J pending points added (a fantasy's ``whitened_fantasies``; None
        without pending points): each (S * F, M), as ``ConditionedGP.posterior`` gives them."""
        S, J = len(self.mean), self.V_pending.shape[1]
        V_pending = self.V_pending[:, :, rows]
        if J == 0:
            mean = self.mean[:, None, rows]
        else:
            if whitened is None or tuple(whitened.shape[::2]) != (S, J):
                raise ValueError(f"need the whitened fantasies (S, F, J) of the {J} pending points added")
            mean = self.mean[:, None, rows] + torch.einsum("sfj,sjm->sfm", whitened, V_pending)
        return _fantasy_rows(mean, (self.var[:, rows] - V_pending.square().sum(1)).clamp_min(VARIANCE_FLOOR))
