"""Slice sampling (Neal, 2003) of model hyperparameters, batched over independent chains.

Every model integrates its hyperparameters out by running C chains side by side: the log
density is evaluated for all chains in one call on a (C, P) tensor, so a chain step costs a
handful of batched evaluations instead of a Python loop over chains. A batched step waits for
the slowest chain, so the number of calls per coordinate is what a sweep costs; stepping out
evaluates both ends of every bracket in one (2C, P) call for that reason. Each sweep updates the P
coordinates in turn with stepping out and shrinkage, which needs no tuning beyond an initial
bracket width per coordinate.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

LogDensity = Callable[[Tensor], Tensor]


@torch.no_grad()
def slice_sweep(
    log_density: LogDensity,
    x: Tensor,
    widths: Tensor | float,
    generator: torch.Generator | None = None,
    max_step_out: int = 32,
    max_shrink: int = 64,
) -> tuple[Tensor, Tensor]:
    """One coordinate-wise slice-sampling sweep of every chain.

    Parameters
    ----------
    log_density : maps states (B, P) to (B,) unnormalised log densities (``-inf`` outside the
        support), for B = C (the chains) and B = 2 C (both bracket ends of every chain).
    x : current states, shape (C, P); must have finite log density.
    widths : initial bracket width per coordinate, scalar or shape (P,).

    Returns
    -------
    (x_new, log_density(x_new)), shapes (C, P) and (C,).
    """
    x = x.clone()
    C, P = x.shape
    w = torch.as_tensor(widths, dtype=x.dtype).expand(P)
    logp = log_density(x)
    if not torch.isfinite(logp).all():
        raise ValueError("slice_sweep: the starting state has a non-finite log density")

    def rand(*shape: int) -> Tensor:
        return torch.rand(*shape, generator=generator, dtype=x.dtype)

    def at(coord: int, values: Tensor) -> Tensor:
        """Log densities of x with column coord replaced by values (B * C,): B copies of x."""
        moved = x.repeat(len(values) // C, 1)
        moved[:, coord] = values
        return log_density(moved)

    for d in range(P):
        level = logp + torch.log(rand(C))
        left = x[:, d] - rand(C) * w[d]
        right = left + w[d]
        # Stepping out: widen each bracket until both ends are outside the slice. Both ends of
        # every chain go into one batched call, so a step costs one call, not two.
        for _ in range(max_step_out):
            ends = at(d, torch.cat([left, right])) > level.repeat(2)
            grow_left, grow_right = ends[:C], ends[C:]
            if not (grow_left.any() or grow_right.any()):
                break
            left = torch.where(grow_left, left - w[d], left)
            right = torch.where(grow_right, right + w[d], right)
        # Shrinkage: propose uniformly in the bracket, shrink towards x on rejection.
        new = x[:, d].clone()
        new_logp = logp.clone()
        todo = torch.ones(C, dtype=torch.bool)
        for _ in range(max_shrink):
            proposal = left + rand(C) * (right - left)
            lp = at(d, proposal)
            accept = todo & (lp > level)
            new = torch.where(accept, proposal, new)
            new_logp = torch.where(accept, lp, new_logp)
            todo = todo & ~accept
            if not todo.any():
                break
            below = proposal < x[:, d]
            left = torch.where(todo & below, proposal, left)
            right = torch.where(todo & ~below, proposal, right)
        # A chain that never accepted (numerically flat bracket) keeps its state.
        x[:, d] = new
        logp = new_logp
    return x, logp


def slice_sample(
    log_density: LogDensity,
    x0: Tensor,
    n_samples: int,
    burn_in: int = 0,
    thin: int = 1,
    widths: Tensor | float = 1.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Run C chains from x0 (C, P); return samples of shape (n_samples, C, P) after burn-in."""
    x = x0.clone()
    samples = []
    for i in range(burn_in + n_samples * thin):
        x, _ = slice_sweep(log_density, x, widths, generator)
        if i >= burn_in and (i - burn_in) % thin == thin - 1:
            samples.append(x.clone())
    return torch.stack(samples) if samples else x.new_zeros((0,) + tuple(x.shape))
