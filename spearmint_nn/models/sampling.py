"""Slice sampling (Neal, 2003) of model hyperparameters, batched over independent chains.

Every model integrates its hyperparameters out by running C chains side by side: the log
density is evaluated for the chains in one call on a (B, P) tensor, so a chain step costs a
handful of batched evaluations instead of a Python loop over chains. A batched step waits for
the slowest chain, so the number of calls per coordinate is what a sweep costs; stepping out
evaluates both ends of every bracket in one call for that reason. A call holds only the states
whose density is still needed (the ends still growing, the chains still shrinking: about half
of the 2C or C states of a call on a GP's hyperparameters), so a call costs what it decides. Each sweep updates the P
coordinates in turn with stepping out and shrinkage, which needs no tuning beyond an initial
bracket width per coordinate.
"""
from __future__ import annotations

import math
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
        support), for any B from 1 to 2 C (both bracket ends of every chain).
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

    def at(coord: int, values: Tensor, chains: Tensor) -> Tensor:
        """Log densities of the given chains' states (B,) with column coord replaced by values (B,)."""
        moved = x[chains]
        moved[:, coord] = values
        return log_density(moved)

    both = torch.arange(2 * C) % C  # the chain of each bracket end: the left ends, then the right
    for d in range(P):
        level = logp + torch.log(rand(C))
        left = x[:, d] - rand(C) * w[d]
        ends = torch.cat([left, left + w[d]])
        step = torch.cat([-w[d].expand(C), w[d].expand(C)])
        # Stepping out: widen each bracket until both ends are outside the slice. The ends of
        # every chain go into one batched call, so a step costs one call, not two; an end already
        # outside stays where it is and is not evaluated again.
        growing = torch.ones(2 * C, dtype=torch.bool)
        for _ in range(max_step_out):
            out = torch.nonzero(growing)[:, 0]
            growing[out] = at(d, ends[out], both[out]) > level[both[out]]
            if not growing.any():
                break
            ends = torch.where(growing, ends + step, ends)
        left, right = ends[:C], ends[C:]
        # Shrinkage: propose uniformly in the bracket, shrink towards x on rejection. Every chain
        # draws its proposal (the random stream does not depend on which chains are done), only
        # the chains still shrinking are evaluated.
        new = x[:, d].clone()
        new_logp = logp.clone()
        todo = torch.ones(C, dtype=torch.bool)
        for _ in range(max_shrink):
            proposal = left + rand(C) * (right - left)
            chains = torch.nonzero(todo)[:, 0]
            lp = torch.full_like(logp, -math.inf)
            lp[chains] = at(d, proposal[chains], chains)
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
