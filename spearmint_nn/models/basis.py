"""The DNGO basis network, shared by the objective model and the constraint classifier.

Snoek et al. (2015), section 3: three fully connected tanh layers of 50 units and a linear
output, trained to a MAP point estimate. The last hidden layer's activations are the basis
functions phi(x) on which a Bayesian linear model (regression or classification) is placed.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn


class BasisNetwork(nn.Module):
    """tanh MLP  x (N, D) -> phi(x) (N, width) -> linear output (N,).

    Parameters
    ----------
    n_inputs : D, encoded input dimension.
    width : units per hidden layer (50 in the paper).
    depth : number of hidden layers (3 in the paper).
    """

    def __init__(self, n_inputs: int, width: int = 50, depth: int = 3):
        super().__init__()
        layers: list[nn.Module] = []
        size = n_inputs
        for _ in range(depth):
            layers += [nn.Linear(size, width), nn.Tanh()]
            size = width
        self.hidden = nn.Sequential(*layers)
        self.output = nn.Linear(width, 1)
        self.n_inputs, self.width, self.depth = n_inputs, width, depth

    def features(self, X: Tensor) -> Tensor:
        """Last hidden layer phi(X), shape (N, width)."""
        return self.hidden(X)

    def forward(self, X: Tensor) -> Tensor:
        """Network output, shape (N,)."""
        return self.output(self.features(X)).squeeze(-1)
