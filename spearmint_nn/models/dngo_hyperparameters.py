"""DNGO's hyperparameters theta = (log alpha, log beta, lambda, c, Lambda): their priors, and the
sufficient statistics through which the slice sampler evaluates eq. 8 at O(D^2) a step
(the model itself is in :mod:`spearmint_nn.models.dngo`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from .blr import GramSpectrum, log_marginal_likelihood

# Hyperparameter priors, on standardised targets and inputs in the unit cube.
# log alpha (weight precision) and log beta (noise precision): broad Gaussians on the log scale,
# kept inside bounds where K stays well conditioned in float64.
LOG_ALPHA_PRIOR = (0.0, 4.0)  # (mean, sd)
LOG_ALPHA_BOUNDS = (-10.0, 10.0)
LOG_BETA_PRIOR = (math.log(100.0), 4.0)  # noise sd 0.1 of the data's sd, give or take e^4
LOG_BETA_BOUNDS = (-4.0, 14.0)
OFFSET_PRIOR_SD = 1.0  # lambda ~ N(0, 1)
CENTRE_PRIOR = (0.5, 0.5)  # c_k ~ N(0.5, 0.5^2): the quadratic's centre near the middle of the cube
HORSESHOE_SCALE = 1.0  # Lambda_kk ~ half-horseshoe(1): a quadratic over the cube spans ~ Lambda / 4


def quadratic_features(X: Tensor) -> Tensor:
    """q(x) = [1, x, x^2], shape (N, 1 + 2K), so that eta(X) = q(X) @ coefficients."""
    return torch.cat([torch.ones_like(X[:, :1]), X, X * X], dim=1)


@dataclass(frozen=True)
class Hyperparameters:
    """Batched hyperparameter vectors theta (C, 3 + 2K) = [log alpha, log beta, lambda, c, Lambda]."""

    theta: Tensor

    @property
    def alpha(self) -> Tensor:
        return torch.exp(self.theta[:, 0])

    @property
    def beta(self) -> Tensor:
        return torch.exp(self.theta[:, 1])

    def split(self) -> tuple[Tensor, Tensor, Tensor]:
        """(lambda (C,), c (C, K), Lambda (C, K))."""
        K = (self.theta.shape[1] - 3) // 2
        return self.theta[:, 2], self.theta[:, 3 : 3 + K], self.theta[:, 3 + K :]

    def mean_coefficients(self) -> Tensor:
        """Coefficients of eta on q(x), shape (C, 1 + 2K)."""
        offset, centre, scale = self.split()
        constant = offset + (scale * centre * centre).sum(-1)
        return torch.cat([constant[:, None], -2.0 * scale * centre, scale], dim=1)

    def log_prior(self) -> Tensor:
        """Log prior density up to a constant, shape (C,); ``-inf`` outside the support."""
        log_alpha, log_beta = self.theta[:, 0], self.theta[:, 1]
        offset, centre, scale = self.split()
        inside = (
            (log_alpha >= LOG_ALPHA_BOUNDS[0]) & (log_alpha <= LOG_ALPHA_BOUNDS[1])
            & (log_beta >= LOG_BETA_BOUNDS[0]) & (log_beta <= LOG_BETA_BOUNDS[1])
            & (scale > 0).all(-1)
            # The quadratic's centre stays in the cube: a centre beyond a face makes the prior
            # mean fall towards that face, so the model would rate the edge best.
            & ((centre >= 0) & (centre <= 1)).all(-1)
        )
        # Horseshoe density approximation log(log(1 + 3 (s / x)^2)) (Carvalho et al., 2009; as in
        # Spearmint); evaluated on a clamped copy so points outside the support give no NaN.
        positive = scale.clamp_min(1e-300)
        horseshoe = torch.log(torch.log1p(3.0 * (HORSESHOE_SCALE / positive) ** 2)).sum(-1)
        logp = (
            -0.5 * ((log_alpha - LOG_ALPHA_PRIOR[0]) / LOG_ALPHA_PRIOR[1]) ** 2
            - 0.5 * ((log_beta - LOG_BETA_PRIOR[0]) / LOG_BETA_PRIOR[1]) ** 2
            - 0.5 * (offset / OFFSET_PRIOR_SD) ** 2
            - 0.5 * (((centre - CENTRE_PRIOR[0]) / CENTRE_PRIOR[1]) ** 2).sum(-1)
            + horseshoe
        )
        return torch.where(inside & torch.isfinite(logp), logp, torch.full_like(logp, -math.inf))

    @staticmethod
    def initial(n_chains: int, n_inputs: int, generator: torch.Generator) -> "Hyperparameters":
        """Chains started near the priors' centres, jittered so that they are not identical."""
        jitter = 0.1 * torch.randn(n_chains, 3 + 2 * n_inputs, generator=generator, dtype=torch.float64)
        base = torch.cat(
            [
                torch.tensor([0.0, LOG_BETA_PRIOR[0], 0.0], dtype=torch.float64),
                torch.full((n_inputs,), CENTRE_PRIOR[0], dtype=torch.float64),
                torch.full((n_inputs,), 0.1, dtype=torch.float64),
            ]
        )
        theta = base + jitter
        theta[:, 3 + n_inputs :] = theta[:, 3 + n_inputs :].abs()
        return Hyperparameters(theta)


