"""Standard test functions for minimisation, with their known optima.

Each :class:`TestFunction` carries its search space in config.json ``variables`` form (one
FLOAT variable ``x`` of size D), the function on a raw point (a length-D sequence), and the
known minimum value, so benchmarks report simple regret ``best - minimum``.
Definitions and optima follow Surjanovic & Bingham's Virtual Library of Simulation Experiments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class TestFunction:
    """A minimisation problem: ``function(x)`` over the box ``bounds``, minimum ``minimum``."""

    name: str
    function: Callable[[np.ndarray], float]
    bounds: tuple[tuple[float, float], ...]
    minimum: float
    argmin: tuple[float, ...]

    __test__ = False  # not a pytest test class, despite the name

    @property
    def dim(self) -> int:
        return len(self.bounds)

    @property
    def variables(self) -> dict[str, Any]:
        """The search space as a config.json ``variables`` object: one FLOAT ``x`` of size D.

        Functions with one range for every coordinate use it directly; otherwise each
        coordinate is its own variable ``x1``, ``x2``, ...
        """
        lows, highs = {b[0] for b in self.bounds}, {b[1] for b in self.bounds}
        if len(lows) == 1 and len(highs) == 1:
            return {"x": {"type": "FLOAT", "size": self.dim, "min": self.bounds[0][0], "max": self.bounds[0][1]}}
        return {f"x{i + 1}": {"type": "FLOAT", "min": lo, "max": hi} for i, (lo, hi) in enumerate(self.bounds)}

    def point(self, params: Mapping[str, Any]) -> np.ndarray:
        """The raw point (D,) of params in either form produced from :attr:`variables`."""
        if "x" in params:
            return np.asarray(params["x"], dtype=float).reshape(self.dim)
        return np.asarray([float(np.ravel(params[f"x{i + 1}"])[0]) for i in range(self.dim)])

    def __call__(self, params: Mapping[str, Any]) -> float:
        """The function at params (config form)."""
        return float(self.function(self.point(params)))


def branin(x: Sequence[float]) -> float:
    x1, x2 = x
    b, c = 5.1 / (4 * math.pi**2), 5 / math.pi
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x1) + 10


_HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_HARTMANN3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_HARTMANN3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])
_HARTMANN6_A = np.array([
    [10, 3, 17, 3.5, 1.7, 8],
    [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8],
    [17, 8, 0.05, 10, 0.1, 14],
])
_HARTMANN6_P = 1e-4 * np.array([
    [1312, 1696, 5569, 124, 8283, 5886],
    [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650],
    [4047, 8828, 8732, 5743, 1091, 381],
])


def _hartmann(A: np.ndarray, P: np.ndarray) -> Callable[[Sequence[float]], float]:
    def f(x: Sequence[float]) -> float:
        x = np.asarray(x, dtype=float)
        return float(-np.sum(_HARTMANN_ALPHA * np.exp(-np.sum(A * (x - P) ** 2, axis=1))))
    return f


def six_hump_camel(x: Sequence[float]) -> float:
    x1, x2 = x
    return (4 - 2.1 * x1**2 + x1**4 / 3) * x1**2 + x1 * x2 + (-4 + 4 * x2**2) * x2**2


def goldstein_price(x: Sequence[float]) -> float:
    x1, x2 = x
    a = 1 + (x1 + x2 + 1) ** 2 * (19 - 14 * x1 + 3 * x1**2 - 14 * x2 + 6 * x1 * x2 + 3 * x2**2)
    b = 30 + (2 * x1 - 3 * x2) ** 2 * (18 - 32 * x1 + 12 * x1**2 + 48 * x2 - 36 * x1 * x2 + 27 * x2**2)
    return a * b


LOG4_CENTRE = np.array([0.3, 0.5, 0.2, 0.6])  # optimum in u = log10(x) / 4 + 1 coordinates


def log4(x: Sequence[float]) -> float:
    """sum_d (u_d - c_d)^2 with u = log10(x) / 4 + 1, x in [1e-4, 1]^4: minimum 0 at x = 10^(4(c - 1)).

    A bowl in log x on a linear-scale box: its optimum sits near the lower bounds, the case input
    warping is for.
    """
    u = np.log10(np.asarray(x, dtype=float)) / 4.0 + 1.0
    return float(np.sum((u - LOG4_CENTRE) ** 2))


def ackley(x: Sequence[float]) -> float:
    """Ackley's function (a = 20, b = 0.2, c = 2 pi): many local minima around one global
    minimum 0 at the origin; any dimension."""
    x = np.asarray(x, dtype=float)
    return float(-20.0 * math.exp(-0.2 * math.sqrt(np.mean(x * x))) - math.exp(np.mean(np.cos(2 * math.pi * x)))
                 + 20.0 + math.e)


def levy(x: Sequence[float]) -> float:
    """Levy's function: a rugged valley with minimum 0 at (1, ..., 1); any dimension."""
    w = 1.0 + (np.asarray(x, dtype=float) - 1.0) / 4.0
    body = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(math.pi * w[:-1] + 1) ** 2))
    return float(math.sin(math.pi * w[0]) ** 2 + body + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2))


FUNCTIONS: dict[str, TestFunction] = {
    f.name: f
    for f in [
        TestFunction("branin", branin, ((-5.0, 10.0), (0.0, 15.0)), 0.39788735772973816, (math.pi, 2.275)),
        TestFunction("hartmann3", _hartmann(_HARTMANN3_A, _HARTMANN3_P), ((0.0, 1.0),) * 3,
                     -3.8627797873327156, (0.114614, 0.555649, 0.852547)),
        TestFunction("hartmann6", _hartmann(_HARTMANN6_A, _HARTMANN6_P), ((0.0, 1.0),) * 6,
                     -3.3223680114155147, (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)),
        TestFunction("camel", six_hump_camel, ((-3.0, 3.0), (-2.0, 2.0)), -1.0316284534898774, (0.0898, -0.7126)),
        TestFunction("goldstein_price", goldstein_price, ((-2.0, 2.0), (-2.0, 2.0)), 3.0, (0.0, -1.0)),
        TestFunction("log4", log4, ((1e-4, 1.0),) * 4, 0.0, tuple(10.0 ** (4 * (LOG4_CENTRE - 1)))),
        # The parallel benchmark's higher dimensions; off-centre boxes, so the optimum is not the
        # centre that a space-filling design samples first.
        TestFunction("ackley10", ackley, ((-5.0, 10.0),) * 10, 0.0, (0.0,) * 10),
        TestFunction("levy20", levy, ((-10.0, 10.0),) * 20, 0.0, (1.0,) * 20),
    ]
}

