"""scikit-learn's digits images, split once for every problem that trains on them.

The transfer benchmark's ``digits-mlp`` and the early-stopping benchmark's digits MLP learning
curves train on the same split (scaled to [0, 1], 30% held out for validation, seed 0).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1)
def digits_split() -> tuple[np.ndarray, ...]:
    """(X_train, X_valid, y_train, y_valid); ImportError naming the requirements without scikit-learn."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise ImportError("the digits problems need scikit-learn: pip install -r experiments/benchmarks/requirements.txt") from None
    X, y = load_digits(return_X_y=True)
    return tuple(train_test_split(X / 16.0, y, test_size=0.3, random_state=0))
