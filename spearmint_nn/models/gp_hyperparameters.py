"""The hyperparameters of the GP (:mod:`spearmint_nn.models.gp`): where each sits in a sampled
state vector (:class:`HyperLayout`), their values per sample (:class:`Hypers`) and their priors
(:func:`log_prior`).

Sampled coordinates (one row of the (C, P) state) and their priors (Spearmint's, except the length
scales' log-normal in place of its top-hat; see LOG_LENGTHSCALE_PRIOR_MEAN):

    mean          constant mean              N(0, 1)          (targets are standardised)
    log amp2      signal variance            log-normal: log amp2 ~ N(0, 1)
    log noise     noise variance             horseshoe(scale 0.1) on noise, noise in [1e-12, 10]
    log l_d       ARD length scales          log-normal: log l_d ~ N(log 0.5, 1), l_d in [1e-3, 10]
                                             (or Spearmint's top-hat: l_d uniform on [1e-3, 10])
    log alpha_d,  Beta-CDF warp shapes       log-normal: log ~ N(0, 0.75), the paper's, |log| <= 3
    log beta_d                               (warped inputs d)
    switch        warped or not              uniform on [0, 1]: the warps apply where switch <
                                             ``warping.WARP_PROBABILITY``, else every input is
                                             unwarped (and the shapes follow their prior)
    rho_c         arc angles                 uniform on [1e-3, 1]                  (conditional)

The switch makes "warped or not" a sampled choice, as in product-space model selection (Carlin and
Chib 1995, with the prior as the pseudo-prior): the fraction of samples that warp is the
posterior probability of the warped model, so inputs that need no warp are left alone instead of
keeping the prior's spread of warps, while a log-scale input turns warping on (models/DESIGN.md, "Warped
or not"). Slice sampling handles the step in the density at the threshold like any other.

Only the inputs named in ``warped_columns`` get warp shapes (default: all). On a 0/1 input (a
one-hot ENUM option, a relevance indicator) every Beta CDF is the identity, so its two shapes
would only lengthen the slice-sampling sweeps and add noise to the posterior; the Optimizer
warps the FLOAT and INT value columns only.

Scale parameters are sampled in log coordinates (the densities include the Jacobian), which lets
one bracket width suit values across decades.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from .warping import LOG_SHAPE_BOUND, LOG_SHAPE_PRIOR_VARIANCE, WARP_PROBABILITY, WARP_SWITCH_OFF, BetaWarp

# Fixed noise variance (standardised units) for a NOISELESS likelihood: Spearmint's stability noise,
# not a model of noise. At 1e-10 the GP had to interpolate every wiggle of the transformed targets,
# which it paid for with short length scales and more edge-seeking EI: Branin reached regret 1e-3
# within 40 evaluations in 32 of 40 runs (37 of 40 at 1e-6; benchmarks/RESULTS.md of e90882b "The GP's targets").
NOISELESS_JITTER = 1e-6
HORSESHOE_SCALE = 0.1
# Deterministic objectives need a noise floor far below the precision sought: a regret of 1e-3 on
# Branin is 2e-5 in standardised units.
LOG_NOISE_BOUNDS = (math.log(1e-12), math.log(10.0))
LOG_LENGTHSCALE_BOUNDS = (math.log(1e-3), math.log(10.0))
# Spearmint's top-hat (uniform l) pulls towards l ~ 5 in the unit cube, and a log-uniform one
# towards l ~ 0.02: with 3-20 points either mode explains the data as noise or as isolated
# spikes, and EI then searches like random search. A log-normal centred on half the cube keeps
# both within reach of the data but not favoured (benchmarks/RESULTS.md of e90882b, "The GP's length-scale prior").
LOG_LENGTHSCALE_PRIOR_MEAN = math.log(0.5)
LOG_LENGTHSCALE_PRIOR_SD = 1.0
LENGTHSCALE_PRIORS = ("log-normal", "top-hat")
RHO_BOUNDS = (1e-3, 1.0)


@dataclass(frozen=True)
class HyperLayout:
    """Where each hyperparameter sits in a sampled state vector of length ``size``.

    ``warped`` lists the input columns (ascending) that have warp shapes; entry k of the
    log alpha and log beta blocks belongs to input column ``warped[k]``.
    """

    n_dims: int
    warped: tuple[int, ...]
    noiseless: bool
    n_arc: int

    @property
    def warping(self) -> bool:
        return bool(self.warped)

    def to_json(self) -> dict:
        return {"n_dims": self.n_dims, "warped": list(self.warped), "noiseless": self.noiseless, "n_arc": self.n_arc}

    @classmethod
    def from_json(cls, saved: dict) -> "HyperLayout":
        """The layout written by ``to_json``; ValueError for anything else (e.g. an older format)."""
        try:
            return cls(int(saved["n_dims"]), tuple(int(c) for c in saved["warped"]), bool(saved["noiseless"]),
                       int(saved["n_arc"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"saved GP layout {saved!r} is not in this version's format ({exc!r} missing or "
                             f"invalid); its chains cannot be continued") from None

    @property
    def log_noise(self) -> int | None:
        return None if self.noiseless else 2

    @property
    def log_lengthscales(self) -> slice:
        start = 2 if self.noiseless else 3
        return slice(start, start + self.n_dims)

    @property
    def log_alpha(self) -> slice | None:
        end = self.log_lengthscales.stop
        return slice(end, end + len(self.warped)) if self.warping else None

    @property
    def log_beta(self) -> slice | None:
        end = self.log_lengthscales.stop + len(self.warped)
        return slice(end, end + len(self.warped)) if self.warping else None

    @property
    def warp_switch(self) -> int | None:
        return self.log_lengthscales.stop + 2 * len(self.warped) if self.warping else None

    @property
    def rho(self) -> slice:
        start = self.log_lengthscales.stop if self.warp_switch is None else self.warp_switch + 1
        return slice(start, start + self.n_arc)

    @property
    def size(self) -> int:
        return self.rho.stop

    def widths(self) -> Tensor:
        """Slice bracket widths per coordinate, shape (size,).

        About 2.5 posterior standard deviations of each coordinate as seen in fits on the
        benchmark functions: narrower brackets cost step-out evaluations linearly, wider ones
        cost shrinkage evaluations only logarithmically, and every batched step waits for the
        slowest of the chains.
        """
        w = torch.full((self.size,), 3.0, dtype=torch.float64)
        w[0] = 1.5
        w[1] = 2.0
        if self.log_noise is not None:
            w[self.log_noise] = 4.0
        if self.warping:
            w[self.log_alpha] = 2.0
            w[self.log_beta] = 2.0
            w[self.warp_switch] = 1.0
        w[self.rho] = 0.5
        return w

    def pack(
        self,
        mean: float = 0.0,
        amp2: float = 1.0,
        noise: float = 1e-3,
        lengthscales: Tensor | float = 0.5,
        alpha: Tensor | float = 1.0,
        beta: Tensor | float = 1.0,
        rho: Tensor | float = 0.5,
        warped: bool = True,
    ) -> Tensor:
        """One state vector (size,) from natural-unit values (noise ignored when noiseless);
        alpha and beta are per warped column (length ``len(warped)``) or scalars; ``warped``
        sets the switch to the middle of its on (or off) interval."""
        theta = torch.zeros(self.size, dtype=torch.float64)
        theta[0] = mean
        theta[1] = math.log(amp2)
        if self.log_noise is not None:
            theta[self.log_noise] = math.log(noise)
        theta[self.log_lengthscales] = torch.log(torch.as_tensor(lengthscales, dtype=torch.float64))
        if self.warping:
            theta[self.log_alpha] = torch.log(torch.as_tensor(alpha, dtype=torch.float64))
            theta[self.log_beta] = torch.log(torch.as_tensor(beta, dtype=torch.float64))
            theta[self.warp_switch] = WARP_PROBABILITY / 2 if warped else WARP_SWITCH_OFF
        theta[self.rho] = torch.as_tensor(rho, dtype=torch.float64)
        return theta


@dataclass
class Hypers:
    """Hyperparameters of S samples in natural units where that is what the kernel uses."""

    mean: Tensor  # (S,)
    amp2: Tensor  # (S,)
    noise: Tensor  # (S,) noise variance (the fixed jitter when noiseless)
    log_lengthscales: Tensor  # (S, D)
    log_alpha: Tensor | None  # (S, W), W = len(warped); 0 (the identity) where warp_on is False
    log_beta: Tensor | None  # (S, W)
    warp_on: Tensor | None  # (S,) bool: whether the sample warps its inputs
    rho: Tensor  # (S, n_arc)
    warped: tuple[int, ...] = ()  # the input column of each of the W warp shapes

    @classmethod
    def unpack(cls, theta: Tensor, layout: HyperLayout) -> "Hypers":
        """From states (S, size), clamped into the support so that kernels stay finite; the warp
        shapes of samples whose switch is off are the identity's (log shape 0)."""
        noise = (
            torch.full_like(theta[:, 0], NOISELESS_JITTER)
            if layout.log_noise is None
            else torch.exp(theta[:, layout.log_noise].clamp(*LOG_NOISE_BOUNDS))
        )
        warp_on = theta[:, layout.warp_switch] < WARP_PROBABILITY if layout.warping else None

        def shape(coordinates: slice | None) -> Tensor | None:
            if coordinates is None:
                return None
            log_shape = theta[:, coordinates].clamp(-LOG_SHAPE_BOUND, LOG_SHAPE_BOUND)
            return torch.where(warp_on[:, None], log_shape, torch.zeros_like(log_shape))

        return cls(
            mean=theta[:, 0],
            amp2=torch.exp(theta[:, 1].clamp(-20.0, 20.0)),
            noise=noise,
            log_lengthscales=theta[:, layout.log_lengthscales].clamp(*LOG_LENGTHSCALE_BOUNDS),
            log_alpha=shape(layout.log_alpha),
            log_beta=shape(layout.log_beta),
            warp_on=warp_on,
            rho=theta[:, layout.rho].clamp(*RHO_BOUNDS),
            warped=layout.warped,
        )

    @functools.cached_property
    def warp(self) -> BetaWarp | None:
        """The samples' input warps, prepared once per set of samples; None without warping."""
        return None if self.log_alpha is None else BetaWarp(self.log_alpha, self.log_beta, self.warped)


