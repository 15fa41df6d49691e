"""Space-filling proposals: the Sobol stream, the design used while no job has succeeded, and the
neighbourhoods of a deterministic objective's failures that no proposal enters.

:class:`SobolStream` hands out the initial design and random search: the points of one
scrambled Sobol sequence in order, skipping taken ones.

While every job has failed there is nothing to model: a classifier fitted to failures alone
knows only where jobs fail, and the point it rates most likely to succeed is wherever it
extrapolates least confidently (measured: the corners of the box, each proposed about eight
times within 1e-4 of itself). :func:`exploration_point` instead continues a space-filling
design over everything evaluated and pending.

Which design: the aim is to hit an unknown region where jobs succeed (an axis-aligned box in
the tests) in as few jobs as possible, so the design must cover the volume evenly in every
projection, as Sobol points do. A farthest-point (maximin) design does not: in a bounded box
the point farthest from all others is on the boundary, so it fills faces and corners first
(simulated, 4-D, a box of 1/20 of the volume: missed within 40 jobs in about half of the runs,
against 6% for Sobol). Two changes fix that: distances are taken on the torus (each coordinate's
difference modulo 1), which has no boundary; and the criterion is maximum projection (MaxPro,
Joseph, Gul and Ba 2015), the sum over evaluated points of 1 / prod_e d_e^2, which punishes
nearness in any one coordinate, so a slab-shaped region (one variable in a narrow range) is
covered as well as by Sobol points. Measured through the Optimizer, runs (of 300, each with a
box of random place) that missed the box where jobs succeed, Sobol random search against this
design: 2-D, a ninth of the area within 15 jobs: cubes 18 / 14, random shapes 16 / 7, slabs
4 / 3; a fortieth within 40 jobs, random shapes 72 / 58; 4-D, a twentieth of the volume within
40 jobs: cubes 16 / 15, random shapes 24 / 16, slabs 3 / 2.

Mixed spaces are compared by variable element rather than by encoded column: a FLOAT or INT
element by its toroidal distance in the unit interval, an ENUM element as 0 (same option) or
1/2 (different, the largest toroidal distance). A conditional element active in only one of the
two points counts 1/2 (different branches), one active in neither 1/4, the mean toroidal
distance of two independent uniform values: the element tells nothing either way. (Counting it
1/2 too made a branch with an extra variable look crowded: it got 1/6 of the points instead of
its 1/3 share of the space; with 1/4 it gets 1/3.) Each term is d^2 plus the element's
resolution squared (an INT or ENUM with L values: 1/L), so that sharing a value is as bad as
being one step apart, and never an infinite penalty.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import qmc

from .candidates import (MAX_ENUMERATED, KeepAway, enumerate_space, free_mask, point_key, point_keys, screening_set,
                         space_size)
from ..problem.space import Space

EXPLORATION_CANDIDATES = 1024  # projected Sobol candidates per exploratory point
_MAX_DIFFERENCE = 0.5  # the largest toroidal distance: different options, different branches
_NEUTRAL_DIFFERENCE = 0.25  # the mean toroidal distance of two uniform values: inactive in both
_MIN_TERM = 1e-12  # keeps the log finite for a FLOAT shared to the last digit


class SobolStream:
    """The points of one scrambled Sobol sequence over the space, projected, in order.

    ``seed`` scrambles the sequence; ``rng`` picks among the unused points of a finite space
    once the sequence stalls (it keeps returning taken points).
    """

    def __init__(self, space: Space, seed: int, rng: np.random.Generator):
        self.space, self.rng = space, rng
        self._sobol = qmc.Sobol(d=space.dim, scramble=True, seed=seed)
        self._buffer: list[np.ndarray] = []

    def next(self, avoid: np.ndarray, keep_away: KeepAway | None = None) -> np.ndarray | None:
        """The next point (dim,) that repeats no row of ``avoid`` (K, dim) and lies outside
        ``keep_away``; in a finite space, once the sequence stalls, an unused point (outside
        ``keep_away`` if one is). None when every point of a finite space is taken."""
        keys = set(point_keys(avoid))
        size = space_size(self.space)
        for _ in range(int(min(4 * size, 1024)) if math.isfinite(size) else 1024):
            if not self._buffer:
                # Draw so the total stays a power of two, which keeps Sobol's balance properties.
                block = max(16, self._sobol.num_generated)
                self._buffer = list(self.space.project(self._sobol.random(block))[::-1])
            x = self._buffer.pop()
            if point_key(x) not in keys and (keep_away is None or keep_away.allows(x[None])[0]):
                return x
        if size <= MAX_ENUMERATED:
            every = enumerate_space(self.space)
            free = free_mask(every, keys)
            outside = free & keep_away.allows(every) if keep_away is not None else free
            unused = every[outside if outside.any() else free]
            if len(unused):
                return unused[int(self.rng.integers(len(unused)))]
        return None


def _elements(space: Space, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Encoded rows X (M, dim) as variable elements.

    Returns values (M, E) (the unit-interval value of a FLOAT or INT element, the option index
    of an ENUM element), active (M, E) bool, is_enum (E,) bool and resolution (E,) (1/L for an
    INT or ENUM element with L values, 0 for a FLOAT).
    """
    active_columns = space.active_mask(X)
    values, active, is_enum, resolution = [], [], [], []
    for var in space.variables:
        columns = space.value_columns(var.name)
        block = X[:, columns].reshape(len(X), var.size, var.width)
        on = active_columns[:, columns].reshape(len(X), var.size, var.width)[:, :, 0]
        if var.type == "ENUM":
            values.append(block.argmax(axis=2).astype(float))
            levels = len(var.options)
        else:
            values.append(block[:, :, 0])
            levels = int(var.max) - int(var.min) + 1 if var.type == "INT" else math.inf
        active.append(on)
        is_enum += [var.type == "ENUM"] * var.size
        resolution += [1.0 / levels] * var.size
    return (np.concatenate(values, axis=1), np.concatenate(active, axis=1),
            np.array(is_enum), np.array(resolution))


