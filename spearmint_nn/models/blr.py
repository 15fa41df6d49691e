"""Bayesian linear regression on fixed basis functions, batched over hyperparameter samples.

Snoek et al. (2015), equations 4-8, with alpha the prior precision of the output weights and beta
the noise precision::

    K = beta * Phi^T Phi + alpha * I                      (D, D)      eq. 7
    m = beta * K^{-1} Phi^T y~                            (D,)        eq. 6
    mean(x) = m^T phi(x),   var(x) = phi(x)^T K^{-1} phi(x) [+ 1/beta]  eqs. 4-5

where y~ = y - eta(X) are the targets after subtracting the prior mean. The posterior is computed
from Cholesky factors of K in float64, the marginal likelihood (eq. 8) from one eigendecomposition
of Phi^T Phi per design (``GramSpectrum``); no matrix is ever inverted explicitly.

Shapes: S hyperparameter samples lead every batched tensor. A posterior can hold F target
vectors per sample that share the same design (fantasies of pending outcomes), so the design-only
quantities (K and its Cholesky factor, hence the predictive variance) are computed once per
sample and only the weight means carry the F dimension.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


def _cholesky_of_precision(gram: Tensor, alpha: Tensor, beta: Tensor) -> tuple[Tensor, Tensor]:
    """Cholesky factors of K = beta * gram + alpha * I for every sample.

    gram (D, D); alpha, beta (S,). Returns (L (S, D, D), info (S,)) with info != 0 where K was
    not numerically positive definite (those factors are garbage and must be discarded).
    """
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype)
    precision = beta[:, None, None] * gram + alpha[:, None, None] * eye
    return torch.linalg.cholesky_ex(precision)


@dataclass(frozen=True)
class GramSpectrum:
    """Phi^T Phi = U diag(eigenvalues) U^T, factorised once per design.

    The slice sampler evaluates eq. 8 thousands of times per fit with only alpha and beta (and the
    targets' prior mean) changing. In U's basis K = U diag(beta * eigenvalues + alpha) U^T is
    diagonal, so each evaluation costs O(D^2) (projecting Phi^T y~ onto U) after one O(D^3)
    symmetric eigendecomposition, instead of a batched Cholesky factorisation per call (with
    D = 179 basis functions that was 95% of a suggestion's time). Like the Cholesky route, nothing is inverted: the diagonal is
    divided elementwise, and its entries are at least alpha.
    """

    eigenvalues: Tensor  # (D,), clamped at 0 (rounding makes null directions slightly negative)
    basis: Tensor  # U (D, D), orthonormal columns

    @staticmethod
    def of(gram: Tensor) -> "GramSpectrum":
        eigenvalues, basis = torch.linalg.eigh(gram)
        return GramSpectrum(eigenvalues.clamp_min(0.0), basis)


def log_marginal_likelihood(
    spectrum: GramSpectrum, rhs: Tensor, yty: Tensor, n: int, alpha: Tensor, beta: Tensor
) -> Tensor:
    """Equation 8 from sufficient statistics, batched over C hyperparameter settings.

    Parameters
    ----------
    spectrum : the eigendecomposition of Phi^T Phi (D x D).
    rhs : Phi^T y~ per setting, shape (C, D).
    yty : y~^T y~ per setting, shape (C,).
    n : number of observations N.
    alpha, beta : weight prior precision and noise precision, shape (C,).

    Returns
    -------
    log p(y | X, alpha, beta), shape (C,); ``-inf`` where K is not positive definite.

    The data-fit terms beta/2 ||y~ - Phi m||^2 + alpha/2 m^T m of eq. 8 equal
    (beta y~^T y~ - beta^2 rhs^T K^{-1} rhs) / 2, which needs only the sufficient statistics;
    with K diagonal in the spectrum's basis one evaluation costs O(D^2) (projecting rhs)
    whatever N is.
    """
    D = spectrum.eigenvalues.shape[-1]
    precisions = beta[:, None] * spectrum.eigenvalues + alpha[:, None]  # K's eigenvalues, (C, D)
    projected = rhs @ spectrum.basis  # U^T rhs, (C, D)
    quad = beta * yty - beta**2 * (projected * projected / precisions).sum(-1)
    lml = (
        0.5 * D * torch.log(alpha)
        + 0.5 * n * torch.log(beta)
        - 0.5 * n * math.log(2.0 * math.pi)
        - 0.5 * torch.log(precisions).sum(-1)
        - 0.5 * quad
    )
    ok = (precisions > 0).all(-1) & torch.isfinite(lml)
    return torch.where(ok, lml, torch.full_like(lml, -math.inf))


class BLRPosterior:
    """Posterior over output weights w ~ N(m, K^{-1}) for S samples and F target vectors each.

    Parameters
    ----------
    gram : Phi^T Phi of the conditioning design, shape (D, D).
    rhs : Phi^T y~ per sample and target vector, shape (S, F, D).
    alpha, beta : shape (S,).
    """

    def __init__(self, gram: Tensor, rhs: Tensor, alpha: Tensor, beta: Tensor):
        chol, info = _cholesky_of_precision(gram, alpha, beta)
        if (info != 0).any():
            raise ValueError("BLRPosterior: K = beta Phi^T Phi + alpha I is not positive definite")
        self.gram, self.rhs, self.alpha, self.beta, self.chol = gram, rhs, alpha, beta, chol
        S, F, D = rhs.shape
        # m = beta K^{-1} rhs, solved for all F target vectors of a sample at once.
        solved = torch.cholesky_solve(rhs.transpose(1, 2), chol)  # (S, D, F)
        self.mean = beta[:, None, None] * solved.transpose(1, 2)  # (S, F, D)

    @property
    def n_targets(self) -> int:
        """F, the number of target vectors (fantasies) per sample."""
        return self.rhs.shape[1]

    def predict(self, features: Tensor, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Predictive mean (S, F, M) and variance (S, M) of phi(x)^T w at features (M, D).

        Differentiable with respect to ``features``. With ``observation_noise`` the variance is that
        of a new noisy observation (adds 1/beta, eq. 5); without it, that of the latent function.
        """
        mean = torch.einsum("md,sfd->sfm", features, self.mean)
        S = self.chol.shape[0]
        # var = ||L^{-1} phi||^2 = phi^T K^{-1} phi.
        v = torch.linalg.solve_triangular(self.chol, features.T.expand(S, -1, -1), upper=False)
        var = (v * v).sum(-2)
        if observation_noise:
            var = var + 1.0 / self.beta[:, None]
        return mean, var

    def sample_weights(self, n: int, generator: torch.Generator | None) -> Tensor:
        """n joint draws of w per sample and target vector, shape (S, F, n, D).

        w = m + L^{-T} z with z ~ N(0, I) has covariance L^{-T} L^{-1} = K^{-1}.
        """
        S, F, D = self.mean.shape
        z = torch.randn(S, D, F * n, generator=generator, dtype=self.mean.dtype)
        deviation = torch.linalg.solve_triangular(self.chol.transpose(1, 2), z, upper=True)
        deviation = deviation.transpose(1, 2).reshape(S, F, n, D)
        return self.mean.unsqueeze(2) + deviation

    def add_rows(self, features: Tensor, targets: Tensor) -> "BLRPosterior":
        """Condition on J more rows: features (J, D) and targets y~ of shape (S, F * k, J).

        Target row f * k + i extends this posterior's target vector f (k draws per vector, as
        fantasies produce), so the result has F * k target vectors. A rank-J change of the D x D system: Phi^T Phi gains features^T features (J D^2) and the
        right-hand sides gain features^T y~_J; K is refactorised (D^3 / 3 per sample, independent
        of N and J). The N original rows are never touched.
        """
        gram = self.gram + features.T @ features
        repeats = targets.shape[1] // self.n_targets
        rhs = self.rhs.repeat_interleave(repeats, dim=1) + torch.einsum("jd,sfj->sfd", features, targets)
        return BLRPosterior(gram, rhs, self.alpha, self.beta)
