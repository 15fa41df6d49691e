"""Many points at once from joint posterior draws: greedy Monte Carlo q-EI on a candidate set.

With hundreds of jobs in flight, choosing point by point (fantasise the pending jobs, maximise
EI, repeat) costs one model conditioning and one acquisition maximisation per point. A model
that draws f jointly at thousands of points for the cost of one pass over them (DNGO: one basis
pass, then one output-weight draw per path, exact for its Bayesian linear regression; its
``sample_paths``) lets the whole batch be chosen on one set of draws:

    P joint draws f_1 .. f_P of f at the candidates C, the observed points and the pending points;
    under draw m the incumbent is b_m = min of f_m over the observed and the pending points;
    the next point is the x in C with the largest mean_m max(0, b_m - f_m(x)) * P(feasible at x),
    the gain in Monte Carlo q-EI of adding x to the batch (the sequential greedy q-EI of
    Ginsbourger et al. 2010 and BoTorch, on a fixed candidate set); then b_m = min(b_m, f_m(x)),
    and so on.

Each step is one pass over the (P, M) draws, so a batch of 100 costs about as much as scoring
the candidates once. Pending jobs enter through the same joint draws as the candidates, so a
point next to a pending job gains little under every draw: the batch spreads where the model
is unsure and piles up where it is sure, as q-EI does. Candidates are a scrambled Sobol set plus
perturbations of the best observations (:func:`~spearmint_nn.search.candidates.screening_set`),
not refined by gradient: the resolution near good points comes from those perturbations.

The incumbent is each draw's own best at the observed points (the noisy EI of Letham et al. 2019,
BoTorch's qNEI), not the best observed value: DNGO's regression leaves part of the data to its
noise term 1/beta, so the observed best can lie below every draw of f, and a gain measured
against it compares a draw with a value the draw does not contain. What still limits large
batches is the draws' agreement: after the log output transform the best observation is a
sharp dip that every draw keeps, and from a few hundred evaluations on no candidate gains under
any draw (Hartmann6, batches of 200), so a batch is the lowest posterior means
(benchmarks/RESULTS.md of e90882b, "Why large batches stay in one basin").
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from ..models.base import PathSampler
from .acquisition import FeasibilityModel, log_probability_of_feasibility
from .candidates import KeepAway, crowding, point_keys, screening_set
from ..problem.space import Space

#: Joint draws of f a batch is chosen on: enough that a gain of 1% of the spread is resolved.
DEFAULT_PATHS = 256


class CandidateCrowding:
    """Which candidates (M, dim) a :func:`crowding` rule leaves open, kept up to date as batch
    members join the jobs in flight (:meth:`add`: one pass over the candidates)."""

    def __init__(self, candidates: np.ndarray, rule: KeepAway):
        self.candidates, self.rule = candidates, rule
        self.neighbours = rule.neighbours(candidates)

    @property
    def open(self) -> Tensor:
        """Boolean (M,): the candidates with fewer than the rule's ``cap`` jobs near them."""
        return torch.as_tensor(self.neighbours < self.rule.cap)

    def add(self, index: int) -> None:
        """Count the candidate ``index`` as a job in flight."""
        self.neighbours += replace(self.rule, points=self.candidates[index][None]).neighbours(self.candidates)


