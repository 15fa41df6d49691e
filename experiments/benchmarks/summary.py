"""Summaries over the seeds of a benchmark: running best values and quartiles.

Every quality benchmark reports medians and interquartile ranges over seeds of quantities that
can be infinite (a run with no success yet has best value +inf; a run that never reached a
threshold needs +inf evaluations), so the quartiles are computed here, once, in a way that
keeps infinities meaningful.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def best_so_far(values: Sequence[float]) -> np.ndarray:
    """Running minimum of one run's values, shape (evals,); failures (NaN) are skipped, +inf before any success."""
    finite = np.where(np.isfinite(values), np.asarray(values, dtype=float), np.inf)
    return np.minimum.accumulate(finite)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(25th percentile, median, 75th percentile) of values over seeds.

    Interpolated between neighbouring values when all are finite; otherwise each quartile is one
    of the values (an interpolation with +inf would give inf - inf = NaN).
    """
    column = np.asarray(values, dtype=float)
    method = "linear" if np.isfinite(column).all() else "inverted_cdf"
    q25, q50, q75 = (float(np.percentile(column, q, method=method)) for q in (25, 50, 75))
    return q25, q50, q75
