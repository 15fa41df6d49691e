"""The ask/tell Optimizer: the one seam between the search logic and everything that runs jobs.

Usable on its own, without a daemon or files::

    opt = Optimizer({"x": {"type": "FLOAT", "min": -5, "max": 10}}, seed=0)
    for _ in range(30):
        params = opt.suggest(1)[0]
        opt.observe(params, f(params["x"][0]))

The daemon uses exactly this class.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .space import Space


class Optimizer:
    """Suggest points to evaluate and learn from their results.

    Parameters
    ----------
    variables : the ``variables`` object of a config.json (name -> spec).
    model : surrogate name ("sobol" until the model-based choosers are wired in).
    seed : seed for every random choice, so a run is reproducible.
    """

    def __init__(self, variables: Mapping[str, Any], model: str = "sobol", seed: int | None = None):
        self.space = Space.from_config(variables)
        self.model = model
        self.seed = seed
        self._X: list[np.ndarray] = []
        self._values: list[Any] = []
        self._sobol_drawn = 0

    def suggest(self, n: int = 1, pending: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
        """Return n params dicts (wrapper form) to evaluate next, avoiding observed and pending points."""
        taken = {tuple(row) for row in self._X}
        if pending:
            taken |= {tuple(row) for row in self.space.encode(pending)}
        out: list[dict[str, Any]] = []
        while len(out) < n:
            batch = self.space.sobol(self._sobol_drawn + n + 1, seed=self.seed)[self._sobol_drawn:]
            for row in batch:
                self._sobol_drawn += 1
                if tuple(row) not in taken:
                    taken.add(tuple(row))
                    out.append(self.space.decode(row[None])[0])
                    if len(out) == n:
                        break
        return out

    def observe(self, params: Mapping[str, Any], value: float | Mapping[str, float]) -> None:
        """Record the result of evaluating params: a number, a dict task -> number, or NaN for a failure."""
        self._X.append(self.space.encode([params])[0])
        self._values.append(value)

    @property
    def n_observed(self) -> int:
        return len(self._X)