@functools.lru_cache(maxsize=32)
def _prior_terms(layout: HyperLayout, lengthscale_prior: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per-coordinate pieces of the log prior, each of shape (size,): support bounds (lower,
    upper), the precision of the Gaussian terms (0 where none) and the slope of the linear terms.

    Everything but the horseshoe is a sum over coordinates of
    -precision u^2 / 2 + slope u on a box, so the prior of a batch of states costs a few
    whole-tensor operations.
    """
    lower = torch.full((layout.size,), -math.inf, dtype=torch.float64)
    upper = torch.full((layout.size,), math.inf, dtype=torch.float64)
    precision = torch.zeros(layout.size, dtype=torch.float64)
    slope = torch.zeros(layout.size, dtype=torch.float64)
    precision[:2] = 1.0  # mean ~ N(0, 1), log amp2 ~ N(0, 1)
    if layout.log_noise is not None:
        lower[layout.log_noise], upper[layout.log_noise] = LOG_NOISE_BOUNDS
        slope[layout.log_noise] = 1.0  # the Jacobian noise of the log transform
    lower[layout.log_lengthscales], upper[layout.log_lengthscales] = LOG_LENGTHSCALE_BOUNDS
    if lengthscale_prior == "top-hat":
        slope[layout.log_lengthscales] = 1.0  # uniform l is density proportional to l in log l
    else:
        # Log-normal on the length scale: a Gaussian in the sampled log coordinate (no Jacobian).
        precision[layout.log_lengthscales] = LOG_LENGTHSCALE_PRIOR_SD**-2
        slope[layout.log_lengthscales] = LOG_LENGTHSCALE_PRIOR_MEAN * LOG_LENGTHSCALE_PRIOR_SD**-2
    if layout.warping:
        for shapes in (layout.log_alpha, layout.log_beta):
            lower[shapes], upper[shapes] = -LOG_SHAPE_BOUND, LOG_SHAPE_BOUND
            precision[shapes] = 1.0 / LOG_SHAPE_PRIOR_VARIANCE  # log-normal: Gaussian in log shape
        lower[layout.warp_switch], upper[layout.warp_switch] = 0.0, 1.0
    lower[layout.rho], upper[layout.rho] = RHO_BOUNDS
    return lower, upper, precision, slope


def log_prior(theta: Tensor, layout: HyperLayout, lengthscale_prior: str = "log-normal") -> Tensor:
    """Log prior density of states (C, size) in the sampled coordinates; -inf outside the support.

    ``lengthscale_prior`` is one of ``LENGTHSCALE_PRIORS``.
    """
    lower, upper, precision, slope = _prior_terms(layout, lengthscale_prior)
    logp = theta @ slope - 0.5 * (theta**2 @ precision)
    if layout.log_noise is not None:
        # Horseshoe on the noise variance, approximated as log(1 + 3 (scale / noise)^2).
        u = theta[:, layout.log_noise]
        logp = logp + torch.log(torch.log1p(3.0 * HORSESHOE_SCALE**2 * torch.exp(-2.0 * u)))
    inside = ((theta >= lower) & (theta <= upper)).all(-1)
    return torch.where(inside, logp, torch.full_like(logp, -math.inf))
