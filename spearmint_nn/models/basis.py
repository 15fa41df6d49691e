"""The DNGO basis network, shared by the objective model and the constraint classifier.

Snoek et al. (2015), section 3: three fully connected tanh layers of 50 units and a linear
output, trained to a MAP point estimate. The last hidden layer's activations are the basis
functions phi(x) on which a Bayesian linear model (regression or classification) is placed.

Optionally the network starts with an input warp (Snoek et al. 2014, trained here rather than
sampled): each warped column goes through a Kumaraswamy CDF whose two log shapes are parameters
of the network, initialised at the identity and trained with the weights.
"""
from __future__ import annotations

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
    """

    def __init__(self, n_inputs: int, width: int = 50, depth: int = 3, warped_columns: Sequence[int] = ()):
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
        """Last hidden layer phi(X), shape (N, width)."""
        return self.hidden(self.warp(X))

    def forward(self, X: Tensor) -> Tensor:
        """Network output, shape (N,)."""
        return self.output(self.features(X)).squeeze(-1)
