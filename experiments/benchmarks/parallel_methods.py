"""The methods of the parallel benchmark, each behind one small interface.

A method proposes params (config.json form, which the harness evaluates) for ``n`` free workers
while ``running`` jobs are still out, and is told every result; it never sees the clock. Ours is
the :class:`~spearmint_nn.search.optimizer.Optimizer` through its public API; the references are
what a user would pick instead, each in the loop its documentation teaches:

- ``sobol``: random search on the scrambled Sobol sequence;
- ``botorch-qlognei``: BoTorch's ``SingleTaskGP`` with ``qLogNoisyExpectedImprovement``, the
  running jobs as ``X_pending``, ``optimize_acqf`` sequential greedy over the q points;
- ``botorch-ts``: BoTorch's Thompson sampling, ``MaxPosteriorSampling`` on 2000 Sobol candidates;
- ``turbo``: TuRBO-1 with Thompson sampling, BoTorch's tutorial version
  (:mod:`experiments.benchmarks.turbo`);
- ``optuna-gp``: Optuna's ``GPSampler``, each ask made while the earlier asks (and the running
  jobs it did not propose, as RUNNING trials) still run, which its releases since 4.5 model;
  ``deterministic_objective=True``, as its documentation says for a noiseless function;
- ``optuna-tpe``: Optuna's TPE as its documentation recommends for parallel workers:
  ``multivariate=True`` (one joint density of all parameters) and the constant liar (running
  trials counted as bad results);
- ``smac-bb``: SMAC3's ``BlackBoxFacade`` through ask and tell
  (:mod:`experiments.benchmarks.smac_method`).

The references are optional (the harness's ``requirements.txt``); a missing one raises
ImportError naming the requirements. The versions of their libraries are in every report's provenance
(:mod:`experiments.benchmarks.provenance`).
"""
from __future__ import annotations

import importlib.util
import json
import warnings
from dataclasses import fields
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from spearmint_nn.problem.settings import SearchSettings
from spearmint_nn.problem.space import Space

from .smac_method import SmacBlackBox
from .turbo import Turbo

Params = dict[str, Any]
CANDIDATES = 2000
RAW_SAMPLES, RESTARTS = 512, 10


class Method(Protocol):
    def propose(self, n: int, running: Sequence[Params]) -> list[Params]:
        """``n`` new points; ``running`` holds every job still out (this method's and others)."""

    def observe(self, params: Params, value: float) -> None:
        """One finished evaluation (of a proposed point or of the shared initial design)."""


class Ours:
    """The Optimizer with the given settings (keywords of :class:`SearchSettings`)."""

    def __init__(self, space: Space, seed: int, budget: int, **settings: Any):
        from spearmint_nn.search.optimizer import Optimizer

        self.optimizer = Optimizer(space, seed=seed, budget=budget, **settings)
        self._mine: set[int] = set()  # ids of the params objects this optimizer handed out

    def propose(self, n: int, running: Sequence[Params]) -> list[Params]:
        foreign = [p for p in running if id(p) not in self._mine]  # e.g. the shared initial design
        points = self.optimizer.suggest(n, pending=foreign)
        self._mine.update(id(p) for p in points)
        return points

    def observe(self, params: Params, value: float) -> None:
        self._mine.discard(id(params))
        self.optimizer.observe(params, value)


class Sobol:
    """Random search: the scrambled Sobol sequence after the shared initial design."""

    def __init__(self, space: Space, seed: int, skip: int):
        self._points = space.decode(space.sobol(skip + 100_000, seed=seed + 1)[skip:])
        self._next = 0

    def propose(self, n: int, running: Sequence[Params]) -> list[Params]:
        points = self._points[self._next:self._next + n]
        self._next += n
        return points

    def observe(self, params: Params, value: float) -> None:
        pass


