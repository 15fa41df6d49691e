"""Maximising an acquisition over the search space (and minimising a Thompson sample of f).

Two stages (the usual recipe of Spearmint and its successors):

1. *Global screening*: score a large scrambled Sobol set of candidates, plus Gaussian
   perturbations of "anchor" points (the incumbent: good points tend to sit near the best one
   found so far), all projected onto valid points (INT rounded, ENUM one-hot).
2. *Local refinement*: L-BFGS-B within the unit cube from the best few candidates, with
   gradients from torch autograd. All starts are refined together as one separable problem, so
   each iteration is a single batched acquisition call. Only the FLOAT and INT columns move;
   ENUM columns keep the start's one-hot choice. Refined points are projected and scored
   again, so the proposal is the best *valid* point seen, never an unrounded one.

A proposal never repeats an avoided point (finished, failed or pending jobs), compared after
projection. A finite space (INT and ENUM only) whose points are all taken is *exhausted*: then,
and only then, the best point is returned with ``repeat=True``. A :class:`KeepAway` (the failed
points of a deterministic objective) also rules out every point within its radius of one of its
points, unless that leaves no free candidate at all.

:func:`minimize_sample_path` shares the screening set: it draws f jointly at those candidates
from the posterior and returns the lowest free one (Thompson sampling, the exploratory member
of a batch).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from .acquisition import Acquisition, FeasibilityModel, log_probability_of_feasibility
from .candidates import (KeepAway, continuous_columns, default_n_candidates, free_mask, nearby_points, point_keys,
                         project, screening_set)
from ..models.base import Surrogate
from ..models.gp_posterior import ConditionedGP
from ..problem.space import Space

# A GP's joint draws (a Thompson sample, a batch chosen on draws) need a Cholesky factor of the
# candidates' joint covariance (M^3 / 3 flops) per hyperparameter sample: 1024 Sobol points (plus
# 256 near the anchors) cost about 0.1 s each.
GP_DRAW_CANDIDATES = 1024
_LOCAL_PER_START = 64  # neighbours scored around each refined point


@dataclass
class Proposal:
    """The chosen point: encoded row x (D,), its acquisition value, and whether it repeats one."""

    x: np.ndarray
    value: float
    repeat: bool = False


#: Rows of candidates scored at once. A GP's posterior at a block is a dozen elementwise passes
#: over (samples, training rows, block) tensors; blocks of 256 keep them within a core's cache,
#: where blocks of 4096 spilled to memory and scored 7000 candidates 2.5-3.7 times slower (10-D,
#: 50-250 training rows, 10 samples, 10 fantasies), with the same values up to rounding.
SCORE_BLOCK = 256


def _score(acquisition: Acquisition, X: np.ndarray, chunk: int = SCORE_BLOCK) -> np.ndarray:
    """Acquisition values at rows of X (M, dim), without gradients, in blocks of ``chunk`` rows."""
    return _in_blocks(lambda rows: acquisition(torch.as_tensor(X[rows], dtype=torch.float64)), len(X), chunk)


def _in_blocks(score: Callable[[slice], torch.Tensor], M: int, chunk: int = SCORE_BLOCK) -> np.ndarray:
    """``score`` of M rows, called without gradients on blocks of ``chunk`` rows; -inf where not finite."""
    out = np.empty(M)
    with torch.no_grad():
        for start in range(0, M, chunk):
            out[start : start + chunk] = score(slice(start, start + chunk)).numpy()
    return np.where(np.isfinite(out), out, -np.inf)


def _refine(
    acquisition: Acquisition, starts: np.ndarray, movable: np.ndarray, maxiter: int
) -> np.ndarray:
    """L-BFGS-B from each row of starts (K, dim), all starts at once.

    ``movable`` (K, dim) says which columns each start may move. A column that is free for some
    starts but not for others (an inactive conditional variable) gets a zero gradient where it is
    not movable; L-BFGS-B then never moves it, since its steps and curvature pairs stay zero there.
    """
    K = starts.shape[0]
    free = movable.any(axis=0)
    fixed = torch.as_tensor(starts, dtype=torch.float64)
    free_idx = torch.as_tensor(np.flatnonzero(free))
    gradient_mask = torch.as_tensor(movable[:, free], dtype=torch.float64)

    def negative_total(flat: np.ndarray) -> tuple[float, np.ndarray]:
        z = torch.as_tensor(flat.reshape(K, -1), dtype=torch.float64).requires_grad_(True)
        X = fixed.clone()
        X[:, free_idx] = z
        values = acquisition(X)
        # Starts are independent, so the sum's gradient w.r.t. each start is its own gradient.
        total = -torch.where(torch.isfinite(values), values, torch.zeros_like(values)).sum()
        (grad,) = torch.autograd.grad(total, z)
        return float(total.detach()), (grad * gradient_mask).numpy().ravel()

    x0 = starts[:, free].ravel()
    # L-BFGS-B's BLAS calls are tiny; with OpenBLAS's default thread pool each one wakes the pool,
    # and on a loaded machine (a shared login node) waiting for the woken threads made every
    # optimiser step cost milliseconds instead of ~50 us, several times the acquisition's own cost.
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize(
            negative_total, x0, jac=True, method="L-BFGS-B",
            bounds=[(0.0, 1.0)] * x0.size, options={"maxiter": maxiter},
        )
    refined = starts.copy()
    refined[:, free] = result.x.reshape(K, -1)
    return refined


def minimize_sample_path(
    model: Surrogate,
    space: Space,
    *,
    avoid: np.ndarray,
    anchors: np.ndarray | None = None,
    feasibility: Sequence[FeasibilityModel] = (),
    n_candidates: int = GP_DRAW_CANDIDATES,
    seed: int | None = None,
    keep_away: KeepAway | None = None,
) -> np.ndarray | None:
    """Thompson sampling: the free candidate where one joint posterior draw of f is lowest.

    The candidates are those of :func:`maximize`'s screening (Sobol plus the anchors'
    neighbourhoods), without gradient refinement: a GP's draw exists only at the points it was
    drawn at. With feasibility models, candidates less likely feasible than not are dropped
    (unless that drops all); so are those inside ``keep_away`` (as in :func:`maximize`). Returns
    the encoded point (dim,), or None when every candidate is taken (then the caller's
    acquisition decides).
    """
    rng = np.random.default_rng(seed)
    candidates, fresh, _ = screening_set(space, set(point_keys(avoid)), anchors, n_candidates, rng, keep_away)
    candidates = candidates[fresh]
    if not len(candidates):
        return None
    X = torch.as_tensor(candidates, dtype=torch.float64)
    generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
    values = model.sample_f(X, generator).numpy()
    if feasibility:
        with torch.no_grad():
            likely = (log_probability_of_feasibility(feasibility, X) >= math.log(0.5)).numpy()
        if likely.any():
            values = np.where(likely, values, np.inf)
    return candidates[int(np.argmin(values))]


def maximize(
    acquisition: Acquisition,
    space: Space,
    *,
    avoid: np.ndarray | None = None,
    anchors: np.ndarray | None = None,
    n_candidates: int | None = None,
    n_starts: int = 5,
    maxiter: int = 100,
    seed: int | None = None,
    keep_away: KeepAway | None = None,
    screened: tuple[np.ndarray, np.ndarray] | None = None,
) -> Proposal:
    """The valid point of the space with the highest acquisition value that is not in ``avoid``.

    Parameters
    ----------
    acquisition : the score to maximise.
    space : the search space (defines projection and the continuous columns).
    avoid : encoded points (K, dim) not to propose again (finished, failed and pending jobs).
    anchors : encoded points (A, dim) whose neighbourhoods are searched too (the incumbent).
    n_candidates : Sobol screening set size; :func:`default_n_candidates` when None.
    n_starts : how many of the best distinct candidates gradient refinement starts from.
    maxiter : L-BFGS-B iterations.
    seed : seed of the Sobol scrambling and of the anchor perturbations.
    keep_away : neighbourhoods not to propose in (failed points of a deterministic objective);
        ignored only when every free candidate lies inside them.
    screened : free candidates (K, dim) already scored, with their scores (K,), instead of a
        screening set of its own (a batch's, :class:`BatchScreening`); ignored when empty.
    """
    rng = np.random.default_rng(seed)
    avoid_keys = set(point_keys(avoid if avoid is not None else np.zeros((0, space.dim))))
    if screened is not None and len(screened[0]):
        candidates, values = screened
    else:
        candidates, fresh, keep_away = screening_set(
            space, avoid_keys, anchors, n_candidates or default_n_candidates(space.dim), rng, keep_away)
        if not fresh.any():
            # Every valid point has been tried (or, in a huge finite space, every candidate drawn):
            # the best known point is the honest answer, flagged as a repeat.
            values = _score(acquisition, candidates)
            best = int(np.argmax(values))
            return Proposal(candidates[best], float(values[best]), repeat=True)
        candidates = candidates[fresh]
        values = _score(acquisition, candidates)
    order = np.argsort(-values)
    pool_X, pool_v = [candidates[order[: n_starts]]], [values[order[: n_starts]]]

    starts = candidates[order[:n_starts]]
    # Inactive conditional variables are not optimised: only active FLOAT and INT columns move.
    movable = continuous_columns(space) & space.active_mask(starts)
    if movable.any():
        refined = project(space, _refine(acquisition, starts, movable, maxiter))
        # Where the refined optimum projects onto a taken point (a rounded INT, a pending job),
        # the best free point is usually one of its neighbours.
        local = np.concatenate([refined, nearby_points(space, refined, _LOCAL_PER_START, rng)])
        local = local[free_mask(local, avoid_keys, keep_away)]
        if len(local):
            pool_X.append(local)
            pool_v.append(_score(acquisition, local))
    pool_X_all, pool_v_all = np.concatenate(pool_X), np.concatenate(pool_v)
    best = int(np.argmax(pool_v_all))
    return Proposal(pool_X_all[best], float(pool_v_all[best]))


#: The most memory a batch's screening set may keep of a GP's posterior (its (S, N, M) solves);
#: past it (thousands of observations) each member screens a set of its own, as a single proposal does.
BATCH_SCREENING_BYTES = 2**30


class BatchScreening:
    """One screening set for every member of a batch chosen point by point, scored from a GP's
    posterior kept from member to member.

    Each member of a batch that starts with nothing running is the acquisition's maximiser under
    fantasies of the jobs in flight and of the members before it. Screening a set of its own,
    each member conditioned the model anew and scored thousands of candidates against all N + J
    rows, O(M (N + J)^2) a member: most of a batch of 50's time. On one set for the batch the
    model's solves against the observed rows are made once and each member adds its pending
    point as one more row (:class:`~spearmint_nn.models.gp_posterior.ScreenedPosterior`); the
    members still refine their own maximiser by gradient, and a chosen point leaves the set.

    ``scores`` returns None for the batch's first member, which screens a set of its own as a
    single proposal does (a call whose other members come from joint draws is as it was), and
    where the shared set does not apply: a model without that posterior (DNGO chooses a batch on
    joint draws instead), an acquisition that reads no objective posterior, or a solve larger than
    :data:`BATCH_SCREENING_BYTES`. It draws the set on the second member's call, with that
    member's anchors and seed.
    """

    def __init__(self) -> None:
        self.members = 0
        self.candidates: np.ndarray | None = None
        self._posterior = None  # the model's ScreenedPosterior at the candidates

    def scores(self, acquisition: Acquisition, model: Surrogate, fantasy: Surrogate, X_pending: torch.Tensor,
               space: Space, *, avoid: np.ndarray, anchors: np.ndarray | None, n_candidates: int | None, seed: int,
               keep_away: KeepAway | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The free candidates and their scores under ``acquisition``, whose objective model is
        ``fantasy``: ``model`` conditioned on fantasies of the pending points ``X_pending`` (J, D)
        (``model`` itself with J = 0); or None where this does not apply."""
        self.members += 1
        if self.members == 1 or not (isinstance(model, ConditionedGP) and acquisition.scores_posterior):
            return None
        avoid_keys = set(point_keys(avoid))
        if self.candidates is None:
            n_candidates = n_candidates or default_n_candidates(space.dim)
            if model.screening_bytes(n_candidates) > BATCH_SCREENING_BYTES:
                return None
            candidates, fresh, _ = screening_set(space, avoid_keys, anchors, n_candidates,
                                                 np.random.default_rng(seed), keep_away)
            self.candidates = candidates[fresh]
        posterior = self._posterior
        added = 0 if posterior is None else len(posterior.X_pending)
        if (posterior is None or posterior.model is not model or added > len(X_pending)
                or not torch.equal(posterior.X_pending, X_pending[:added])):
            posterior = self._posterior = model.screen(torch.as_tensor(self.candidates, dtype=torch.float64))
            added = 0
        posterior.add_pending(X_pending[added:])
        whitened = fantasy.whitened_fantasies if len(X_pending) else None
        values = _in_blocks(lambda rows: acquisition.given_posterior(
            torch.as_tensor(self.candidates[rows], dtype=torch.float64), *posterior.posterior(whitened, rows)),
            len(self.candidates))
        free = free_mask(self.candidates, avoid_keys, keep_away)
        if not free.any():
            free = free_mask(self.candidates, avoid_keys)
        return self.candidates[free], values[free]
