"""The DNGO basis network, shared by the objective model and the constraint classifier.

Snoek et al. (2015), section 3: three fully connected tanh layers of 50 units and a linear
output, trained to a MAP point estimate. The last hidden layer's activations are the basis
functions phi(x) on which a Bayesian linear model (regression or classification) is placed.

Optionally the network starts with an input warp (Snoek et al. 2014, trained here rather than
sampled): each warped column goes through a Kumaraswamy CDF whose two log shapes are parameters
of the network, initialised at the identity and trained with the weights.

Optionally phi(x) also carries random Fourier features sqrt(2 / M) cos(x W + b) (Rahimi & Recht,
2007): m for each of k length scales l_j, their columns of W ~ N(0, 1 / l_j^2) and b ~ U(0, 2 pi)
drawn once and fixed, M = m k, so that phi phi^T approximates the average of the k RBF kernels. The
network is trained without them (its output reads the tanh layer alone); they only widen the
regression's basis. Why: the trained features extrapolate with every direction pinned by the data,
so far from the data the regression has no variance left, and a run parks in a local basin; the
fixed features give it a GP-like prior there (test_dngo.py, models/DESIGN.md). Why two length scales: 0.4
alone leaves Hartmann6's narrow basins without variance 0.1 from the data, 0.2 alone makes Branin
runs lock onto faces.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .warping import LOG_SHAPE_BOUND, kumaraswamy_cdf


class BasisNetwork(nn.Module):
    """tanh MLP  x (N, D) -> [warp] -> phi(x) (N, width) -> linear output (N,).

    Parameters
    ----------
    n_inputs : D, encoded input dimension.
    width : units per hidden layer (50 in the paper).
    depth : number of hidden layers (3 in the paper).
    warped_columns : the input columns to warp (W of them; none by default). Their log shapes
        ``log_warp_a``, ``log_warp_b`` (W,) are trainable parameters, clamped to
        +-LOG_SHAPE_BOUND when used.
    fourier_features : m, the number of random Fourier features per length scale appended to
        phi(x) (none by default); their frequencies ``fourier_weights`` (D, M) and phases
        ``fourier_phases`` (M,), M = m k, are buffers, saved with the weights.
    fourier_length_scales : the k length scales l_j, in units of the unit cube (ignored with m = 0).
    generator : draws the Fourier features (the global generator if None).
    """

    def __init__(self, n_inputs: int, width: int = 50, depth: int = 3, warped_columns: Sequence[int] = (),
                 fourier_features: int = 0, fourier_length_scales: Sequence[float] = (0.4,),
                 generator: torch.Generator | None = None):
        super().__init__()
        layers: list[nn.Module] = []
        size = n_inputs
        for _ in range(depth):
            layers += [nn.Linear(size, width), nn.Tanh()]
            size = width
        self.hidden = nn.Sequential(*layers)
        self.output = nn.Linear(width, 1)
        self.n_inputs, self.width, self.depth = n_inputs, width, depth
        self.warped_columns = tuple(int(c) for c in warped_columns)
        if self.warped_columns:
            self.log_warp_a = nn.Parameter(torch.zeros(len(self.warped_columns)))
            self.log_warp_b = nn.Parameter(torch.zeros(len(self.warped_columns)))
        else:  # no entries in state_dict: an unwarped network saves what it always saved
            self.register_parameter("log_warp_a", None)
            self.register_parameter("log_warp_b", None)
        self.fourier_features = int(fourier_features)
        # A basis without Fourier features has no length scales (and saves none).
        scales = fourier_length_scales if self.fourier_features else ()
        self.fourier_length_scales = tuple(float(scale) for scale in scales)
        if self.fourier_features:
            total = self.fourier_features * len(self.fourier_length_scales)
            frequencies = torch.randn(n_inputs, total, generator=generator, dtype=torch.float64)
            phases = torch.rand(total, generator=generator, dtype=torch.float64)
            column_scales = torch.tensor(self.fourier_length_scales, dtype=torch.float64).repeat_interleave(
                self.fourier_features)
            self.register_buffer("fourier_weights", frequencies / column_scales)
            self.register_buffer("fourier_phases", 2.0 * math.pi * phases)
        else:
            self.register_buffer("fourier_weights", None)
            self.register_buffer("fourier_phases", None)

    def warp_parameters(self) -> list[nn.Parameter]:
        """The trainable log warp shapes, [log_warp_a, log_warp_b]; empty without warped columns."""
        return [p for p in (self.log_warp_a, self.log_warp_b) if p is not None]

    def warp_shapes(self) -> tuple[Tensor, Tensor]:
        """The warp's shapes (a, b), each (W,), within the bounds the GP's warps have."""
        return (torch.exp(self.log_warp_a.clamp(-LOG_SHAPE_BOUND, LOG_SHAPE_BOUND)),
                torch.exp(self.log_warp_b.clamp(-LOG_SHAPE_BOUND, LOG_SHAPE_BOUND)))

    def warp(self, X: Tensor) -> Tensor:
        """X (N, D) with the warped columns through their CDFs; X itself without warped columns."""
        if not self.warped_columns:
            return X
        columns = torch.tensor(self.warped_columns, device=X.device)
        a, b = self.warp_shapes()
        return X.index_copy(1, columns, kumaraswamy_cdf(X[:, columns], a, b))

    def features(self, X: Tensor) -> Tensor:
        """phi(X): the last hidden layer, then the Fourier features; shape (N, width + M)."""
        hidden = self.hidden(self.warp(X))
        if not self.fourier_features:
            return hidden
        total = self.fourier_weights.shape[1]
        fourier = math.sqrt(2.0 / total) * torch.cos(X @ self.fourier_weights + self.fourier_phases)
        return torch.cat([hidden, fourier], dim=1)

    def forward(self, X: Tensor) -> Tensor:
        """Network output from the last hidden layer, shape (N,)."""
        return self.output(self.hidden(self.warp(X))).squeeze(-1)