class BoTorchMethod:
    """A BoTorch GP loop on the unit cube: ``qlognei`` or Thompson sampling (``ts``)."""

    def __init__(self, space: Space, seed: int, kind: str):
        if importlib.util.find_spec("botorch") is None:
            raise ImportError("the botorch methods need BoTorch: pip install -r experiments/benchmarks/requirements.txt")
        import torch

        self.space, self.kind = space, kind
        self._X: list[np.ndarray] = []
        self._y: list[float] = []
        torch.manual_seed(seed)

    def observe(self, params: Params, value: float) -> None:
        self._X.append(self.space.encode([params])[0])
        self._y.append(value)

    def propose(self, n: int, running: Sequence[Params]) -> list[Params]:
        import torch
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Standardize
        from gpytorch.mlls import ExactMarginalLogLikelihood

        X = torch.as_tensor(np.array(self._X), dtype=torch.float64)
        Y = -torch.tensor(self._y, dtype=torch.float64)[:, None]  # BoTorch maximises
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gp = SingleTaskGP(X, Y, outcome_transform=Standardize(1))
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
            chosen = self._thompson(gp, n) if self.kind == "ts" else self._qlognei(gp, X, n, running)
        return self.space.decode(chosen.detach().numpy())

    def _qlognei(self, gp: Any, X: Any, n: int, running: Sequence[Params]) -> Any:
        import torch
        from botorch.acquisition import qLogNoisyExpectedImprovement
        from botorch.optim import optimize_acqf

        pending = torch.as_tensor(self.space.encode(list(running)), dtype=torch.float64) if running else None
        acquisition = qLogNoisyExpectedImprovement(gp, X_baseline=X, X_pending=pending, prune_baseline=True)
        bounds = torch.stack([torch.zeros(self.space.dim), torch.ones(self.space.dim)]).to(torch.float64)
        candidates, _ = optimize_acqf(acquisition, bounds, q=n, num_restarts=RESTARTS, raw_samples=RAW_SAMPLES,
                                      sequential=True)
        return candidates

    def _thompson(self, gp: Any, n: int) -> Any:
        import torch
        from botorch.generation import MaxPosteriorSampling

        candidates = torch.as_tensor(self.space.sobol(CANDIDATES, seed=int(torch.randint(0, 2**31, ()))),
                                     dtype=torch.float64)
        with torch.no_grad():
            return MaxPosteriorSampling(model=gp, replacement=False)(candidates, num_samples=n)


class OptunaMethod:
    """An Optuna study on the unit cube, asked while earlier asks still run."""

    def __init__(self, space: Space, seed: int, kind: str):
        try:
            import optuna
        except ImportError as error:
            raise ImportError("the optuna methods need Optuna: pip install -r experiments/benchmarks/requirements.txt") from error
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():  # both options are marked experimental, and recommended
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = (optuna.samplers.GPSampler(seed=seed, deterministic_objective=True) if kind == "gp"
                       else optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True))
        self._optuna, self.space = optuna, space
        self.study = optuna.create_study(sampler=sampler)
        self._names = [f"u{i}" for i in range(space.dim)]
        self._distributions = {name: optuna.distributions.FloatDistribution(0.0, 1.0) for name in self._names}
        self._trials: dict[int, Any] = {}  # id(params) -> its running trial (or that trial's number)

    def propose(self, n: int, running: Sequence[Params]) -> list[Params]:
        for params in running:  # jobs it did not propose (the shared initial design) run too
            if id(params) not in self._trials:
                self.study.add_trial(self._optuna.trial.create_trial(
                    params=self._unit_params(params), distributions=self._distributions,
                    state=self._optuna.trial.TrialState.RUNNING))
                self._trials[id(params)] = self.study.trials[-1].number
        points = []
        for _ in range(n):
            trial = self.study.ask(self._distributions)
            unit = np.array([[trial.params[name] for name in self._names]])
            params = self.space.decode(unit)[0]
            self._trials[id(params)] = trial
            points.append(params)
        return points

    def observe(self, params: Params, value: float) -> None:
        trial = self._trials.pop(id(params), None)
        if trial is not None:
            self.study.tell(trial, value)
            return
        # the shared initial design, never seen running: a finished trial
        self.study.add_trial(self._optuna.trial.create_trial(
            params=self._unit_params(params), distributions=self._distributions, value=value))

    def _unit_params(self, params: Params) -> dict[str, float]:
        unit = self.space.encode([params])[0]
        return {name: float(np.clip(u, 0.0, 1.0)) for name, u in zip(self._names, unit)}


