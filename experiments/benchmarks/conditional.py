"""Conditional-space benchmark: conditional-aware encoding vs a flat encoding vs random search.

Two problems:

``synthetic`` has a known optimum. A branch switch selects which parameters exist:

* ``branch = "bowl"``: ``f = 1 + sum_i (u_i - 0.3)^2`` over ``u`` (size 2) in [0, 1]; best 1.0;
* ``branch = "branin"``: Branin on ``bx`` in [-5, 10], ``by`` in [0, 15]; best 0.397887;
* ``branch = "steps"``: ``depth`` layers (INT 1..3), each ``w_k`` (log scale, [1e-3, 1]) only
  for existing layers; ``f = 0.8 + sum_k (log10 w_k + 2)^2 / 4 + 0.1 (3 - depth)``; best 0.8.

Plus a shared log-scale ``rate`` in [1e-4, 1] adding ``0.05 (log10 rate + 2)^2``. The global
minimum is 0.397887 (Branin branch, rate = 0.01).

``mlp`` is the experiment ``experiments/conditional_mlp`` of this repository: ``main(0, params)``
of its ``mlp.py`` (validation MSE of a torch MLP with 1 to 3 hidden layers, each layer's width
and dropout only for existing layers; a fixed data set generated in code) over the variables
of its ``config.json``. Its optimum is unknown; lower is better.

Arms: *conditional* (the variables as declared), *flat* (the same variables with every
``when`` removed: the optimizer sees and proposes every parameter all the time, the objective
reads only the active ones, so the model has to learn that the others do not matter) and
*random* (scrambled Sobol over the declared space). The two model arms use ``--model``
(default "auto", the users' default: the GP, with the arc kernel on a conditional space, below
200 observations).

Each (problem, arm, seed) run is one sequential run of ``--evals`` evaluations in its own
process; ``--workers`` run at once. ``--json`` is rewritten as each run ends, with every run's
values, so an interrupted benchmark keeps what finished; progress goes to stderr. Reported per
problem and arm: median [IQR] over seeds of the best value at a third, two thirds and all of
the budget, mean seconds per suggestion (over all suggestions, the initial Sobol design
included: it has the same size in both model arms) and mean wall seconds per evaluation (for
``mlp``: per training, 30 epochs, see that module).

    python -m experiments.benchmarks.conditional [--problems synthetic,mlp] [--seeds 10]
        [--evals synthetic:60 mlp:30] [--model auto] [--workers 1] [--json out.json] [--reuse earlier.json]
"""
from __future__ import annotations

import importlib.util
import json
import math
import platform
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping

import numpy as np
import torch

from spearmint_nn.problem.settings import RANDOM_SEARCH
from spearmint_nn.search.optimizer import Optimizer

from .command_line import benchmark_parser, invocation
from .provenance import write_json
from .runs import earlier_runs, reused_and_new, run_in_processes
from .summary import best_so_far, quartiles

SYNTHETIC_BEST = 0.39788735772973816

SYNTHETIC_VARIABLES: dict[str, Any] = {
    "branch": {"type": "ENUM", "options": ["bowl", "branin", "steps"]},
    "u": {"type": "FLOAT", "size": 2, "min": 0.0, "max": 1.0, "when": {"branch": "bowl"}},
    "bx": {"type": "FLOAT", "min": -5.0, "max": 10.0, "when": {"branch": "branin"}},
    "by": {"type": "FLOAT", "min": 0.0, "max": 15.0, "when": {"branch": "branin"}},
    "depth": {"type": "INT", "min": 1, "max": 3, "when": {"branch": "steps"}},
    "w_1": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"depth": {">=": 1}}},
    "w_2": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"depth": {">=": 2}}},
    "w_3": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"depth": 3}},
    "rate": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"},
}

# The experiment folder of the mlp problem: <repo>/experiments/conditional_mlp, next to the package.
MLP_EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "conditional_mlp"

PROBLEMS = ("synthetic", "mlp")
DEFAULT_EVALS = {"synthetic": 60, "mlp": 30}
ARMS = ("conditional", "flat", "random")


