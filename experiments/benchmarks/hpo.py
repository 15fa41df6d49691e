"""Real hyperparameter tasks: Bayesmark's scikit-learn models tuned on scikit-learn's own
datasets, as problems of the benchmarks named ``hpo-<model>-<dataset>-<metric>``.

Bayesmark (Uber, 2019; the black-box optimisation challenge of NeurIPS 2020, Turner et al.,
"Bayesian optimization is superior to random search for machine learning hyperparameter
tuning", PMLR 133, 2021) tunes nine scikit-learn models on small datasets that scikit-learn
ships, so the tasks need no download. The spaces here are Bayesmark's (``bayesmark/
sklearn_funcs.py``): each hyperparameter has a range and a scale, ``linear``, ``log`` or
``logit``; as Bayesmark's optimiser wrappers do, every method searches the box of the
*warped* values (log10 of a log-scaled one, the log-odds of a logit-scaled one) and the task
maps a point back, rounding integers. The value is Bayesmark's visible objective: the mean
5-fold cross-validated loss on 80% of the data (split with seed 0), ``nll`` (log loss) or
``acc`` (one minus accuracy: Bayesmark's negated accuracy shifted to be non-negative) for
classifiers, ``mse`` or ``mae`` for regressors.

Two departures, both to make a task one deterministic function: the models that draw random
numbers get ``random_state=0`` (Bayesmark leaves them unseeded, so its values are noisy), and
the regression models' boolean and ``normalize`` options are left out (scikit-learn removed
``normalize``), so ``lasso`` and ``linear`` are classification tasks only.

The optimum of a task is unknown (``minimum`` is NaN): :mod:`experiments.benchmarks.profiles`
reports them against the best value any run found.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from .functions import TestFunction

PREFIX = "hpo-"
NAME = re.compile(r"hpo-([a-z0-9]+)-([a-z]+)-([a-z]+)$")
CV_SPLITS = 5


@dataclass(frozen=True)
class Hyperparameter:
    name: str
    low: float
    high: float
    scale: str = "linear"  # linear, log or logit
    integer: bool = False

    @property
    def box(self) -> tuple[float, float]:
        """The range the methods search: the warped values of ``low`` and ``high``."""
        return _warp(self.low, self.scale), _warp(self.high, self.scale)

    def value(self, warped: float) -> float | int:
        low, high = self.box
        raw = _unwarp(min(max(warped, low), high), self.scale)
        return int(round(raw)) if self.integer else float(min(max(raw, self.low), self.high))


def _warp(value: float, scale: str) -> float:
    if scale == "log":
        return math.log10(value)
    return math.log(value / (1 - value)) if scale == "logit" else value


def _unwarp(value: float, scale: str) -> float:
    if scale == "log":
        return 10 ** value
    return 1 / (1 + math.exp(-value)) if scale == "logit" else value


_TREE = (Hyperparameter("max_depth", 1, 15, integer=True),
         Hyperparameter("min_samples_split", 0.01, 0.99, "logit"),
         Hyperparameter("min_samples_leaf", 0.01, 0.49, "logit"),
         Hyperparameter("min_weight_fraction_leaf", 0.01, 0.49, "logit"),
         Hyperparameter("max_features", 0.01, 0.99, "logit"),
         Hyperparameter("min_impurity_decrease", 0.0, 0.5))
#: model -> its hyperparameters (Bayesmark's ranges and scales)
SPACES: dict[str, tuple[Hyperparameter, ...]] = {
    "knn": (Hyperparameter("n_neighbors", 1, 25, integer=True), Hyperparameter("p", 1, 4, integer=True)),
    "svm": (Hyperparameter("C", 1.0, 1e3, "log"), Hyperparameter("gamma", 1e-4, 1e-3, "log"),
            Hyperparameter("tol", 1e-5, 1e-1, "log")),
    "dt": _TREE,
    "rf": _TREE,
    "mlp": (Hyperparameter("hidden_layer_sizes", 50, 200, integer=True), Hyperparameter("alpha", 1e-5, 1e1, "log"),
            Hyperparameter("batch_size", 10, 250, integer=True),
            Hyperparameter("learning_rate_init", 1e-5, 1e-1, "log"), Hyperparameter("tol", 1e-5, 1e-1, "log"),
            Hyperparameter("validation_fraction", 0.1, 0.9, "logit"), Hyperparameter("beta_1", 0.5, 0.99, "logit"),
            Hyperparameter("beta_2", 0.9, 1 - 1e-6, "logit"), Hyperparameter("epsilon", 1e-9, 1e-6, "log")),
    "ada": (Hyperparameter("n_estimators", 10, 100, integer=True), Hyperparameter("learning_rate", 1e-4, 1e1, "log")),
    "lasso": (Hyperparameter("C", 1e-2, 1e2, "log"), Hyperparameter("intercept_scaling", 1e-2, 1e2, "log")),
    "linear": (Hyperparameter("C", 1e-2, 1e2, "log"), Hyperparameter("intercept_scaling", 1e-2, 1e2, "log")),
}
CLASSIFICATION = ("iris", "wine", "breast", "digits")
REGRESSION = ("diabetes",)
METRICS = {"nll": "neg_log_loss", "acc": "accuracy", "mse": "neg_mean_squared_error",
           "mae": "neg_mean_absolute_error"}

#: The tasks of ``--suite hpo``: every model, on two classification datasets and the regression
#: one, with both of Bayesmark's metrics split between them (24 tasks, 2-9 hyperparameters).
TASKS = tuple(
    [f"hpo-{model}-{dataset}-{metric}" for model in SPACES for dataset, metric in (("wine", "nll"), ("breast", "acc"))]
    + [f"hpo-{model}-diabetes-{metric}" for model, metric in (("knn", "mse"), ("svm", "mae"), ("dt", "mse"),
                                                              ("rf", "mae"), ("mlp", "mse"), ("ada", "mae"))]
    + ["hpo-svm-digits-nll", "hpo-rf-digits-acc"])


def parse_name(name: str) -> tuple[str, str, str]:
    """(model, dataset, metric) of ``hpo-<model>-<dataset>-<metric>``; a clear error otherwise."""
    match = NAME.match(name)
    if not match or match[1] not in SPACES or match[2] not in CLASSIFICATION + REGRESSION or match[3] not in METRICS:
        raise ValueError(f"{name!r} is not a task: hpo-<model>-<dataset>-<metric> with model one of "
                         f"{', '.join(SPACES)}, dataset one of {', '.join(CLASSIFICATION + REGRESSION)}, "
                         f"metric one of {', '.join(METRICS)}")
    model, dataset, metric = match.groups()
    if (dataset in REGRESSION) != (metric in ("mse", "mae")) or (dataset in REGRESSION and model in ("lasso", "linear")):
        raise ValueError(f"{name!r}: {dataset} is a {'regression' if dataset in REGRESSION else 'classification'} "
                         "dataset: its metrics are " + ("mse and mae, for every model but lasso and linear"
                                                        if dataset in REGRESSION else "nll and acc"))
    return model, dataset, metric


def make_problem(name: str) -> TestFunction:
    """The task ``name`` as a problem on the box of its warped hyperparameters (minimum NaN)."""
    model, dataset, metric = parse_name(name)
    space = SPACES[model]
    objective = _objective(model, dataset, metric)

    def evaluate(x: np.ndarray) -> float:
        return objective({h.name: h.value(float(v)) for h, v in zip(space, x)})

    return TestFunction(name, evaluate, tuple(h.box for h in space), math.nan, ())


def _objective(model: str, dataset: str, metric: str) -> Callable[[dict[str, Any]], float]:
    from sklearn.model_selection import cross_val_score

    X, y = _data(dataset)
    scoring = METRICS[metric]

    def loss(params: dict[str, Any]) -> float:
        with warnings.catch_warnings():  # the search tries settings that do not converge
            warnings.simplefilter("ignore")
            scores = cross_val_score(_estimator(model, dataset in REGRESSION, params), X, y, scoring=scoring,
                                     cv=CV_SPLITS, error_score="raise")
        value = -float(np.mean(scores))
        return 1 + value if metric == "acc" else value

    return loss


@lru_cache(maxsize=None)
def _data(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """The training 80% of ``dataset`` (Bayesmark's split: shuffled with seed 0)."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    load = {"iris": datasets.load_iris, "wine": datasets.load_wine, "breast": datasets.load_breast_cancer,
            "digits": datasets.load_digits, "diabetes": datasets.load_diabetes}[dataset]
    X, y = load(return_X_y=True)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.2, random_state=0, shuffle=True)
    return X_train, y_train


