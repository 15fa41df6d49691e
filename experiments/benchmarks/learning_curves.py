"""The early-stopping benchmark's problems: jobs whose value is known epoch by epoch.

A problem is a search space (config.json ``variables``, one scalar variable per hyperparameter)
and :meth:`CurveProblem.train`, a generator that yields a point's value (lower is better) after
each epoch, 1 to ``max_epochs``, and computes each epoch only when asked for it: a job stopped
after 3 epochs costs 3 epochs. Its values are a function of (point, seed) alone, whatever else
runs in the same process between two epochs.

``hartmann6-curves``: an analytic multi-fidelity problem whose final value (epoch ``max_epochs``)
is Hartmann6's, with the learning-curve shape of each point documented here. With
``s(t) = (t^-r - T^-r) / (1 - T^-r)`` the share of the way from epoch 1 still to go at epoch t
(1 at t = 1, 0 at t = T), a power law of point-dependent rate r, the value at epoch t is

    H6(x; alpha - 0.1 s(t)) + gap(x) s(t) + 0.05 sqrt(s(t)) e_t,

* ``H6(x; alpha - 0.1 s)``: Hartmann6 with its basin weights alpha lowered by 0.1 s, the
  multi-fidelity Hartmann of Kandasamy et al. 2017 ("Multi-fidelity Bayesian Optimisation with
  Continuous Approximations", ICML; the ``mfh6`` of mf-prior-bench and of Li et al.'s Hyperband
  benchmarks) with fidelity z = 1 - s: at low fidelity the basins are shallower by unequal
  shares of their depth, so the ranking of points changes along the way;
* ``gap(x) = 0.5 + (1 - x1)`` and ``r(x) = 0.25 + 1.5 x1``: the first input acts as a learning
  rate. Points with a small x1 start far above their final value and approach it slowly
  (r = 0.25: 30% of the way still to go at epoch 10), points with a large one start close and
  converge within a few epochs (r = 1.75). Hartmann6's optimum has x1 = 0.20 (r = 0.55), and a
  fast learner (x1 = 0.9) in a basin of final value -2.8 looks better than it until epoch 3:
  curves cross, and "bad early" is not always "bad late", as with learning rates in real
  training, where a large rate gives the fastest start and a small one the best end. Over 400
  uniform points, the rank correlation (Spearman) of the value at epoch t with the final value
  is 0.31 at t = 1, 0.53 at 5, 0.70 at 10 and 0.87 at 20: early values say something, not all;
* power-law curves are the commonest shape of validation loss against epochs in the
  learning-curve extrapolation literature (Domhan, Springenberg and Hutter 2015, "pow3" and
  relatives; Klein et al. 2017);
* ``e_t``: standard normal noise, a function of (x, seed, t), shrinking to 0 at the last epoch,
  so that epoch-to-epoch values jitter as a validation metric does while the final value is
  Hartmann6's exactly (minimum -3.32237).

``digits-mlp``: a torch MLP trained with AdamW on scikit-learn's digits (1257 training images,
540 for validation, as :mod:`experiments.benchmarks.transfer`), with six hyperparameters (log
learning rate, width, depth, dropout, log weight decay, batch size); the value after each epoch
is the validation error. One torch thread; weights, shuffles and dropout masks come from
generators seeded by (point, seed), and the global RNG state is swapped in and out around each
epoch, so a job's curve is the same however its epochs interleave with other jobs'.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from .digits import digits_split
from .functions import _HARTMANN6_A, _HARTMANN6_P, _HARTMANN_ALPHA

Point = Mapping[str, float]


@dataclass(frozen=True)
class CurveProblem:
    """A search space and a job's values epoch by epoch (see the module docstring)."""

    name: str
    variables: dict[str, Any]
    max_epochs: int
    curve: Callable[[Point, int, int], Iterator[float]]

    def train(self, point: Point, seed: int) -> Iterator[float]:
        """The values after epochs 1, 2, ..., ``max_epochs`` of a job at ``point``."""
        return self.curve(point, seed, self.max_epochs)


def point_key(point: Point, seed: int) -> list[int]:
    """32-bit words that name (point, seed), to seed a job's generators."""
    text = json.dumps([seed, sorted((k, float(v)) for k, v in point.items())])
    return list(np.frombuffer(hashlib.sha256(text.encode()).digest(), dtype=np.uint32))


