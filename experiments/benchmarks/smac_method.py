"""SMAC3's black-box facade, the reference method ``smac-bb`` of the benchmarks.

SMAC3 (Lindauer, Eggensperger, Feurer, Biedenkapp, Deng, Benjamins, Ruhkopf, Sass and Hutter,
"SMAC3: a versatile Bayesian optimization package for hyperparameter optimization", JMLR 23(54),
2022) recommends its ``BlackBoxFacade`` (a Gaussian process with a Matern kernel, expected
improvement, local and random search over the acquisition, 8.5% random configurations) for
low-dimensional continuous black-box functions; its ``HyperparameterOptimizationFacade`` is the
random-forest one for mixed hyperparameter spaces. It runs here through SMAC's ask-and-tell
interface (its documentation's example "Ask-and-Tell") with the facade's own settings, but:

- ``deterministic=True`` in the scenario and one call per configuration in the intensifier, as
  SMAC's documentation says for a noiseless function;
- no initial design of its own (``n_configs=0``): every method of a run starts from the harness's
  shared Sobol points, which are told to it as finished trials;
- SMAC writes its run history to an output directory, here a temporary one that is removed with
  the method.

SMAC's surrogate knows nothing of running trials: several asks in a row, before their results are
told, answer from the same model and are often nearly the same point. That is how SMAC behaves
on parallel workers too, so the harness leaves it as it is. Optional dependency: ``smac``, in the
harness's ``requirements.txt``; nothing else in the project imports it.
"""
from __future__ import annotations

import tempfile
from typing import Any, Sequence

import numpy as np

from spearmint_nn.problem.space import Space

Params = dict[str, Any]


class SmacBlackBox:
    """SMAC3's ``BlackBoxFacade`` on the unit cube, asked once per free worker."""

    def __init__(self, space: Space, seed: int):
        try:
            from ConfigSpace import ConfigurationSpace, Float
            from smac import BlackBoxFacade, Scenario
        except ImportError as error:
            raise ImportError("the smac-bb method needs SMAC3: pip install -r experiments/benchmarks/requirements.txt") from error
        self.space = space
        self._names = [f"u{i}" for i in range(space.dim)]
        self._configspace = ConfigurationSpace(seed=seed)
        self._configspace.add([Float(name, (0.0, 1.0)) for name in self._names])
        self._output = tempfile.TemporaryDirectory(prefix="smac-")  # removed when the method goes
        # n_trials bounds only SMAC's own optimize loop and initial design: the harness stops the run
        scenario = Scenario(self._configspace, deterministic=True, n_trials=1_000_000, seed=seed,
                            output_directory=self._output.name)
        self.smac = BlackBoxFacade(
            scenario, target_function=_never_called,
            initial_design=BlackBoxFacade.get_initial_design(scenario, n_configs=0),
            intensifier=BlackBoxFacade.get_intensifier(scenario, max_config_calls=1),
            overwrite=True, logging_level=40)
        self._trials: dict[int, Any] = {}  # id(params) -> the TrialInfo asked for it

    def propose(self, n: int, running: Sequence[Params]) -> list[Params]:
        points = []
        for _ in range(n):
            info = self.smac.ask()
            params = self.space.decode(np.array([[info.config[name] for name in self._names]]))[0]
            self._trials[id(params)] = info
            points.append(params)
        return points

    def observe(self, params: Params, value: float) -> None:
        from ConfigSpace import Configuration
        from smac.runhistory.dataclasses import TrialInfo, TrialValue

        info = self._trials.pop(id(params), None)
        if info is None:  # the shared initial design: a trial it never asked for
            unit = np.clip(self.space.encode([params])[0], 0.0, 1.0)
            config = Configuration(self._configspace, values=dict(zip(self._names, map(float, unit))))
            info = TrialInfo(config=config, seed=0)
        self.smac.tell(info, TrialValue(cost=value))


def _never_called(config: Any, seed: int = 0) -> float:
    raise RuntimeError("the harness evaluates SMAC's configurations itself (ask and tell)")
