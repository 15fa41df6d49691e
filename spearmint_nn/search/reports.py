"""Reports from the fitted objective model: the model's best point (:func:`model_best`) and
its picture of the search (:func:`describe_model`), both in the user's units.

**The model's best** is the evaluated point whose objective the fitted model believes lowest.

With a noisy (GAUSSIAN) objective the lowest observed value is the luckiest draw: among thirty
evaluations with noise of standard deviation s, the lowest sits about 2 s below its point's
true value, and often at a mediocre point. Spearmint reported instead the evaluated point with
the lowest posterior mean of the objective model, which averages each point's value with its
neighbours'. :func:`model_best` computes that report.

The model is fitted to transformed values z = t(y) (:mod:`spearmint_nn.search.transforms`), and the
transform may be nonlinear (Yeo-Johnson, the log shift), so the posterior of y is not normal
and its mean is not t^-1 of z's mean. The report therefore draws z from the posterior of the
latent objective (no observation noise) at the chosen point, a fixed number of draws spread
over the hyperparameter samples, with a fixed seed so the same fit gives the same report, maps
each draw back through t^-1, and gives the mean and standard deviation of those values: the
posterior mean and spread of f in the user's units. t^-1 is each transform's exact inverse
(``untransform``); draws it maps beyond ``BRACKET_SPANS`` observed ranges of the observed values
are taken at that bound (a log shift maps nothing below its offset, and a heavy tail drawn far
beyond the data would otherwise decide the mean).

**The picture** is what the fitted objective model says about a search: how much each
parameter matters, slices of the posterior through the best point, and a contour of the two
parameters that matter most.

* **Importance** is the first-order (main-effect) share of the surrogate's variance, a
  functional ANOVA of the model as in fANOVA (Hutter et al. 2014): for parameter element e,
  Var_{x_e}(E_{x_-e}[mu(x)]) / Var_x(mu(x)), estimated on a Sobol design of base points with e
  set to each of a grid of values. It is computed for every hyperparameter sample of the model
  (a GP's slice samples, DNGO's output-layer samples), so the report shows its spread. Unlike
  ARD length scales it means the same for the GP and DNGO, for ENUM and conditional parameters,
  and it is in the units of the objective's variance, not of a kernel.
* **Slices** vary one parameter element over its range (every option of an ENUM) with the others
  at the best observed point: posterior mean and +-1 std band, mixed over samples.
* **Contour**: the posterior mean on a grid of the two most important numeric elements, the
  others at the best point.

Values are mapped back from the model's scale (a monotone output transform of the objective)
by interpolating the transform on a grid that spans the observed values with a margin; a band
beyond that grid is cut at its edge. Models do no file I/O: the daemon writes this picture as
JSON beside the warpings, and the report draws it without torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ..models.base import Surrogate
from ..problem.space import Space, Variable
from .transforms import OutputTransform

N_DRAWS = 4096  # posterior draws of z at the chosen point, over all hyperparameter samples
BRACKET_SPANS = 10.0  # t^-1 is searched within this many observed ranges around the observed values


@dataclass(frozen=True)
class ModelBest:
    """The evaluated point with the lowest posterior mean of the objective.

    Attributes
    ----------
    index : the observation's position in the order observed (0-based).
    params : its params in wrapper form.
    mean : posterior mean of the objective there, in the user's units and sign.
    std : posterior standard deviation of the objective there, in the user's units.
    observed : the value observed there, in the user's units and sign.
    """

    index: int
    params: dict[str, Any]
    mean: float
    std: float
    observed: float


def lowest_mean(model: Surrogate, X: torch.Tensor) -> int:
    """Row of X (K, D) where the posterior mean of f, averaged over the model's rows, is lowest."""
    with torch.no_grad():
        mean, _ = model.posterior(X, observation_noise=False)
    return int(torch.argmin(mean.mean(dim=0)))


