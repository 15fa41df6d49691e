"""The config key ``early-stopping``, parsed: which rule, and its options.

``"early-stopping": {"rule": "model", "min-steps": 5}`` opts an experiment in (absent: no job
is ever stopped). Keys (unknown ones are an error, naming the key):

* ``rule``: ``"model"`` (the default: on the benchmark's problems it ends ahead of the other two
  and of Optuna's pruners, ``experiments/benchmarks/RESULTS.md``), ``"median"`` or ``"asha"``;
* ``min-steps`` (default 0): no decision while the job's last reported step is below it;
* ``max-steps`` (default null): a job's full budget in steps; ASHA needs it (no rung at or
  beyond it);
* median: ``percentile`` (default 50), ``min-jobs`` (default 5);
* ASHA: ``reduction-factor`` (default 3), ``min-resource`` (default 1);
* model: ``probability`` (default 0.05), ``min-jobs`` (default 5).

The ask/tell Optimizer takes the same object (``Optimizer(..., early_stopping={...})``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import ConfigError, did_you_mean
from ..problem.parsers import number

MEDIAN, ASHA, MODEL = "median", "asha", "model"
RULE_NAMES = (MEDIAN, ASHA, MODEL)
COMMON_KEYS = ("rule", "min-steps", "max-steps")
RULE_KEYS = {MEDIAN: ("percentile", "min-jobs"), ASHA: ("reduction-factor", "min-resource"),
             MODEL: ("probability", "min-jobs")}
# Optuna's MedianPruner defaults: the 50th percentile, and no pruning before 5 trials completed
# (n_startup_trials); Li et al.'s and Ray Tune's reduction factor 3 and grace period 1.
DEFAULTS = {"percentile": 50.0, "min-jobs": 5, "reduction-factor": 3.0, "min-resource": 1.0, "probability": 0.05}


@dataclass(frozen=True)
class StoppingSettings:
    """The ``early-stopping`` key, parsed (see the module docstring for each field's meaning)."""

    rule: str = MODEL
    min_steps: float = 0.0
    max_steps: float | None = None
    percentile: float = DEFAULTS["percentile"]
    min_jobs: int = int(DEFAULTS["min-jobs"])
    reduction_factor: float = DEFAULTS["reduction-factor"]
    min_resource: float = DEFAULTS["min-resource"]
    probability: float = DEFAULTS["probability"]


def parse_early_stopping(path: str, value: Any) -> StoppingSettings | None:
    """The ``early-stopping`` key's value (null or absent: None, no stopping); ConfigError
    naming the key (``early-stopping.rule``, ...)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be an object such as {{\"rule\": \"median\", \"min-steps\": 5}} (got {value!r})")
    rule = value.get("rule", MODEL)
    if not isinstance(rule, str) or rule.lower() not in RULE_NAMES:
        hint = did_you_mean(rule, RULE_NAMES) if isinstance(rule, str) else ""
        raise ConfigError(f"{path}.rule", f"must be one of {', '.join(RULE_NAMES)} (got {rule!r}){hint}")
    rule = rule.lower()
    known = COMMON_KEYS + RULE_KEYS[rule]
    for key in value:
        if key not in known:
            other = [name for name, keys in RULE_KEYS.items() if key in keys]
            why = f"an option of rule {other[0]}, not {rule}" if other else f"unknown key; known: {', '.join(known)}"
            raise ConfigError(f"{path}.{key}", why)
    min_steps = number(0)(f"{path}.min-steps", value.get("min-steps", 0))
    max_steps = value.get("max-steps")
    max_steps = None if max_steps is None else number(0, strict=True)(f"{path}.max-steps", max_steps)
    if max_steps is not None and min_steps >= max_steps:
        raise ConfigError(f"{path}.min-steps", f"must be below max-steps ({min_steps:g} >= {max_steps:g})")
    if rule in (MEDIAN, MODEL):
        min_jobs = value.get("min-jobs", DEFAULTS["min-jobs"])
        if isinstance(min_jobs, bool) or not isinstance(min_jobs, int) or min_jobs < 1:
            raise ConfigError(f"{path}.min-jobs", f"must be an integer >= 1 (got {min_jobs!r})")
    if rule == MODEL:
        probability = number(0)(f"{path}.probability", value.get("probability", DEFAULTS["probability"]))
        if probability >= 1:
            raise ConfigError(f"{path}.probability", f"must be a number from 0 to below 1 (got {probability:g})")
        return StoppingSettings(rule, min_steps, max_steps, min_jobs=min_jobs, probability=probability)
    if rule == MEDIAN:
        percentile = number(0)(f"{path}.percentile", value.get("percentile", DEFAULTS["percentile"]))
        if percentile > 100:
            raise ConfigError(f"{path}.percentile", f"must be a number from 0 to 100 (got {percentile:g})")
        return StoppingSettings(rule, min_steps, max_steps, percentile=percentile, min_jobs=min_jobs)
    if max_steps is None:
        raise ConfigError(f"{path}.max-steps", "required by rule asha: a job's full budget in steps (its rungs "
                          "lie below it)")
    eta = number(1, strict=True)(f"{path}.reduction-factor", value.get("reduction-factor", DEFAULTS["reduction-factor"]))
    resource = number(0, strict=True)(f"{path}.min-resource", value.get("min-resource", DEFAULTS["min-resource"]))
    if resource >= max_steps:
        raise ConfigError(f"{path}.min-resource", f"must be below max-steps ({resource:g} >= {max_steps:g})")
    return StoppingSettings(rule, min_steps, max_steps, reduction_factor=eta, min_resource=resource)
