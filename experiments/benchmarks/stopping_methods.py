"""The early-stopping benchmark's methods, each driven through its public API by one simulator.

A method hands out :class:`Task` s (:meth:`ask`; ``resumes``: whether a task may continue a job
paused earlier), hears every epoch's value of a running job
(:meth:`report`, which answers whether to stop it), and hears when a job completed its last
epoch (:meth:`finish`) or was stopped (:meth:`stopped`). Names:

* ``ours``: :class:`spearmint_nn.Optimizer` (ask/tell, default settings), no stopping;
* ``ours-median``, ``ours-asha``, ``ours-model``: the same with the rule of
  :mod:`spearmint_nn.stopping` of that name at its defaults (ASHA's ``max-steps``
  the problem's epochs), through the Optimizer's ``report``, ``should_stop`` and
  ``tell_stopped`` after every epoch, as the daemon judges at each poll (a stopped job is seen
  at its predicted final value, as the daemon shows its stopped jobs);
* ``tpe-median``, ``tpe-sh``, ``tpe-hyperband``, ``gp-median``, ``gp-sh``, ``gp-hyperband``:
  Optuna's ``TPESampler(multivariate=True)`` (``constant_liar=True`` with more than one
  worker) or ``GPSampler``, with ``MedianPruner()``, ``SuccessiveHalvingPruner()`` or
  ``HyperbandPruner(max_resource=epochs)``, through ``study.ask``, ``trial.report``,
  ``trial.should_prune`` and ``study.tell`` (a pruned trial told ``TrialState.PRUNED``);
* ``asha-random``: ASHA with random sampling as Li et al. 2020 ("A System for Massively
  Parallel Hyperparameter Tuning", MLSys, Algorithm 2) state it, in its promotion form: rungs
  at 1, 3, 9, 27 epochs (reduction factor 3) and the last epoch; a free worker promotes the
  best job of the highest rung that has one in its top 1/3 not yet promoted, continuing its
  training from where it paused (a checkpoint costs nothing here), else starts a random point
  for one epoch.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .learning_curves import CurveProblem, Point

OURS = ("ours", "ours-median", "ours-asha", "ours-model")
OPTUNA = tuple(f"{s}-{p}" for s in ("tpe", "gp") for p in ("median", "sh", "hyperband"))
METHODS = (*OURS, *OPTUNA, "asha-random")
ETA = 3


@dataclass(frozen=True)
class Task:
    """Train job ``job`` at ``point`` until epoch ``until`` (a new job when the id is new)."""

    job: int
    point: Point
    until: int


def to_point(problem: CurveProblem, params: dict[str, Any]) -> Point:
    """Our params (each value an array of one element) as plain numbers."""
    return {name: (int if spec["type"] == "INT" else float)(np.ravel(params[name])[0])
            for name, spec in problem.variables.items()}


class Ours:
    """``ours`` and ``ours-<rule>`` (see the module docstring)."""

    resumes = False  # every task is a new job

    def __init__(self, problem: CurveProblem, rule: str | None, seed: int, jobs: int):
        from spearmint_nn.search.optimizer import Optimizer

        self.problem, self.rule = problem, rule
        options = None if rule is None else {"rule": rule, **({"max-steps": problem.max_epochs} if rule == "asha" else {})}
        self.opt = Optimizer(problem.variables, seed=seed, budget=jobs, early_stopping=options)
        self.params: dict[int, dict[str, Any]] = {}

    def ask(self, job: int) -> Task:
        params = self.opt.suggest(1)[0]
        self.params[job] = params
        return Task(job, to_point(self.problem, params), self.problem.max_epochs)

    def report(self, job: int, epoch: int, value: float) -> bool:
        if self.rule is None:
            return False
        self.opt.report(self.params[job], epoch, value)
        return self.opt.should_stop(self.params[job])

    def finish(self, job: int, value: float) -> None:
        self.opt.observe(self.params[job], value)

    def stopped(self, job: int) -> None:
        self.opt.tell_stopped(self.params[job])


class OptunaMethod:
    """``tpe-*`` and ``gp-*`` (see the module docstring)."""

    resumes = False

    def __init__(self, problem: CurveProblem, name: str, seed: int, workers: int):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        sampler_name, pruner_name = name.split("-")
        sampler = (optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=workers > 1)
                   if sampler_name == "tpe" else optuna.samplers.GPSampler(seed=seed))
        pruner = {"median": lambda: optuna.pruners.MedianPruner(),
                  "sh": lambda: optuna.pruners.SuccessiveHalvingPruner(),
                  "hyperband": lambda: optuna.pruners.HyperbandPruner(max_resource=problem.max_epochs)}[pruner_name]()
        self.optuna, self.problem = optuna, problem
        self.study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)
        self.trials: dict[int, Any] = {}

    def ask(self, job: int) -> Task:
        trial = self.trials[job] = self.study.ask()
        point = {}
        for name, spec in self.problem.variables.items():
            log = spec.get("scale") == "log"
            suggest = trial.suggest_int if spec["type"] == "INT" else trial.suggest_float
            point[name] = suggest(name, spec["min"], spec["max"], log=log)
        return Task(job, point, self.problem.max_epochs)

    def report(self, job: int, epoch: int, value: float) -> bool:
        self.trials[job].report(value, epoch)
        return self.trials[job].should_prune()

    def finish(self, job: int, value: float) -> None:
        self.study.tell(self.trials[job], value)

    def stopped(self, job: int) -> None:
        self.study.tell(self.trials[job], state=self.optuna.trial.TrialState.PRUNED)


class AshaRandom:
    """``asha-random`` (see the module docstring)."""

    resumes = True  # a task may continue a paused job

    def __init__(self, problem: CurveProblem, seed: int):
        self.problem, self.rng = problem, np.random.default_rng(seed)
        self.rungs, rung = [], 1
        while rung < problem.max_epochs:
            self.rungs.append(rung)
            rung *= ETA
        self.rungs.append(problem.max_epochs)
        self.at_rung: list[dict[int, float]] = [{} for _ in self.rungs]  # job -> its value there
        self.promoted: list[set[int]] = [set() for _ in self.rungs]
        self.points: dict[int, Point] = {}

    def ask(self, job: int) -> Task:
        for k in range(len(self.rungs) - 2, -1, -1):
            ranked = sorted(self.at_rung[k], key=self.at_rung[k].get)
            top = [j for j in ranked[:len(ranked) // ETA] if j not in self.promoted[k]]
            if top:
                self.promoted[k].add(top[0])
                return Task(top[0], self.points[top[0]], self.rungs[k + 1])
        point = {}
        for name, spec in self.problem.variables.items():
            lo, hi = spec["min"], spec["max"]
            if spec.get("scale") == "log":
                value = math.exp(self.rng.uniform(math.log(lo), math.log(hi + (spec["type"] == "INT"))))
            else:
                value = self.rng.uniform(lo, hi + (spec["type"] == "INT"))
            point[name] = min(int(value), hi) if spec["type"] == "INT" else value
        self.points[job] = point
        return Task(job, point, self.rungs[0])

    def report(self, job: int, epoch: int, value: float) -> bool:
        if epoch in self.rungs:
            self.at_rung[self.rungs.index(epoch)][job] = value
        return False

    def finish(self, job: int, value: float) -> None:
        pass

    def stopped(self, job: int) -> None:
        pass


def make_method(name: str, problem: CurveProblem, seed: int, jobs: int, workers: int) -> Any:
    """The method ``name`` (one of ``METHODS``) for a run of ``jobs`` full jobs' compute."""
    if name in OURS:
        return Ours(problem, None if name == "ours" else name.split("-")[1], seed, jobs)
    if name in OPTUNA:
        return OptunaMethod(problem, name, seed, workers)
    if name == "asha-random":
        return AshaRandom(problem, seed)
    raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()`` and the wall seconds it took."""
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started