# ---- hartmann6-curves --------------------------------------------------------------------------

KANDASAMY_SHIFT = 0.1  # of alpha at the lowest fidelity (Kandasamy et al. 2017)
NOISE = 0.05
HARTMANN_NAMES = tuple(f"x{i + 1}" for i in range(6))


def hartmann6(x: np.ndarray, shift: float = 0.0) -> float:
    """Hartmann6 at ``x`` with its weights alpha lowered by ``shift``."""
    return float(-np.sum((_HARTMANN_ALPHA - shift) * np.exp(-np.sum(_HARTMANN6_A * (x - _HARTMANN6_P) ** 2, axis=1))))


def to_go(t: int, rate: float, last: int) -> float:
    """s(t): the share of the curve's descent from epoch 1 still to go at epoch t."""
    return (t ** -rate - last ** -rate) / (1.0 - last ** -rate)


def hartmann_curve(point: Point, seed: int, max_epochs: int) -> Iterator[float]:
    x = np.array([float(point[name]) for name in HARTMANN_NAMES])
    gap, rate = 0.5 + (1.0 - x[0]), 0.25 + 1.5 * x[0]
    noise = np.random.default_rng(point_key(point, seed)).standard_normal(max_epochs)
    for t in range(1, max_epochs + 1):
        s = to_go(t, rate, max_epochs)
        yield hartmann6(x, KANDASAMY_SHIFT * s) + gap * s + NOISE * math.sqrt(s) * noise[t - 1]


HARTMANN_CURVES = CurveProblem(
    "hartmann6-curves", {name: {"type": "FLOAT", "min": 0.0, "max": 1.0} for name in HARTMANN_NAMES}, 50,
    hartmann_curve)


# ---- digits-mlp --------------------------------------------------------------------------------

MLP_VARIABLES = {
    "learning_rate": {"type": "FLOAT", "min": 1e-4, "max": 1e-1, "scale": "log"},
    "width": {"type": "INT", "min": 16, "max": 256, "scale": "log"},
    "depth": {"type": "INT", "min": 1, "max": 3},
    "dropout": {"type": "FLOAT", "min": 0.0, "max": 0.5},
    "weight_decay": {"type": "FLOAT", "min": 1e-6, "max": 1e-1, "scale": "log"},
    "batch_size": {"type": "INT", "min": 64, "max": 512, "scale": "log"},
}


def mlp_curve(point: Point, seed: int, max_epochs: int) -> Iterator[float]:
    import torch

    X_train, X_valid, y_train, y_valid = digits_split()
    X_train, X_valid = torch.as_tensor(X_train, dtype=torch.float32), torch.as_tensor(X_valid, dtype=torch.float32)
    y_train, y_valid = torch.as_tensor(y_train), torch.as_tensor(y_valid)
    key = point_key(point, seed)
    shuffles = torch.Generator().manual_seed(int(key[0]))
    outside = torch.get_rng_state()
    torch.manual_seed(int(key[1]))  # the weights' initialisation and the dropout masks
    width, depth, batch = int(point["width"]), int(point["depth"]), int(point["batch_size"])
    layers: list[torch.nn.Module] = []
    for i in range(depth):
        layers += [torch.nn.Linear(64 if i == 0 else width, width), torch.nn.ReLU(),
                   torch.nn.Dropout(float(point["dropout"]))]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(point["learning_rate"]),
                                  weight_decay=float(point["weight_decay"]))
    mine = torch.get_rng_state()
    torch.set_rng_state(outside)
    for _ in range(max_epochs):
        outside = torch.get_rng_state()
        torch.set_rng_state(mine)
        model.train()
        order = torch.randperm(len(X_train), generator=shuffles)
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(X_train[rows]), y_train[rows]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            error = float((model(X_valid).argmax(1) != y_valid).float().mean())
        mine = torch.get_rng_state()
        torch.set_rng_state(outside)
        yield error if math.isfinite(error) else 1.0


DIGITS_MLP = CurveProblem("digits-mlp", MLP_VARIABLES, 50, mlp_curve)

PROBLEMS = {p.name: p for p in (HARTMANN_CURVES, DIGITS_MLP)}