def projection_penalty(space: Space, candidates: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """log of the MaxPro penalty of each candidate (M,) against the taken points (N, dim), N >= 1:
    log sum_j 1 / prod_e (d_je^2 + resolution_e^2), with the toroidal element distances d of the
    module docstring. Lower is better."""
    c_values, c_active, is_enum, resolution = _elements(space, candidates)
    t_values, t_active, _, _ = _elements(space, taken)
    log_product = np.zeros((len(candidates), len(taken)))
    for e in range(len(resolution)):
        if is_enum[e]:
            d = _MAX_DIFFERENCE * (c_values[:, e, None] != t_values[None, :, e])
        else:
            d = np.abs(c_values[:, e, None] - t_values[None, :, e])
            d = np.minimum(d, 1.0 - d)
        c_on, t_on = c_active[:, e, None], t_active[None, :, e]
        d = np.where(c_on & t_on, d, np.where(c_on | t_on, _MAX_DIFFERENCE, _NEUTRAL_DIFFERENCE))
        log_product += np.log(np.maximum(d**2 + resolution[e] ** 2, _MIN_TERM))
    return logsumexp(-log_product, axis=1)


def exploration_point(
    space: Space, taken: np.ndarray, *, keep_away: KeepAway | None = None, seed: int | None = None,
    n_candidates: int = EXPLORATION_CANDIDATES,
) -> np.ndarray | None:
    """The next point of the space-filling design: among projected Sobol candidates (every point
    of a small finite space) that repeat no row of ``taken`` (N, dim: evaluated and pending
    points) and lie outside ``keep_away``, the one with the lowest :func:`projection_penalty`.

    Returns the encoded point (dim,), or None when every candidate is taken.
    """
    rng = np.random.default_rng(seed)
    candidates, free, _ = screening_set(space, set(point_keys(taken)), None, n_candidates, rng, keep_away)
    candidates = candidates[free]
    if not len(candidates):
        return None
    if not len(taken):
        return candidates[int(rng.integers(len(candidates)))]
    return candidates[int(np.argmin(projection_penalty(space, candidates, taken)))]
