"""Small exact models for tests of the Surrogate seam: an exact GP batched over length-scale
"samples" with joint fantasies, a fixed posterior, and a differentiable disk of feasibility."""
from __future__ import annotations

import torch
from torch import Tensor

from spearmint_nn.models.base import State, Surrogate, check_kind


class ExactGP(Surrogate):
    """Zero-mean GP, squared-exponential kernel, one row per length scale (the "samples").

    Targets may differ per row (fantasies): ``Y`` has shape (R, N) and ``lengthscales`` (R,).
    """

    def __init__(self, n_inputs: int = 1, seed: int | None = None, lengthscales=(0.15, 0.25), noise: float = 1e-4):
        self.n_inputs, self.noise = n_inputs, noise
        self.lengthscales = torch.as_tensor(lengthscales, dtype=torch.float64)
        self.X = torch.zeros(0, n_inputs, dtype=torch.float64)
        self.Y = torch.zeros(len(lengthscales), 0, dtype=torch.float64)
        self.n_fits = 0

    def _kernel(self, A: Tensor, B: Tensor) -> Tensor:
        sq = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)  # (M, N)
        return torch.exp(-0.5 * sq[None] / self.lengthscales[:, None, None] ** 2)  # (R, M, N)

    def fit(self, X: Tensor, y: Tensor) -> None:
        self.X = torch.as_tensor(X, dtype=torch.float64)
        self.Y = torch.as_tensor(y, dtype=torch.float64).expand(len(self.lengthscales), -1).clone()
        self.n_fits += 1

    def _factor(self) -> Tensor:
        K = self._kernel(self.X, self.X) + self.noise * torch.eye(self.X.shape[0], dtype=torch.float64)
        return torch.linalg.cholesky(K)

    def posterior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        L = self._factor()
        Ks = self._kernel(self.X, X)  # (R, N, M)
        alpha = torch.cholesky_solve(self.Y[..., None], L)  # (R, N, 1)
        mean = (Ks * alpha).sum(1)  # (R, M)
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        return mean, (1.0 - (v * v).sum(1)).clamp_min(1e-12)

    def fantasize(self, X_pending: Tensor, n_fantasies: int, generator: torch.Generator) -> "ExactGP":
        L = self._factor()
        Ks = self._kernel(self.X, X_pending)
        alpha = torch.cholesky_solve(self.Y[..., None], L)
        mean = (Ks * alpha).sum(1)  # (R, J)
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        J = X_pending.shape[0]
        cov = self._kernel(X_pending, X_pending) - v.transpose(1, 2) @ v + self.noise * torch.eye(J, dtype=torch.float64)
        chol = torch.linalg.cholesky(cov)  # (R, J, J)
        z = torch.randn(len(self.lengthscales), J, n_fantasies, generator=generator, dtype=torch.float64)
        draws = mean[..., None] + chol @ z  # (R, J, F)
        new = ExactGP(self.n_inputs, lengthscales=self.lengthscales.repeat_interleave(n_fantasies), noise=self.noise)
        new.X = torch.cat([self.X, X_pending])
        new.Y = torch.cat([self.Y.repeat_interleave(n_fantasies, 0), draws.transpose(1, 2).reshape(-1, J)], dim=1)
        return new

    def sample_f(self, X: Tensor, generator: torch.Generator) -> Tensor:
        row = int(torch.randint(len(self.lengthscales), (1,), generator=generator))
        mean, _ = self.posterior(X)
        L = self._factor()[row]
        v = torch.linalg.solve_triangular(L, self._kernel(self.X, X)[row], upper=False)
        cov = self._kernel(X, X)[row] - v.T @ v + 1e-9 * torch.eye(X.shape[0], dtype=torch.float64)
        return mean[row] + torch.linalg.cholesky(cov) @ torch.randn(X.shape[0], generator=generator, dtype=torch.float64)

    def state_dict(self) -> State:
        return {"kind": type(self).__name__, "n_inputs": self.n_inputs, "lengthscales": self.lengthscales,
                "X": self.X, "Y": self.Y, "n_fits": self.n_fits}

    def load_state_dict(self, state: State) -> None:
        check_kind(state, type(self).__name__)
        self.lengthscales, self.X, self.Y, self.n_fits = state["lengthscales"], state["X"], state["Y"], state["n_fits"]


class FixedPosterior:
    """A prescribed posterior (what acquisitions read of a Surrogate), for testing acquisitions at
    extreme values."""

    def __init__(self, mean: Tensor, var: Tensor):
        self.mean, self.var = mean, var

    def posterior(self, X: Tensor) -> tuple[Tensor, Tensor]:
        return self.mean, self.var


class DiskFeasibility:
    """P(feasible) = sigmoid((r0 - |x - 0.5|) / width), differentiable."""

    def __init__(self, radius: float = 0.3, width: float = 0.05):
        self.radius, self.width = radius, width

    def probability(self, X: Tensor) -> Tensor:
        return torch.sigmoid((self.radius - (X - 0.5).norm(dim=1)) / self.width)


def fitted_gp() -> ExactGP:
    X = torch.tensor([[0.1], [0.3], [0.55], [0.8], [0.95]], dtype=torch.float64)
    y = torch.tensor([0.5, -0.4, 0.2, -1.0, 0.3], dtype=torch.float64)
    gp = ExactGP(1, lengthscales=(0.1, 0.2, 0.3))
    gp.fit(X, y)
    return gp
