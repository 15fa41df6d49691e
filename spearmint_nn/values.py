"""What counts as one number in a result: the job runner's check of a wrapper's return value
(:func:`spearmint_nn.experiment.jobs.check_values`) and ``Optimizer.observe`` read values the
same way.

A training loop's loss is usually a 0-d torch tensor, and ``return loss`` is written as often as
``return loss.item()``: anything of one element whose ``.item()`` is a real number (a 0-d or
size-1 tensor or numpy array, a numpy scalar) is that number. Torch is never imported: every job
process reads this module, and the duck-typed ``.item()`` covers tensors without it.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

# What a wrong value's message asks for instead.
ONE_NUMBER = "one number (e.g. loss.item())"


def one_number(value: Any) -> float | None:
    """``value`` as a float when it is one real number (see the module docstring), else None.
    Booleans are not numbers here: ``return loss < 0.1`` is a mistake, not a value."""
    if isinstance(value, (numbers.Real, np.bool_)):
        return _real(value)
    item = getattr(value, "item", None)
    if not callable(item):
        return None
    try:
        element = item()  # numpy raises ValueError, torch RuntimeError, for more than one element
    except (ValueError, RuntimeError, TypeError):
        return None
    # One level only: .item() of a tensor or array gives a Python scalar.
    return _real(element) if isinstance(element, numbers.Real) else None


def _real(value: numbers.Real | np.bool_) -> float | None:
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer beyond float range: recorded as infinite, i.e. a failure
        return math.inf if value > 0 else -math.inf


def describe(value: Any) -> str:
    """A wrong value for a message: its type, its number of elements when that is not one (an
    array or tensor), and its repr on one line, cut to 80 characters."""
    count = _element_count(value)
    size = f" of {count} values" if count is not None and count != 1 else ""
    return f"{type(value).__name__}{size} {' '.join(repr(value).split())[:80]}"


def wanted(value: Any) -> str:
    """What to give instead of a wrong value: for an array or tensor, how to make it one number."""
    return ONE_NUMBER if _element_count(value) is not None else "a number"


def _element_count(value: Any) -> int | None:
    """The number of elements of a numpy array (``.size``) or torch tensor (``.numel()``), else None."""
    size = getattr(value, "size", None)
    if isinstance(size, (int, np.integer)):
        return int(size)
    numel = getattr(value, "numel", None)
    if not callable(numel):
        return None
    try:
        return int(numel())
    except (TypeError, ValueError, RuntimeError):
        return None
