"""Learning from an earlier search: how many evaluations a related search saves.

Every problem has a current task and a related one searched first, as a user reuses last
month's folder:

- ``hartmann6``: Hartmann6; the related task is 2 H(T(u)) + 1 with T(u) = u^2 on the first three
  inputs and 1 - (1 - u)^2 on the others, so its optimum sits elsewhere and its inputs are warped
  (each by a Beta CDF, which per-task warps can undo);
- ``digits-mlp``: the validation error of scikit-learn's MLPClassifier on its digits (1257
  training images, 540 for validation; alpha, learning rate, hidden units, activation, 50
  epochs); the related task trains on the first 200 images only, over a narrower learning-rate
  range (each task's points are read through its own ranges).

The related search is our default optimizer on the related task (``--related-budget``
evaluations, the run's seed). Rows, each ``--seeds`` runs of ``--budget`` sequential
evaluations of the current task:

- ``single``: the default optimizer without the related search;
- ``multi-task``: the multi-task GP without input warps (``model="gp-nowarp"`` with ``related``);
- ``multi-task-warped``: the default optimizer with ``related``, each task its own warps;
- ``unrelated``: the default optimizer with a related search on an unrelated task of the same
  variables (a short-length-scale random function over their unit cube, :func:`unrelated`):
  should cost nothing.

A row name with "@N" runs it with an initial design of N Sobol points instead of the space's
D + 1, e.g. ``multi-task-warped@2``.

Reported: the target is the single-task row's median best after the full budget; per row the
median (over seeds) number of evaluations to reach it (a run that never does counts as more
than the budget) and the median best after half and all of the budget.

    python -m experiments.benchmarks.transfer --problems hartmann6,digits-mlp --seeds 0-9 --workers 2
"""
from __future__ import annotations

import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .command_line import benchmark_parser
from .digits import digits_split
from .functions import FUNCTIONS
from .runs import run_in_processes, write_report

Params = Mapping[str, Any]
ROWS = ("single", "multi-task", "multi-task-warped", "unrelated")


@dataclass(frozen=True)
class TransferProblem:
    """A current task and a related one, each over its own ``variables``."""

    name: str
    variables: dict[str, Any]
    related_variables: dict[str, Any]
    current: Callable[[Params], float]
    related: Callable[[Params], float]


def _hartmann_point(params: Params) -> np.ndarray:
    return np.asarray(params["x"], dtype=float).reshape(6)


def _warped_hartmann(params: Params) -> float:
    u = _hartmann_point(params)
    moved = np.concatenate([u[:3] ** 2, 1 - (1 - u[3:]) ** 2])
    return 2.0 * FUNCTIONS["hartmann6"].function(moved) + 1.0


MLP_VARIABLES = {
    "alpha": {"type": "FLOAT", "min": 1e-6, "max": 1.0, "scale": "log"},
    "learning_rate": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"},
    "hidden": {"type": "INT", "min": 4, "max": 128},
    "activation": {"type": "ENUM", "options": ["relu", "tanh", "logistic"]},
}
SMALL_TRAINING_SET = 200


def _mlp_error(params: Params, n_train: int | None) -> float:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    X_train, X_valid, y_train, y_valid = digits_split()
    model = MLPClassifier((int(params["hidden"][0]),), activation=params["activation"][0],
                          alpha=float(params["alpha"][0]), learning_rate_init=float(params["learning_rate"][0]),
                          max_iter=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_train[:n_train], y_train[:n_train])
    return float(1.0 - model.score(X_valid, y_valid))