def _estimator(model: str, regression: bool, params: dict[str, Any]) -> Any:
    """Bayesmark's estimator for ``model`` with its fixed settings and ``params``."""
    from sklearn import ensemble, linear_model, multiclass, neighbors, neural_network, svm, tree

    seeded = {"random_state": 0}
    if model == "knn":
        return (neighbors.KNeighborsRegressor if regression else neighbors.KNeighborsClassifier)(**params)
    if model == "svm":
        return svm.SVR(kernel="rbf", **params) if regression else svm.SVC(kernel="rbf", probability=True,
                                                                         **seeded, **params)
    if model == "dt":
        return (tree.DecisionTreeRegressor if regression else tree.DecisionTreeClassifier)(**seeded, **params)
    if model == "rf":
        return (ensemble.RandomForestRegressor if regression else ensemble.RandomForestClassifier)(
            n_estimators=10, **seeded, **params)
    if model == "mlp":
        return (neural_network.MLPRegressor if regression else neural_network.MLPClassifier)(
            solver="adam", early_stopping=True, **seeded,
            **{**params, "hidden_layer_sizes": (params["hidden_layer_sizes"],)})
    if model == "ada":
        return (ensemble.AdaBoostRegressor if regression else ensemble.AdaBoostClassifier)(**seeded, **params)
    # Bayesmark's penalty="l1" or "l2" and multi_class="ovr", as scikit-learn 1.8 spells them
    return multiclass.OneVsRestClassifier(linear_model.LogisticRegression(
        l1_ratio=1.0 if model == "lasso" else 0.0, solver="liblinear", **seeded, **params))