def _turbo(space: Space, seed: int, initial: int, q: int) -> Method:
    return Turbo(space, seed, batch_size=q, shared=initial)


def _smac(space: Space, seed: int) -> Method:
    return SmacBlackBox(space, seed)


# name -> (space, seed, the shared initial design's size, points in flight) -> method
REFERENCES: dict[str, Callable[[Space, int, int, int], Method]] = {
    "sobol": lambda space, seed, initial, q: Sobol(space, seed, initial),
    "botorch-qlognei": lambda space, seed, initial, q: BoTorchMethod(space, seed, "qlognei"),
    "botorch-ts": lambda space, seed, initial, q: BoTorchMethod(space, seed, "ts"),
    "optuna-gp": lambda space, seed, initial, q: OptunaMethod(space, seed, "gp"),
    "optuna-tpe": lambda space, seed, initial, q: OptunaMethod(space, seed, "tpe"),
    "turbo": lambda space, seed, initial, q: _turbo(space, seed, initial, q),
    "smac-bb": lambda space, seed, initial, q: _smac(space, seed),
}
# what "ours:KEY=VALUE" takes: the search settings but the two the harness gives every method
SETTING_NAMES = tuple(f.name for f in fields(SearchSettings) if f.name not in ("seed", "budget"))


def make_method(name: str, space: Space, seed: int, budget: int, initial: int, q: int | None = None) -> Method:
    """The method called ``name``: "ours" (the default settings), "ours:KEY=VALUE,..." (settings
    such as ``model=dngo`` or ``restart_after=0``), or a reference named in the module docstring;
    ``initial`` shared Sobol points start the run, ``q`` points are in flight (``initial`` if not
    given)."""
    if name == "ours" or name.startswith("ours:"):
        return Ours(space, seed, budget, **{k: _setting(v) for k, v in _our_settings(name).items()})
    check_method(name)
    return REFERENCES[name](space, seed, initial, q or initial)


def check_method(name: str) -> None:
    """Raise ValueError naming the mistake and the choices unless :func:`make_method` knows
    ``name``; imports no reference library, so a command line is checked before any run starts."""
    if name == "ours" or name.startswith("ours:"):
        _our_settings(name)
    elif name not in REFERENCES:
        raise ValueError(f"unknown method {name!r}; known: ours, ours:KEY=VALUE,..., {', '.join(REFERENCES)}")


def _our_settings(name: str) -> dict[str, str]:
    """The settings of "ours:KEY=VALUE,...", as text; ValueError naming every malformed item and
    unknown key."""
    items = [item for item in name[5:].split(",") if item]
    mistakes = [f"{item!r} is not KEY=VALUE" for item in items if "=" not in item]
    settings = dict(item.split("=", 1) for item in items if "=" in item)
    mistakes += [f"unknown setting {key!r}" for key in settings if key not in SETTING_NAMES]
    if mistakes:
        raise ValueError(f"method {name!r}: {'; '.join(mistakes)} (settings: {', '.join(SETTING_NAMES)})")
    return settings


def split_methods(text: str) -> list[str]:
    """The method names of a comma-separated list, where "ours:KEY=VALUE,KEY=VALUE" is one name:
    an item with "=" and no ":" continues the name before it."""
    names: list[str] = []
    for item in text.split(","):
        if names and "=" in item and ":" not in item:
            names[-1] += "," + item
        else:
            names.append(item)
    return names


def _setting(text: str) -> Any:
    """A setting's value from the command line: an int, a float, a JSON object ("{...}", e.g. of
    model_options), else the string."""
    if text.startswith("{"):
        return json.loads(text)
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
