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

import itertools
import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch
from scipy.optimize import minimize
from scipy.stats import qmc
from threadpoolctl import threadpool_limits

from .acquisition import Acquisition, FeasibilityModel, log_probability_of_feasibility
from ..models.base import Surrogate
from ..problem.space import Space

MAX_ENUMERATED = 100_000  # finite spaces up to this size are listed exhaustively when needed
# A GP's joint draws (a Thompson sample, a batch chosen on draws) need a Cholesky factor of the
# candidates' joint covariance (M^3 / 3 flops) per hyperparameter sample: 1024 Sobol points (plus
# 256 near the anchors) cost about 0.1 s each.
GP_DRAW_CANDIDATES = 1024
_KEY_DECIMALS = 9  # encoded rows equal to this many decimals are the same point
_NEIGHBOURHOOD_SCALES = (0.003, 0.01, 0.03, 0.1)
_LOCAL_PER_START = 64  # neighbours scored around each refined point


@dataclass(frozen=True)
class KeepAway:
    """Encoded points (K, dim) whose neighbourhoods are not proposed: a point with ``cap`` or
    more of them within Euclidean distance ``radius`` (in the unit cube) is ruled out. With cap
    1 every neighbourhood is (the failed points of a deterministic objective); a larger cap rules
    out only crowded places (the jobs in flight of a large batch,
    :func:`~spearmint_nn.search.batch_draws.crowding`). ``also``: a second rule that holds too."""

    points: np.ndarray
    radius: float
    cap: int = 1
    also: "KeepAway | None" = None

    def neighbours(self, X: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Integer (M,): how many of the points lie within ``radius`` of each row of X (M, dim)."""
        X = np.asarray(X, dtype=float)
        out = np.zeros(len(X), dtype=int)
        points = np.asarray(self.points, dtype=float).reshape(-1, X.shape[1])
        if not len(points):
            return out
        for start in range(0, len(X), chunk):
            block = X[start : start + chunk]
            squared = ((block**2).sum(1)[:, None] + (points**2).sum(1)[None] - 2.0 * block @ points.T)
            out[start : start + chunk] = (squared < self.radius**2).sum(axis=1)
        return out

    def allows(self, X: np.ndarray) -> np.ndarray:
        """Boolean (M,): which rows of X (M, dim) have fewer than ``cap`` points within ``radius``
        (and pass ``also``)."""
        allowed = self.neighbours(X) < self.cap
        return allowed if self.also is None else allowed & self.also.allows(X)


def both(first: KeepAway | None, second: KeepAway | None) -> KeepAway | None:
    """The rule that rules out what either rules out (None: no rule)."""
    if first is None or second is None:
        return second if first is None else first
    return replace(first, also=both(first.also, second))


def free_mask(X: np.ndarray, avoid_keys: set, keep_away: KeepAway | None = None) -> np.ndarray:
    """Boolean (M,): rows of X (M, dim) that repeat no avoided point and lie outside ``keep_away``."""
    fresh = np.fromiter((key not in avoid_keys for key in point_keys(X)), dtype=bool, count=len(X))
    return fresh if keep_away is None else fresh & keep_away.allows(X)


@dataclass
class Proposal:
    """The chosen point: encoded row x (D,), its acquisition value, and whether it repeats one."""

    x: np.ndarray
    value: float
    repeat: bool = False


def default_n_candidates(dim: int) -> int:
    """Sobol candidates for a space of ``dim`` encoded columns: 2000 + 500 per column, at most 10000."""
    return min(10_000, 2000 + 500 * dim)


def point_keys(X: np.ndarray) -> list[tuple]:
    """Hashable identities of the encoded points X (M, dim), robust to encode/decode round-off.

    All rows are rounded at once: per-row numpy calls would cost more than scoring the candidates.
    """
    return [tuple(row) for row in (np.round(np.asarray(X, dtype=float), _KEY_DECIMALS) + 0.0).tolist()]


def point_key(row: np.ndarray) -> tuple:
    """Hashable identity of one encoded point (dim,); see :func:`point_keys`."""
    return point_keys(np.asarray(row, dtype=float)[None])[0]


def continuous_columns(space: Space) -> np.ndarray:
    """Boolean mask (dim,) of the FLOAT and INT value columns, the ones gradient refinement may move.

    ENUM one-hot columns and the relevance indicators of conditional variables stay fixed: both
    are discrete, and projection sets them.
    """
    mask = np.zeros(space.dim, dtype=bool)
    for var in space.variables:
        if var.type != "ENUM":
            mask[space.value_columns(var.name)] = True
    return mask


def space_size(space: Space) -> float:
    """Number of distinct valid points; ``math.inf`` when any FLOAT is present."""
    size = 1
    for var in space.variables:
        if var.type == "FLOAT":
            return math.inf
        choices = len(var.options) if var.type == "ENUM" else int(var.max) - int(var.min) + 1
        size *= choices**var.size
    return size


def enumerate_space(space: Space) -> np.ndarray:
    """Every valid point of a finite space, encoded, shape (space_size, dim)."""
    per_element = []
    for var in space.variables:
        if var.type == "ENUM":
            values = [list(var.options)] * var.size
        else:
            values = [list(range(int(var.min), int(var.max) + 1))] * var.size
        per_element.append((var, values))
    columns = [v for _, values in per_element for v in values]
    params = []
    for combo in itertools.product(*columns):
        point, i = {}, 0
        for var, values in per_element:
            point[var.name] = list(combo[i : i + len(values)])
            i += len(values)
        params.append(point)
    return space.encode(params)


def project(space: Space, X: np.ndarray) -> np.ndarray:
    """Snap rows (M, dim) onto valid points; a cube of FLOATs only needs clipping (the fast path
    matters: the screening set is projected on every suggestion)."""
    if all(var.type == "FLOAT" for var in space.variables):
        return np.clip(X, 0.0, 1.0)
    return space.project(X)


def _score(acquisition: Acquisition, X: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """Acquisition values at rows of X (M, dim), without gradients, in chunks to bound memory."""
    out = np.empty(X.shape[0])
    with torch.no_grad():
        for start in range(0, X.shape[0], chunk):
            block = torch.as_tensor(X[start : start + chunk], dtype=torch.float64)
            out[start : start + chunk] = acquisition(block).numpy()
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


def _neighbours(space: Space, centres: np.ndarray, per_centre: int, rng: np.random.Generator) -> np.ndarray:
    """Projected Gaussian perturbations of each centre (C, dim), at scales from "next door"
    (a neighbouring INT value, a nearby FLOAT) to "same region"; shape (C * per_centre, dim)."""
    scales = rng.choice(_NEIGHBOURHOOD_SCALES, size=(len(centres), per_centre, 1))
    steps = scales * rng.standard_normal((len(centres), per_centre, space.dim))
    return project(space, np.clip(centres[:, None, :] + steps, 0.0, 1.0).reshape(-1, space.dim))


def screening_set(
    space: Space, avoid_keys: set, anchors: np.ndarray | None, n_candidates: int, rng: np.random.Generator,
    keep_away: KeepAway | None = None,
) -> tuple[np.ndarray, np.ndarray, KeepAway | None]:
    """Candidate points (M, dim), a mask (M,) of the free ones (:func:`free_mask`), and the
    keep-away in force: ``keep_away``, or None where it would leave no candidate free (a small
    finite space whose free points all sit next to failures), so that the caller's later
    points follow the same rule.

    A scrambled Sobol set of n_candidates points plus a quarter as many around the anchors, all
    projected; a small finite space is listed whole instead, and so is any finite space whose
    candidates are all taken.
    """
    size = space_size(space)
    if size <= MAX_ENUMERATED and size <= n_candidates:
        candidates = enumerate_space(space)  # small finite space: score every point
    else:
        m = math.ceil(math.log2(n_candidates))
        sobol = qmc.Sobol(d=space.dim, scramble=True, seed=rng).random_base2(m)[:n_candidates]
        parts = [project(space, sobol)]
        if anchors is not None and len(anchors):
            per_anchor = max(1, n_candidates // (4 * len(anchors)))
            parts.append(_neighbours(space, np.atleast_2d(anchors), per_anchor, rng))
        candidates = np.unique(np.concatenate(parts), axis=0)
    fresh = free_mask(candidates, avoid_keys)
    if not fresh.any() and size <= MAX_ENUMERATED:
        candidates = enumerate_space(space)
        fresh = free_mask(candidates, avoid_keys)
    if keep_away is not None:
        outside = fresh & keep_away.allows(candidates)
        if outside.any():
            return candidates, outside, keep_away
    return candidates, fresh, None


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
    """
    rng = np.random.default_rng(seed)
    avoid_keys = set(point_keys(avoid if avoid is not None else np.zeros((0, space.dim))))
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
        local = np.concatenate([refined, _neighbours(space, refined, _LOCAL_PER_START, rng)])
        local = local[free_mask(local, avoid_keys, keep_away)]
        if len(local):
            pool_X.append(local)
            pool_v.append(_score(acquisition, local))
    pool_X_all, pool_v_all = np.concatenate(pool_X), np.concatenate(pool_v)
    best = int(np.argmax(pool_v_all))
    return Proposal(pool_X_all[best], float(pool_v_all[best]))
