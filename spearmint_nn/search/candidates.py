"""The candidates of a proposal, and the rules of where one may go.

The space's geometry as every stage of the search uses it: a point's identity (:func:`point_key`,
robust to encode/decode round-off, so the history, the pending jobs and the proposals agree on
what "the same point" is), projection onto valid points, the FLOAT and INT columns gradient
refinement may move, and the listing of a finite space. The screening set
(:func:`screening_set`) is the candidates the acquisition's optimiser, the joint draws and the
exploratory points all start from.

Where a proposal may not go: a point already taken (finished, failed or pending;
:func:`free_mask`), and a :class:`KeepAway`'s neighbourhoods: those of a deterministic
objective's failed points (:func:`failure_radius`) and, in a large batch, the places the jobs in
flight crowd (:func:`crowding`).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import qmc

from ..problem.space import Space

MAX_ENUMERATED = 100_000  # finite spaces up to this size are listed exhaustively when needed
_KEY_DECIMALS = 9  # encoded rows equal to this many decimals are the same point
_NEIGHBOURHOOD_SCALES = (0.003, 0.01, 0.03, 0.1)

FAILURE_RADIUS_PER_PARAMETER = 0.01
"""A deterministic objective's failed point rules out its neighbourhood of radius 1% of each
variable's range in root mean square: 0.01 sqrt(P) in the unit cube for P parameters."""

#: Crowding applies with more jobs in flight than this (see :func:`crowding`).
CROWDING_MIN_IN_FLIGHT = 50
#: The neighbourhood crowding counts in: 10% of each variable's range in root mean square.
CROWDING_RADIUS_PER_PARAMETER = 0.1


@dataclass(frozen=True)
class KeepAway:
    """Encoded points (K, dim) whose neighbourhoods are not proposed: a point with ``cap`` or
    more of them within Euclidean distance ``radius`` (in the unit cube) is ruled out. With cap
    1 every neighbourhood is (the failed points of a deterministic objective); a larger cap rules
    out only crowded places (the jobs in flight of a large batch,
    :func:`crowding`). ``also``: a second rule that holds too."""

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


def nearby_points(space: Space, centres: np.ndarray, per_centre: int, rng: np.random.Generator) -> np.ndarray:
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
            parts.append(nearby_points(space, np.atleast_2d(anchors), per_anchor, rng))
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


def failure_radius(space: Space) -> float:
    """Radius (unit-cube Euclidean distance) of the neighbourhood a failed point rules out
    for a deterministic objective: ``FAILURE_RADIUS_PER_PARAMETER`` * sqrt(n_parameters).

    The root-mean-square scaling keeps "near" meaning "within about 1% of each variable's
    range" in any dimension (a fixed radius would mean ever less per variable as P grows).
    """
    return FAILURE_RADIUS_PER_PARAMETER * math.sqrt(space.n_parameters)


def crowding(space: Space, pending: np.ndarray, n: int, share: float) -> KeepAway | None:
    """The places a large batch has filled: a point with ``share`` of the jobs in flight (the
    pending rows (J, dim) and the n being proposed) or more within 0.1 sqrt(P) (unit cube, P
    parameters) is not proposed. None (no limit) with ``share`` 0 or at most
    ``CROWDING_MIN_IN_FLIGHT`` jobs in flight.

    Why: q-EI on the draws of a model that is sure of one basin puts nearly the whole batch in
    it (with 200 jobs in flight on Hartmann6, 93% of a round within 0.25 of the best point, and
    half the seeds never left a local basin). Capping the share of the batch in any one
    neighbourhood sends the rest to the next-best places by the same q-EI, so a batch spreads
    over several basins while still refining the best one with up to ``share`` of the workers.
    Off by default: it wins on Hartmann6 and costs a little on Ackley and Levy (``DESIGN.md``).
    """
    in_flight = len(pending) + n
    if share <= 0 or in_flight <= CROWDING_MIN_IN_FLIGHT:
        return None
    return KeepAway(pending.reshape(-1, space.dim), CROWDING_RADIUS_PER_PARAMETER * math.sqrt(space.n_parameters),
                    cap=max(1, int(share * in_flight)))