def in_units(transform: OutputTransform, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``transform.untransform(z)``, its exact inverse, within [min - B r, max + B r] of the values
    ``y`` (N,) it was fitted to (r their range, 1 if they are all equal; B = ``BRACKET_SPANS``).

    A draw beyond the bracket is taken at its end, and so is one beyond what the transform can
    produce at all (NaN: below a log shift's offset, or past a Yeo-Johnson power's limit), at the
    end on its side: transforms increase, so z above t(median y) lies above.
    """
    y = np.asarray(y, dtype=float)
    spread = float(y.max() - y.min()) or 1.0
    lo, hi = float(y.min()) - BRACKET_SPANS * spread, float(y.max()) + BRACKET_SPANS * spread
    z = np.asarray(z, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        values = np.asarray(transform.untransform(z), dtype=float)
        beyond = np.where(z > float(np.asarray(transform(np.median(y)))), hi, lo)
    return np.clip(np.where(np.isnan(values), beyond, values), lo, hi)


def posterior_in_units(
    model: Surrogate, transform: OutputTransform, x: torch.Tensor, y: np.ndarray, seed: int = 0
) -> tuple[float, float]:
    """Posterior mean and standard deviation of the latent objective at the point x (1, D), in
    the units of the values y (N,) that ``transform`` was fitted to (module docstring)."""
    with torch.no_grad():
        mean, var = model.posterior(x, observation_noise=False)  # (S, 1) each
    rows = mean.shape[0]
    generator = torch.Generator().manual_seed(seed)
    normal = torch.randn(rows, math.ceil(N_DRAWS / rows), generator=generator, dtype=torch.float64)
    z = (mean + var.clamp_min(0.0).sqrt() * normal).numpy().ravel()
    values = in_units(transform, z, y)
    return float(values.mean()), float(values.std())


def model_best(
    model: Surrogate,
    transform: OutputTransform,
    X: torch.Tensor,
    candidates: np.ndarray,
    values: np.ndarray,
    fitted_values: np.ndarray,
    decode: Callable[[np.ndarray], dict[str, Any]],
    sign: float = 1.0,
) -> ModelBest:
    """The :class:`ModelBest` among the observations numbered ``candidates`` (K,) (the feasible
    ones), K >= 1.

    X (N, D) holds every observation's encoded point and ``values`` (N,) its objective as the
    model sees it (the user's value times ``sign``, -1 when maximising); ``fitted_values`` are
    the values the model and ``transform`` were fitted to; ``decode`` turns an encoded row into
    params.
    """
    best = int(candidates[lowest_mean(model, X[torch.as_tensor(candidates)])])
    mean, std = posterior_in_units(model, transform, X[best : best + 1], fitted_values)
    return ModelBest(index=best, params=decode(X[best].numpy()), mean=sign * mean, std=std,
                     observed=sign * float(values[best]))


# ---- the picture --------------------------------------------------------------------------

N_BASE = 128  # Sobol base points of the main-effect estimate
N_GRID = 12  # values of the varied element per base point
N_SLICE = 41  # points of a numeric slice
N_CONTOUR = 25  # points along each axis of the contour
MAX_IMPORTANCE_ELEMENTS = 64  # a vector of size 1000 would cost minutes: its first elements only


@dataclass(frozen=True)
class Element:
    """One parameter element and the encoded columns that hold it."""

    label: str
    var: Variable
    index: int
    columns: list[int]

    @property
    def numeric(self) -> bool:
        return self.var.type != "ENUM"

    def settings(self, n: int, midpoints: bool = False) -> np.ndarray:
        """(G, len(columns)) encodings the element is set to: n values across [0, 1] (the
        midpoints of n equal cells with ``midpoints``, a uniform quadrature), or every option's
        one-hot row."""
        if self.numeric:
            grid = (np.arange(n) + 0.5) / n if midpoints else np.linspace(0.0, 1.0, n)
            return grid.reshape(-1, 1)
        return np.eye(len(self.columns))


def elements(space: Space) -> list[Element]:
    """Every parameter element of the space, in config order (indicator columns excluded)."""
    out = []
    for var in space.variables:
        cols = list(range(space.dim))[space.value_columns(var.name)]
        for i in range(var.size):
            label = var.name if var.size == 1 else f"{var.name}[{i}]"
            out.append(Element(label, var, i, cols[i * var.width:(i + 1) * var.width]))
    return out


def _posterior(model: Surrogate, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance (S, M) on the model's scale, in chunks to bound memory."""
    means, variances = [], []
    with torch.no_grad():
        for start in range(0, len(X), 4096):
            mean, var = model.posterior(torch.as_tensor(X[start:start + 4096], dtype=torch.float64))
            means.append(mean.numpy())
            variances.append(var.numpy())
    return np.concatenate(means, axis=1), np.concatenate(variances, axis=1)


def _with(space: Space, X: np.ndarray, element: Element, setting: np.ndarray) -> np.ndarray:
    """Valid rows of X with the element set to ``setting`` where it is active (an inactive
    element has no effect); a parent of conditions is projected, which sets its children's
    activity (projecting every element would cost seconds in Python)."""
    X = X.copy()
    if element.var.name in {c.parent for v in space.variables for c in v.conditions}:
        X[:, element.columns] = setting
        return space.project(X)
    active = space.active_mask(X)[:, element.columns[0]]
    X[np.ix_(active, element.columns)] = setting
    return X


def importance(model: Surrogate, space: Space, seed: int = 0) -> list[dict[str, Any]]:
    """Main-effect share of the surrogate's variance of each element: [{"name", "mean", "std"}]
    over hyperparameter samples, in config order."""
    base = space.sobol(N_BASE, seed=seed)
    total = _posterior(model, base)[0].var(axis=1)  # (S,)
    out = []
    for element in elements(space)[:MAX_IMPORTANCE_ELEMENTS]:
        settings = element.settings(N_GRID, midpoints=True)
        X = np.vstack([_with(space, base, element, s) for s in settings])
        effect = _posterior(model, X)[0].reshape(-1, len(settings), len(base)).mean(axis=2)  # (S, G)
        share = effect.var(axis=1) / np.maximum(total, 1e-300)
        out.append({"name": element.label, "mean": float(share.mean()), "std": float(share.std())})
    return out


def _mixture(mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std over a mixture of the S samples' Gaussians, each (M,)."""
    mixed = mean.mean(axis=0)
    return mixed, np.sqrt(np.maximum(var.mean(axis=0) + mean.var(axis=0), 0.0))


def _element_values(space: Space, X: np.ndarray, element: Element) -> list[Any]:
    """The element's value in each row, as the user writes it (numbers decoded, option names)."""
    return [params[element.var.name][element.index].item() if element.numeric
            else str(params[element.var.name][element.index]) for params in space.decode(X)]


def describe_model(model: Surrogate, space: Space, best_x: np.ndarray,
                   inverse: Callable[[np.ndarray], np.ndarray], seed: int = 0) -> dict[str, Any]:
    """The picture of a fitted model (JSON-ready): importance, slices through ``best_x`` (the
    best observed point's encoding, (D,)) and a contour; values in the objective's units
    through ``inverse`` (:func:`in_units`)."""
    best_x = np.asarray(best_x, dtype=float).reshape(1, -1)
    ranked = importance(model, space, seed)
    # an element inactive at the best point (a conditional parameter) has no slice through it
    active = set(space.decode(best_x)[0])
    slices = []
    for element in [e for e in elements(space)[:MAX_IMPORTANCE_ELEMENTS] if e.var.name in active]:
        X = np.vstack([_with(space, best_x, element, s) for s in element.settings(N_SLICE)])
        mean, std = _mixture(*_posterior(model, X))
        slices.append({"name": element.label, "x": _element_values(space, X, element),
                       "mean": inverse(mean).tolist(), "low": inverse(mean - std).tolist(),
                       "high": inverse(mean + std).tolist()})
    picture: dict[str, Any] = {"importance": ranked, "slices": slices,
                               "samples": int(_posterior(model, best_x)[0].shape[0])}
    numeric = [(item["mean"], e) for item, e in zip(ranked, elements(space)) if e.numeric and e.var.name in active]
    if len(numeric) >= 2:
        (_, first), (_, second) = sorted(numeric, key=lambda pair: -pair[0])[:2]
        grid = np.linspace(0.0, 1.0, N_CONTOUR)
        X = np.repeat(best_x, N_CONTOUR * N_CONTOUR, axis=0)
        X[:, first.columns[0]] = np.tile(grid, N_CONTOUR)
        X[:, second.columns[0]] = np.repeat(grid, N_CONTOUR)
        X = space.project(X) if space.is_conditional else X
        mean = _posterior(model, X)[0].mean(axis=0)
        picture["contour"] = {"x_name": first.label, "y_name": second.label,
                              "x": _element_values(space, X[:N_CONTOUR], first),
                              "y": _element_values(space, X[::N_CONTOUR], second),
                              "mean": inverse(mean).reshape(N_CONTOUR, N_CONTOUR).tolist()}
    return picture
