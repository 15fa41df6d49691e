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


class ConditionedGP(Surrogate):
    """A surrogate whose posterior is a GP conditioned on data (the module docstring): prediction,
    fantasies and joint draws of f, given the model's covariance through four methods."""

    generator: torch.Generator  # the sampler's random stream, copied into each fantasy
    _data: Conditioned | None

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
    def _joint(self, d: Conditioned, Q: Tensor, samples: slice) -> Tensor:
        """Prior covariance of f at the query points Q with itself under the given samples:
        (s, M, M)."""

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
        var = (d.amp2[:, None] - (V**2 if V.requires_grad else V.square_()).sum(1)).clamp_min(1e-12)
        if observation_noise:
            var = var + d.noise[:, None]
        M = Ks.shape[-1]
        return mean.reshape(S * F, M), var[:, None, :].expand(S, F, M).reshape(S * F, M)

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
            cov = (self._joint(d, Q, slice(None)) - V.transpose(1, 2) @ V
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
            L, _, ok = robust_cholesky(self._joint(d, Q, one) - V.T @ V)
            if not ok.all():
                raise CholeskyError("posterior covariance of the joint draws not positive definite after jitter")
            mean = d.mean[s] + d.alpha[s, :, rows[mine] % F].T @ Ks  # (draws, M)
            z = torch.randn(len(mine), len(X), generator=generator, dtype=torch.float64)
            paths[mine] = mean + z @ L[0].T
        return paths