PROBLEMS = {
    "hartmann6": TransferProblem("hartmann6", FUNCTIONS["hartmann6"].variables, FUNCTIONS["hartmann6"].variables,
                                 FUNCTIONS["hartmann6"], _warped_hartmann),
    "digits-mlp": TransferProblem(
        "digits-mlp", MLP_VARIABLES,
        {**MLP_VARIABLES, "learning_rate": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log"}},
        lambda params: _mlp_error(params, None), lambda params: _mlp_error(params, SMALL_TRAINING_SET)),
}


# The unrelated task is a draw from a zero-mean GP with this squared-exponential length scale over
# the unit cube of the encoded inputs, by random Fourier features: wiggly at every scale a search of
# 30 points sees, with no bowl or slope to share with the current task. Levy's function over the
# cube (the control until 2026-11-29) is a bowl with its minimum mid-cube, which the digits MLP's
# error shares (learned correlation +0.50): a control that helped instead of testing harm.
UNRELATED_LENGTHSCALE = 0.15
UNRELATED_FEATURES = 2000


def unrelated(problem: TransferProblem, seed: int = 0) -> Callable[[Params], float]:
    """A function of the related variables with no structure shared with any task: one draw
    (per ``seed``) from a GP of length scale ``UNRELATED_LENGTHSCALE`` over their encoded unit
    cube, variance 1."""
    from spearmint_nn.problem.space import Space

    space = Space.from_config(problem.related_variables)
    rng = np.random.default_rng([UNRELATED_FEATURES, seed])
    frequencies = rng.normal(0.0, 1.0 / UNRELATED_LENGTHSCALE, (UNRELATED_FEATURES, space.dim))
    phases = rng.uniform(0.0, 2 * math.pi, UNRELATED_FEATURES)
    weights = rng.normal(0.0, math.sqrt(2.0 / UNRELATED_FEATURES), UNRELATED_FEATURES)

    def function(params: Params) -> float:
        return float(weights @ np.cos(frequencies @ space.encode([params])[0] + phases))

    return function


def related_search(problem_name: str, kind: str, seed: int, budget: int) -> dict[str, Any]:
    """The earlier search: the default optimizer on the related (or, ``kind="unrelated"``, the
    unrelated) task; its (params, value) results."""
    from spearmint_nn.search.optimizer import Optimizer

    problem = PROBLEMS[problem_name]
    function = problem.related if kind == "related" else unrelated(problem, seed)
    opt = Optimizer(problem.related_variables, seed=1000 + seed, budget=budget)
    results = []
    for _ in range(budget):
        params = opt.suggest(1)[0]
        results.append((params, function(params)))
        opt.observe(*results[-1])
    return {"problem": problem_name, "kind": kind, "seed": seed, "results": _jsonable(results)}


def current_search(problem_name: str, row: str, seed: int, budget: int,
                   earlier: list | None) -> dict[str, Any]:
    """One row's run on the current task, told the earlier search's results where the row uses them."""
    import torch

    from spearmint_nn.search.optimizer import Optimizer

    torch.set_num_threads(1)
    problem = PROBLEMS[problem_name]
    kind, _, design = row.partition("@")
    options: dict[str, Any] = {"model": "gp-nowarp"} if kind == "multi-task" else {}
    if design:
        options["initial_design"] = int(design)
    related = [(problem.related_variables, earlier)] if earlier is not None else []
    opt = Optimizer(problem.variables, seed=seed, budget=budget, related=related, **options)
    values, seconds = [], []
    for _ in range(budget):
        params = opt.suggest(1)[0]
        seconds.append(opt.last_suggest_seconds)
        values.append(problem.current(params))
        opt.observe(params, values[-1])
    summary = opt.related_summary()
    return {"problem": problem_name, "row": row, "seed": seed, "values": values, "suggest_seconds": seconds,
            "correlation": summary[0]["correlation"] if summary else None}


def _jsonable(results: list) -> list:
    """(params, value) pairs in JSON form: numpy arrays as lists."""
    return [({name: np.asarray(value).tolist() if isinstance(value, np.ndarray) else list(value)
              for name, value in params.items()}, float(y)) for params, y in results]


def evaluations_to_reach(values: list[float], target: float) -> float:
    """The first count of evaluations whose best is <= target; inf if none."""
    best = np.minimum.accumulate(np.asarray(values, dtype=float))
    reached = np.flatnonzero(best <= target)
    return float(reached[0] + 1) if len(reached) else math.inf


def summarise(runs: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """One row per (problem, row): evaluations to reach the single-task median best at the full
    budget, and the median best after half and all of it."""
    rows = []
    for problem in sorted({r["problem"] for r in runs}):
        single = [min(r["values"][:budget]) for r in runs if r["problem"] == problem and r["row"] == "single"]
        target = float(np.median(single)) if single else math.nan
        for row in sorted({r["row"] for r in runs}, key=lambda name: (ROWS.index(name.partition("@")[0]), name)):
            group = [r for r in runs if r["problem"] == problem and r["row"] == row]
            if not group:
                continue
            reach = [evaluations_to_reach(r["values"][:budget], target) for r in group]
            correlations = [r["correlation"][0] for r in group if r.get("correlation")]
            rows.append({
                "problem": problem, "row": row, "seeds": len(group), "target": target,
                "evaluations_to_target": float(np.median(reach)),
                "reached": sum(math.isfinite(x) for x in reach),
                "best_at_half": float(np.median([min(r["values"][:budget // 2]) for r in group])),
                "best_at_budget": float(np.median([min(r["values"][:budget]) for r in group])),
                "correlation": float(np.median(correlations)) if correlations else None,
                "s_per_suggestion": float(np.mean([s for r in group for s in r["suggest_seconds"]])),
            })
    return rows


def table(rows: list[dict[str, Any]], budget: int) -> str:
    head = ["problem", "row", "evaluations to target", "reached", f"best after {budget // 2}",
            f"best after {budget}", "correlation", "s/suggestion"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        reach = f"{r['evaluations_to_target']:.0f}" if math.isfinite(r["evaluations_to_target"]) else f"> {budget}"
        corr = "-" if r["correlation"] is None else f"{r['correlation']:+.2f}"
        lines.append(" | ".join([r["problem"], r["row"], reach, f"{r['reached']}/{r['seeds']}",
                                 f"{r['best_at_half']:.4g}", f"{r['best_at_budget']:.4g}", corr,
                                 f"{r['s_per_suggestion']:.2f}"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser("transfer", __doc__, json=True, seeds="0-9", workers=True)
    parser.add_argument("--problems", default="hartmann6,digits-mlp", help=f"comma-separated, from {', '.join(PROBLEMS)}")
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated, from " + ", ".join(ROWS))
    parser.add_argument("--budget", type=int, default=30, help="evaluations of the current task per run")
    parser.add_argument("--related-budget", type=int, default=30, help="evaluations of the earlier search")
    args = parser.parse_args(argv)
    problems, rows = args.problems.split(","), args.rows.split(",")
    unknown = [r for r in rows if r.partition("@")[0] not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    load_before, start = os.getloadavg(), time.time()
    kinds = {"unrelated" if r.startswith("unrelated") else "related" for r in rows if not r.startswith("single")}
    earlier = {}
    searches = [(p, kind, s, args.related_budget) for p in problems for kind in sorted(kinds) for s in args.seeds]
    for job, search in run_in_processes(related_search, searches, args.workers):
        earlier[job[:3]] = search["results"]
    jobs = [(p, row, s, args.budget, None if row.startswith("single") else
             earlier[(p, "unrelated" if row.startswith("unrelated") else "related", s)])
            for p in problems for row in rows for s in args.seeds]
    runs = []
    for _, run in run_in_processes(current_search, jobs, args.workers):
        runs.append(run)
        print(f"{run['problem']} {run['row']} seed {run['seed']}: best {min(run['values']):.4f}", file=sys.stderr,
              flush=True)
        if args.json:
            write_report(args.json, load_before, start, arguments=vars(args), summary=summarise(runs, args.budget),
                         runs=runs, related_searches={"|".join(map(str, k)): v for k, v in earlier.items()})
    print(table(summarise(runs, args.budget), args.budget))
    print(f"budget {args.budget}, related budget {args.related_budget}; {os.cpu_count()} CPUs, load "
          f"{load_before[0]:.1f} before, {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