def slice_widths(n_inputs: int) -> Tensor:
    """Initial slice bracket widths per coordinate of theta, shape (3 + 2K,)."""
    return torch.cat(
        [
            torch.tensor([1.0, 1.0, 0.5], dtype=torch.float64),
            torch.full((n_inputs,), 0.25, dtype=torch.float64),
            torch.full((n_inputs,), 1.0, dtype=torch.float64),
        ]
    )


@dataclass(frozen=True)
class SufficientStatistics:
    """Everything eq. 8 needs about (Phi, q, y): Phi (N, D), q = q(X) (N, Q), y (N,)."""

    gram: Tensor  # Phi^T Phi (D, D)
    phi_q: Tensor  # Phi^T q (D, Q)
    phi_y: Tensor  # Phi^T y (D,)
    q_q: Tensor  # q^T q (Q, Q)
    q_y: Tensor  # q^T y (Q,)
    yty: Tensor  # y^T y ()
    n: int
    spectrum: GramSpectrum  # of gram, so that each of the sampler's evaluations costs O(D^2)

    @staticmethod
    def of(Phi: Tensor, q: Tensor, y: Tensor) -> "SufficientStatistics":
        gram = Phi.T @ Phi
        return SufficientStatistics(gram, Phi.T @ q, Phi.T @ y, q.T @ q, q.T @ y, y @ y, len(y), GramSpectrum.of(gram))

    def residual(self, coefficients: Tensor) -> tuple[Tensor, Tensor]:
        """Phi^T y~ (C, D) and y~^T y~ (C,) for y~ = y - q @ coefficients, coefficients (C, Q)."""
        rhs = self.phi_y - coefficients @ self.phi_q.T
        yty = (
            self.yty
            - 2.0 * coefficients @ self.q_y
            + torch.einsum("cq,qr,cr->c", coefficients, self.q_q, coefficients)
        )
        return rhs, yty

    def log_posterior(self, theta: Tensor) -> Tensor:
        """Unnormalised log posterior of hyperparameters theta (C, P), shape (C,)."""
        hypers = Hyperparameters(theta)
        log_prior = hypers.log_prior()
        # Evaluate the likelihood only at finite-prior points; elsewhere K may not even exist.
        safe = torch.where(torch.isfinite(log_prior)[:, None], theta, self.fallback(theta))
        hypers = Hyperparameters(safe)
        rhs, yty = self.residual(hypers.mean_coefficients())
        lml = log_marginal_likelihood(self.spectrum, rhs, yty, self.n, hypers.alpha, hypers.beta)
        return log_prior + lml

    @staticmethod
    def fallback(theta: Tensor) -> Tensor:
        """A harmless in-support stand-in for out-of-support rows (their result is discarded)."""
        K = (theta.shape[1] - 3) // 2
        out = torch.zeros_like(theta)
        out[:, 1] = LOG_BETA_PRIOR[0]
        out[:, 3 + K :] = 1.0
        return out