def flat_variables(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The same variables with every condition removed."""
    return {name: {k: v for k, v in spec.items() if k != "when"} for name, spec in variables.items()}


def branin(x: float, y: float) -> float:
    a, b, c, r, s, t = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    return a * (y - b * x**2 + c * x - r) ** 2 + s * (1 - t) * math.cos(x) + s


def synthetic_objective(params: Mapping[str, Any]) -> float:
    """The synthetic conditional function; reads only the parameters active for its branch."""
    def first(name: str) -> Any:
        value = params[name]
        return value[0] if isinstance(value, (list, np.ndarray)) else value

    branch = first("branch")
    shared = 0.05 * (math.log10(first("rate")) + 2) ** 2
    if branch == "bowl":
        return 1.0 + float(np.sum((np.asarray(params["u"], dtype=float) - 0.3) ** 2)) + shared
    if branch == "branin":
        return branin(first("bx"), first("by")) + shared
    depth = int(first("depth"))
    layers = sum((math.log10(first(f"w_{k}")) + 2) ** 2 / 4 for k in range(1, depth + 1))
    return 0.8 + layers + 0.1 * (3 - depth) + shared


def load_mlp_experiment(folder: Path | None = None) -> tuple[dict[str, Any], ModuleType]:
    """The variables of the MLP experiment's config.json (in ``folder``, default
    :data:`MLP_EXPERIMENT`) and its main-file loaded as a module.

    Raises FileNotFoundError naming the folder when the experiment is not there (the package
    installed without the repository's ``experiments`` folder).
    """
    folder = MLP_EXPERIMENT if folder is None else folder
    config_path, script = folder / "config.json", folder / "mlp.py"
    missing = [str(p) for p in (config_path, script) if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"the mlp problem needs the experiment folder experiments/conditional_mlp of the "
            f"spearmint-nn repository; not found: {', '.join(missing)} (run from a source "
            f"checkout, or use --problems synthetic)")
    with open(config_path) as f:
        variables = json.load(f)["variables"]
    spec = importlib.util.spec_from_file_location("conditional_mlp_experiment", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return variables, module


def problem_definition(problem: str) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], float]]:
    """(declared variables, objective of wrapper-form params) of a problem named in PROBLEMS."""
    if problem == "synthetic":
        return SYNTHETIC_VARIABLES, synthetic_objective
    if problem == "mlp":
        variables, module = load_mlp_experiment()
        return variables, lambda params: module.main(0, params)
    raise ValueError(f"unknown problem {problem!r}; known: {', '.join(PROBLEMS)}")


def run_once(problem: str, arm: str, seed: int, evals: int, model: str) -> dict[str, Any]:
    """One sequential run of ``arm`` on ``problem``.

    Returns the evaluated params (JSON form) and objective values in evaluation order (NaN
    where the evaluation failed), the seconds of each suggestion and the wall seconds of each
    evaluation.
    """
    torch.set_num_threads(1)
    declared, objective = problem_definition(problem)
    variables = flat_variables(declared) if arm == "flat" else declared
    opt = Optimizer(variables, model=RANDOM_SEARCH if arm == "random" else model, seed=seed, budget=evals)
    points, values, suggest_seconds, eval_seconds = [], [], [], []
    for _ in range(evals):
        params = opt.suggest(1)[0]
        suggest_seconds.append(opt.last_suggest_seconds)
        points.append(opt.space.to_json(params))
        start = time.perf_counter()
        value = float(objective(params))
        eval_seconds.append(time.perf_counter() - start)
        opt.observe(params, value)
        values.append(value)
    return {"params": points, "values": values, "suggest_seconds": suggest_seconds, "eval_seconds": eval_seconds}


def checkpoints(evals: int) -> list[int]:
    """Budgets at which the best value is reported: a third, two thirds and all of ``evals``."""
    return sorted({max(1, evals * k // 3) for k in (1, 2, 3)})


def summarise(runs: list[dict[str, Any]], evals: int) -> dict[str, Any]:
    """Median and quartiles over runs of the best value at each checkpoint, and mean timings."""
    best = np.array([best_so_far(r["values"]) for r in runs])  # (runs, evals)
    row: dict[str, Any] = {"seeds": len(runs), "checkpoints": {}}
    for c in checkpoints(evals):
        q25, q50, q75 = quartiles(best[:, c - 1])
        row["checkpoints"][str(c)] = {"median": q50, "q25": q25, "q75": q75}
    row["seconds_per_suggest"] = float(np.mean([np.mean(r["suggest_seconds"]) for r in runs]))
    row["seconds_per_evaluation"] = float(np.mean([np.mean(r["eval_seconds"]) for r in runs]))
    row["failed_evaluations"] = int(sum(np.isnan(r["values"]).sum() for r in runs))
    return row


def table(problem: str, rows: Mapping[str, dict[str, Any]], evals: int) -> str:
    """A markdown table of one problem's summaries (arm -> :func:`summarise` row)."""
    marks = checkpoints(evals)
    per_eval = "s / training" if problem == "mlp" else "s / evaluation"
    lines = ["| arm | seeds | " + " | ".join(f"best @{c} median [IQR]" for c in marks)
             + f" | s / suggestion | {per_eval} |",
             "| --- | ---: |" + " --- |" * len(marks) + " ---: | ---: |"]
    for arm, row in rows.items():
        cells = [f"{q['median']:.4g} [{q['q25']:.4g}, {q['q75']:.4g}]" for q in row["checkpoints"].values()]
        lines.append(f"| {arm} | {row['seeds']} | " + " | ".join(cells)
                     + f" | {row['seconds_per_suggest']:.2f} | {row['seconds_per_evaluation']:.3g} |")
    return "\n".join(lines)


def _parse_evals(entries: list[str]) -> dict[str, int]:
    evals = dict(DEFAULT_EVALS)
    for entry in entries:
        name, _, count = entry.partition(":")
        if name not in PROBLEMS or not count.isdigit() or int(count) < 1:
            raise ValueError(f"--evals entries are problem:count with problem in {', '.join(PROBLEMS)} (got {entry!r})")
        evals[name] = int(count)
    return evals


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = benchmark_parser("conditional", __doc__.split("\n\n")[0], json=True, seeds="10", seed_count=True,
                              workers=True, reuse=True)
    parser.add_argument("--problems", default=",".join(PROBLEMS), help=f"comma-separated, of {', '.join(PROBLEMS)}")
    parser.add_argument("--evals", nargs="*", default=[], metavar="PROBLEM:N",
                        help="evaluations per run, per problem (default " + " ".join(f"{p}:{n}" for p, n in DEFAULT_EVALS.items()) + ")")
    parser.add_argument("--model", default="auto", help="surrogate of the conditional and flat arms")
    args = parser.parse_args(argv)
    problems = [p for p in args.problems.split(",") if p]
    unknown = sorted(set(problems) - set(PROBLEMS))
    if unknown:
        parser.error(f"unknown problem(s) {', '.join(unknown)}; known: {', '.join(PROBLEMS)}")
    try:
        evals = _parse_evals(args.evals)
        if "mlp" in problems:
            load_mlp_experiment()
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    torch.set_num_threads(1)
    started = time.time()
    report: dict[str, Any] = {
        "command": invocation("conditional", argv),
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch_threads": 1,
                    "torch": torch.__version__, "workers": args.workers},
        "model": args.model, "seeds": args.seeds, "evals": {p: evals[p] for p in problems},
        "synthetic_best": SYNTHETIC_BEST, "runs": [], "summary": {},
    }

    def save() -> None:
        if args.json:
            report["wall_seconds"] = time.time() - started
            write_json(args.json, report)

    planned = [((problem, arm, seed), evals[problem], (problem, arm, seed, evals[problem], args.model))
               for problem in problems for arm in ARMS for seed in args.seeds]
    reused, jobs = reused_and_new(planned, earlier_runs(args.reuse, ("problem", "arm", "seed")))
    report["runs"].extend(reused)
    print(f"conditional benchmark: {len(jobs)} runs on {args.workers} worker(s), model {args.model}",
          file=sys.stderr, flush=True)
    for (problem, arm, seed, _, _), run in run_in_processes(run_once, jobs, args.workers):
        report["runs"].append({"problem": problem, "arm": arm, "seed": seed, **run})
        print(f"  {problem} {arm} seed {seed}: best {best_so_far(run['values'])[-1]:.5g}, "
              f"{np.mean(run['suggest_seconds']):.2f} s/suggestion", file=sys.stderr, flush=True)
        save()

    for problem in problems:
        rows = {}
        for arm in ARMS:
            runs = sorted((r for r in report["runs"] if r["problem"] == problem and r["arm"] == arm),
                          key=lambda r: r["seed"])
            rows[arm] = summarise(runs, evals[problem])
        report["summary"][problem] = rows
        known = f"; global minimum {SYNTHETIC_BEST:.6f}" if problem == "synthetic" else "; lower is better"
        print(f"\n{problem}: {len(args.seeds)} seeds x {evals[problem]} evaluations, model {args.model}{known}")
        print(table(problem, rows, evals[problem]), flush=True)
    save()
    return report


if __name__ == "__main__":
    main()