def greedy_q_ei(paths: Tensor, incumbent: Tensor, q: int, log_feasibility: Tensor | None = None,
                thompson_steps: Sequence[int] = (), crowded: CandidateCrowding | None = None) -> list[int]:
    """Indices of q distinct candidates chosen greedily by their gain in Monte Carlo q-EI.

    Parameters
    ----------
    paths : (P, M) joint draws of f at the M candidates (standardised units, minimised).
    incumbent : (P,) the best value under each draw before the batch (observed and pending).
    q : how many to choose, at most M.
    log_feasibility : (M,) log P(every constraint satisfied) per candidate, or None.
    thompson_steps : the steps (0-based) whose point is instead the lowest free candidate of
        draw ``step mod P``, a Thompson sample (with constraints, among the candidates at least
        as likely feasible as not, where there are any): q-EI piles a batch into the basin the
        model is sure of, a Thompson sample explores in proportion to the chance that a region
        holds the minimum (the optimizer's ``thompson_every``).
    crowded : the candidates' crowding (:func:`crowding`), updated with each choice; a crowded
        candidate is chosen only when every free one is.

    Where no candidate gains under any draw (a search sure of its optimum), the one whose draws
    lie least above the incumbent on average is taken, so the batch still sits where f is lowest.
    """
    best = incumbent.clone()
    taken = torch.zeros(paths.shape[1], dtype=torch.bool)
    weight = torch.zeros(paths.shape[1], dtype=paths.dtype) if log_feasibility is None else log_feasibility
    likely = weight >= math.log(0.5)
    chosen: list[int] = []
    for step in range(min(q, paths.shape[1])):
        closed = taken
        if crowded is not None and (crowded.open & ~taken).any():
            closed = taken | ~crowded.open
        if step in thompson_steps:
            excluded = closed | ~likely if (likely & ~closed).any() else closed
            index = int(torch.argmin(paths[step % len(paths)].masked_fill(excluded, torch.inf)))
        else:
            shortfall = best[:, None] - paths  # (P, M), > 0 where the candidate improves under a draw
            gain = shortfall.clamp_min(0.0).mean(0) * weight.exp()
            score = gain if (gain[~closed] > 0).any() else shortfall.mean(0) + weight
            index = int(torch.argmax(score.masked_fill(closed, -torch.inf)))
        chosen.append(index)
        taken[index] = True
        best = torch.minimum(best, paths[:, index])
        if crowded is not None:
            crowded.add(index)
    return chosen


def choose_batch(
    model: PathSampler,
    space: Space,
    q: int,
    *,
    observed: np.ndarray,
    avoid: np.ndarray,
    pending: np.ndarray,
    anchors: np.ndarray,
    feasibility: Sequence[FeasibilityModel] = (),
    n_candidates: int,
    n_paths: int = DEFAULT_PATHS,
    thompson_every: int = 0,
    crowding_share: float = 0.0,
    seed: int,
    keep_away: KeepAway | None = None,
) -> np.ndarray:
    """Up to q free valid points (encoded rows, (k, dim), k <= q; fewer only when fewer free
    candidates exist) chosen by :func:`greedy_q_ei` on ``n_paths`` joint draws of the model.

    ``observed`` (N, dim) the finished feasible points, ``pending`` (J, dim) the jobs in flight:
    their draws set each draw's incumbent; ``avoid`` (K, dim) the taken points (finished,
    failed, pending); ``anchors`` (A, dim) the points whose neighbourhoods are screened too.
    Every ``thompson_every``-th job (by position among all jobs, the taken ones first, as in
    ``Optimizer.propose``; 0: none) is a Thompson sample (:func:`greedy_q_ei`). With more than
    ``CROWDING_MIN_IN_FLIGHT`` jobs in flight, no place is given more than ``crowding_share`` of
    them while another is open (:func:`crowding`).
    """
    rng = np.random.default_rng(seed)
    candidates, free, _ = screening_set(space, set(point_keys(avoid)), anchors, n_candidates, rng, keep_away)
    candidates = candidates[free]
    if not len(candidates):
        return candidates
    # With constraints a pending job may turn out infeasible: it does not lower the incumbent.
    incumbent_rows = observed if feasibility else np.concatenate([observed, pending.reshape(-1, space.dim)])
    X = torch.as_tensor(np.concatenate([candidates, incumbent_rows]), dtype=torch.float64)
    generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
    paths = model.sample_paths(X, n_paths, generator)
    at_candidates = paths[:, :len(candidates)]
    incumbent = paths[:, len(candidates):].min(1).values
    log_feasibility = None
    if feasibility:
        with torch.no_grad():
            log_feasibility = log_probability_of_feasibility(feasibility, X[:len(candidates)])
    thompson_steps = [j for j in range(q) if thompson_every and (len(avoid) + j + 1) % thompson_every == 0]
    rule = crowding(space, pending, q, crowding_share)
    crowded = CandidateCrowding(candidates, rule) if rule is not None else None
    return candidates[greedy_q_ei(at_candidates, incumbent, q, log_feasibility, thompson_steps, crowded)]
