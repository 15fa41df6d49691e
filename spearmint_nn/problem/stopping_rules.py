"""Early stopping of running jobs: the config key ``early-stopping`` and its rules.

``"early-stopping": {"rule": "model", "min-steps": 5}`` opts an experiment in (absent: no job
is ever stopped). At each poll the daemon asks :func:`decide` about every running job whose
learning curve (:mod:`spearmint_nn.experiment.curves`) has new reports, and stops the job when
the rule says so (:mod:`spearmint_nn.daemon.policies.early_stopping`). The rules are pure functions of
the job's curve, the other jobs' curves and final values, and the direction; they are the same
for a daemon that was restarted, because they keep nothing between calls except the step up to
which a job was already judged (``since``), which a restarted daemon does not know.

Keys (unknown ones are an error, naming the key):

* ``rule``: ``"model"`` (the default: on the benchmark's problems it ends ahead of the other two
  and of Optuna's pruners, ``benchmarks/RESULTS.md``), ``"median"`` or ``"asha"``;
* ``min-steps`` (default 0): no decision while the job's last reported step is below it;
* ``max-steps`` (default null): a job's full budget in steps; ASHA needs it (no rung at or
  beyond it);
* median: ``percentile`` (default 50), ``min-jobs`` (default 5);
* ASHA: ``reduction-factor`` (default 3), ``min-resource`` (default 1);
* model: ``probability`` (default 0.05), ``min-jobs`` (default 5).

Whatever the rule, a job whose best value so far is better than the best final value of every
complete job (the incumbent's) is never stopped: it is on its way to be the new best.

The ask/tell Optimizer asks the same rules with the same options
(``Optimizer(..., early_stopping={...})``, :class:`spearmint_nn.search.observations.Curves`),
which is why they live under ``problem/``, below both the experiment folder and the search.
Torch-free (the config module reads it in every job process).
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping, Sequence

from ..errors import ConfigError, did_you_mean
from .settings import parse_direction

MEDIAN, ASHA, MODEL = "median", "asha", "model"
RULES = (MEDIAN, ASHA, MODEL)
COMMON_KEYS = ("rule", "min-steps", "max-steps")
RULE_KEYS = {MEDIAN: ("percentile", "min-jobs"), ASHA: ("reduction-factor", "min-resource"),
             MODEL: ("probability", "min-jobs")}
# Optuna's MedianPruner defaults: the 50th percentile, and no pruning before 5 trials completed
# (n_startup_trials); Li et al.'s and Ray Tune's reduction factor 3 and grace period 1.
DEFAULTS = {"percentile": 50.0, "min-jobs": 5, "reduction-factor": 3.0, "min-resource": 1.0, "probability": 0.05}
# A stopped job's final value is predicted from at least this many complete jobs' moves (fewer:
# it stays a pending point, see predict_final); the 3 that give a mean and a spread at all.
PREDICTION_MIN_JOBS = 3


@dataclass(frozen=True)
class Report:
    """One report: ``step`` (an int when written as one), ``value``, and the job's attempt (the
    report files' lines, :mod:`spearmint_nn.experiment.curves`; one ``Optimizer.report`` call)."""

    step: int | float
    value: float
    attempt: int = 1


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


@dataclass(frozen=True)
class Other:
    """Another job as a rule sees it: its curve, and its final objective value when it
    completed and met its constraints (None: running, stopped, failed or infeasible).

    Its lookups are cached, so that judging every running job at one poll against the same
    others costs a binary search per other and job, not a pass over each curve (200 jobs in
    flight against 1000 curves of 50 reports: 10 million steps a poll otherwise)."""

    curve: Sequence[Report]
    final: float | None = None

    @cached_property
    def last_step(self) -> float | None:
        """The furthest step the job reported (None: no report)."""
        return max((r.step for r in self.curve), default=None)

    def reached(self, t: float) -> bool:
        """Whether the job reported at a step >= t."""
        return self.last_step is not None and self.last_step >= t

    @cached_property
    def _steps(self) -> list[float] | None:
        """The steps in file order when they never go back (else None: looked up by a pass)."""
        steps = [r.step for r in self.curve]
        return steps if all(a <= b for a, b in zip(steps, steps[1:])) else None

    @cached_property
    def _prefix_best(self) -> dict[float, list[float]]:
        return {}

    def best_by(self, t: float, sign: float) -> float | None:
        """:func:`running_best` of the curve at steps <= t."""
        if self._steps is None:
            return running_best(self.curve, sign, t)
        if sign not in self._prefix_best:
            prefix, best = [], math.inf
            for r in self.curve:
                best = min(best, sign * r.value)
                prefix.append(sign * best)
            self._prefix_best[sign] = prefix
        n = bisect_right(self._steps, t)
        return self._prefix_best[sign][n - 1] if n else None

    def value_at(self, rung: float) -> float | None:
        """:func:`value_at_rung` of the curve."""
        if self._steps is None:
            return value_at_rung(self.curve, rung)
        i = bisect_left(self._steps, rung)
        return self.curve[i].value if i < len(self.curve) else None


@dataclass(frozen=True)
class Decision:
    """A rule's answer: stop or not, and one line saying why (for the log and the job record)."""

    stop: bool
    why: str


def _number(path: str, value: Any, minimum: float, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < minimum or (strict and value == minimum):
        raise ConfigError(path, f"must be a number {'>' if strict else '>='} {minimum:g} (got {value!r})")
    return float(value)


def parse_early_stopping(path: str, value: Any) -> StoppingSettings | None:
    """The ``early-stopping`` key's value (null or absent: None, no stopping); ConfigError
    naming the key (``early-stopping.rule``, ...)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be an object such as {{\"rule\": \"median\", \"min-steps\": 5}} (got {value!r})")
    rule = value.get("rule", MODEL)
    if not isinstance(rule, str) or rule.lower() not in RULES:
        hint = did_you_mean(rule, RULES) if isinstance(rule, str) else ""
        raise ConfigError(f"{path}.rule", f"must be one of {', '.join(RULES)} (got {rule!r}){hint}")
    rule = rule.lower()
    known = COMMON_KEYS + RULE_KEYS[rule]
    for key in value:
        if key not in known:
            other = [name for name, keys in RULE_KEYS.items() if key in keys]
            why = f"an option of rule {other[0]}, not {rule}" if other else f"unknown key; known: {', '.join(known)}"
            raise ConfigError(f"{path}.{key}", why)
    min_steps = _number(f"{path}.min-steps", value.get("min-steps", 0), 0)
    max_steps = value.get("max-steps")
    max_steps = None if max_steps is None else _number(f"{path}.max-steps", max_steps, 0, strict=True)
    if max_steps is not None and min_steps >= max_steps:
        raise ConfigError(f"{path}.min-steps", f"must be below max-steps ({min_steps:g} >= {max_steps:g})")
    if rule in (MEDIAN, MODEL):
        min_jobs = value.get("min-jobs", DEFAULTS["min-jobs"])
        if isinstance(min_jobs, bool) or not isinstance(min_jobs, int) or min_jobs < 1:
            raise ConfigError(f"{path}.min-jobs", f"must be an integer >= 1 (got {min_jobs!r})")
    if rule == MODEL:
        probability = _number(f"{path}.probability", value.get("probability", DEFAULTS["probability"]), 0)
        if probability >= 1:
            raise ConfigError(f"{path}.probability", f"must be a number from 0 to below 1 (got {probability:g})")
        return StoppingSettings(rule, min_steps, max_steps, min_jobs=min_jobs, probability=probability)
    if rule == MEDIAN:
        percentile = _number(f"{path}.percentile", value.get("percentile", DEFAULTS["percentile"]), 0)
        if percentile > 100:
            raise ConfigError(f"{path}.percentile", f"must be a number from 0 to 100 (got {percentile:g})")
        return StoppingSettings(rule, min_steps, max_steps, percentile=percentile, min_jobs=min_jobs)
    if max_steps is None:
        raise ConfigError(f"{path}.max-steps", "required by rule asha: a job's full budget in steps (its rungs "
                          "lie below it)")
    eta = _number(f"{path}.reduction-factor", value.get("reduction-factor", DEFAULTS["reduction-factor"]), 1,
                  strict=True)
    resource = _number(f"{path}.min-resource", value.get("min-resource", DEFAULTS["min-resource"]), 0, strict=True)
    if resource >= max_steps:
        raise ConfigError(f"{path}.min-resource", f"must be below max-steps ({resource:g} >= {max_steps:g})")
    return StoppingSettings(rule, min_steps, max_steps, reduction_factor=eta, min_resource=resource)


# ---- the rules ---------------------------------------------------------------------------------

def running_best(curve: Sequence[Report], sign: float, until: float | None = None) -> float | None:
    """The best value of the reports at steps <= ``until`` (all: None); None without any.
    ``sign``: 1 to minimise, -1 to maximise."""
    values = [r.value for r in curve if until is None or r.step <= until]
    return min(values, key=lambda v: sign * v) if values else None


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, interpolated linearly between the closest
    ranks (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def decide(settings: StoppingSettings, curve: Sequence[Report], others: Sequence[Other],
           direction: str = "minimize", since: float | None = None) -> Decision:
    """Whether to stop a running job whose reports so far are ``curve`` (in file order), given
    the other jobs; ``since``: the last step at which this job was judged before (None: never,
    or not known). The checks every rule shares come first: min-steps, and the incumbent."""
    sign = parse_direction(direction)
    if not curve:
        return Decision(False, "no report yet")
    step = max(r.step for r in curve)
    if step < settings.min_steps:
        return Decision(False, f"step {step:g} is below min-steps {settings.min_steps:g}")
    best = running_best(curve, sign)
    incumbent = incumbent_of(others, sign)
    if incumbent is not None and sign * best < sign * incumbent:
        return Decision(False, f"its best so far {best:.6g} beats the best final value {incumbent:.6g}")
    if settings.rule == MEDIAN:
        return median_rule(settings, curve, others, sign)
    if settings.rule == MODEL:
        return model_rule(settings, curve, others, sign, incumbent)
    return asha_rule(settings, curve, others, sign, since)


def median_rule(settings: StoppingSettings, curve: Sequence[Report], others: Sequence[Other],
                sign: float) -> Decision:
    """The median rule of Optuna's ``MedianPruner`` (``PercentilePruner`` with another
    percentile; Golovin et al. 2017, "Google Vizier", the median stopping rule): at the job's
    last step t, stop it when its best value so far is worse than the ``percentile``-th
    percentile (the median by default; for maximisation 100 - percentile, as Optuna) of the
    running best values at t of the complete jobs whose curves reached t, once there are at
    least ``min-jobs`` of them. The job's own curve is compared at its latest step, so a job
    whose steps the others never reached is not judged."""
    t = max(r.step for r in curve)
    reached = [o.best_by(t, sign) for o in others if o.final is not None and o.reached(t)]
    reached = [v for v in reached if v is not None]
    if len(reached) < settings.min_jobs:
        return Decision(False, f"{len(reached)} complete job(s) reached step {t:g}, fewer than min-jobs "
                               f"{settings.min_jobs}")
    q = settings.percentile if sign > 0 else 100.0 - settings.percentile
    cutoff = percentile(reached, q)
    best = running_best(curve, sign)
    word = "median" if settings.percentile == 50 else f"{settings.percentile:g}th percentile"
    if sign * best > sign * cutoff:
        return Decision(True, f"median rule: its best value {best:.6g} by step {t:g} is worse than the {word} "
                              f"{cutoff:.6g} of {len(reached)} complete jobs at that step")
    return Decision(False, f"its best value {best:.6g} by step {t:g} is no worse than the {word} {cutoff:.6g}")


def rungs(settings: StoppingSettings) -> list[float]:
    """ASHA's rungs: min-resource * reduction-factor^k, each below max-steps."""
    out, rung = [], settings.min_resource
    while settings.max_steps is not None and rung < settings.max_steps:
        out.append(rung)
        rung *= settings.reduction_factor
    return out


def value_at_rung(curve: Sequence[Report], rung: float) -> float | None:
    """A job's value at a rung: that of its first report (in file order) at a step >= the rung,
    as ASHA records a trial when it reaches the rung; None if it has not reached it."""
    return next((r.value for r in curve if r.step >= rung), None)


def asha_rule(settings: StoppingSettings, curve: Sequence[Report], others: Sequence[Other],
              sign: float, since: float | None = None) -> Decision:
    """Asynchronous successive halving (Li et al. 2020, "A System for Massively Parallel
    Hyperparameter Tuning", MLSys; in its stopping form, as Ray Tune's ``ASHAScheduler`` and
    syne-tune's stopping ASHA run it): rungs at min-resource * eta^k steps below max-steps; a job
    reaching a rung continues only if its value there is in the top 1/eta of the values of every
    job that reached that rung (itself included), that is no worse than their (1 - 1/eta)
    quantile for the better direction; else it is stopped. Each rung is judged once, when the
    job's new reports cross it (the rungs above ``since``; with ``since`` None, only the
    highest rung reached, as a restarted daemon cannot know the earlier ones were passed)."""
    t = max(r.step for r in curve)
    crossed = [rung for rung in rungs(settings) if rung <= t and (since is None or rung > since)]
    if since is None:
        crossed = crossed[-1:]
    for rung in crossed:
        mine = value_at_rung(curve, rung)
        recorded = [v for v in (o.value_at(rung) for o in others) if v is not None] + [mine]
        # the top 1/eta in the better direction: at or below the 1/eta quantile when minimising
        q = 100.0 / settings.reduction_factor if sign > 0 else 100.0 * (1 - 1 / settings.reduction_factor)
        cutoff = percentile(recorded, q)
        if sign * mine > sign * cutoff:
            return Decision(True, f"ASHA: its value {mine:.6g} at rung {rung:g} is not in the top "
                                  f"1/{settings.reduction_factor:g} of the {len(recorded)} jobs that reached it "
                                  f"(cutoff {cutoff:.6g})")
    if not crossed:
        return Decision(False, f"no new rung reached by step {t:g}")
    return Decision(False, f"in the top 1/{settings.reduction_factor:g} at rung {crossed[-1]:g}")


def model_rule(settings: StoppingSettings, curve: Sequence[Report], others: Sequence[Other], sign: float,
               incumbent: float | None) -> Decision:
    """A model of where the job is heading, from the complete jobs' curves: stop it when the
    probability that its final value beats the incumbent's is below ``probability``.

    At the job's last step t, each complete job j whose curve reached t says how much a job
    still moves from its best by t to its final value: d_j = final_j - best_j(t). The job's
    final value is modelled as its best by t plus such a move, a mixture of normals centred on
    best + d_j with Silverman's bandwidth (1.06 sd n^(-1/5), and at least 1% of the moves'
    range and of the incumbent's size, so that identical moves still leave some doubt): the
    empirical predictive distribution of learning-curve extrapolation by analogy with the jobs
    that finished (the spirit of freeze-thaw's "how far will this curve still go", Swersky,
    Snoek and Adams 2014, without its kernel). It needs ``min-jobs`` complete jobs at t and an
    incumbent; then P(final better than the incumbent) = mean_j Phi((incumbent - (best + d_j)) / h),
    sign-flipped for maximisation."""
    t = max(r.step for r in curve)
    moves = _moves(others, t, sign)
    if incumbent is None or len(moves) < settings.min_jobs:
        return Decision(False, f"{len(moves)} complete job(s) reached step {t:g}, fewer than min-jobs "
                               f"{settings.min_jobs}")
    best = running_best(curve, sign)
    n = len(moves)
    sd = _sd(moves)
    floor = 0.01 * max(max(moves) - min(moves), abs(incumbent), 1e-12)
    h = max(1.06 * sd * n ** -0.2, floor)
    chance = sum(0.5 * math.erfc(-sign * (incumbent - (best + d)) / (h * math.sqrt(2))) for d in moves) / n
    if chance < settings.probability:
        return Decision(True, f"model: P(its final value beats the best {incumbent:.6g}) = {chance:.3g} < "
                              f"{settings.probability:g}, from its best {best:.6g} by step {t:g} and the moves "
                              f"after that step of {n} complete jobs")
    return Decision(False, f"P(its final value beats the best {incumbent:.6g}) = {chance:.3g}")


# ---- what a stopped job would have reached -----------------------------------------------------

@dataclass(frozen=True)
class Prediction:
    """A stopped job's predicted final value, the spread of that guess, and the number of
    complete jobs it rests on (:func:`predict_final`)."""

    value: float
    sd: float
    jobs: int


def predict_final(curve: Sequence[Report], others: Sequence[Other], direction: str = "minimize") -> Prediction | None:
    """Where a stopped job was heading: its best value by its last step t plus the mean move
    after t of the complete jobs whose curves reached t (the model rule's analogy, its mean
    instead of its mixture), with the moves' standard deviation; None when fewer than
    PREDICTION_MIN_JOBS complete jobs reached t (or no report), where there is nothing to
    extrapolate from.

    The value is never better than the incumbent's final value: the job was stopped because a
    rule judged it would not beat it, and a guess must not become the best a search reports or
    improves on (the complete jobs' moves come from the curves that survived, which improve
    more than a stopped one would)."""
    sign = parse_direction(direction)
    if not curve:
        return None
    moves = _moves(others, max(r.step for r in curve), sign)
    if len(moves) < PREDICTION_MIN_JOBS:
        return None
    value = running_best(curve, sign) + sum(moves) / len(moves)
    incumbent = incumbent_of(others, sign)
    if incumbent is not None and sign * value < sign * incumbent:
        value = incumbent
    return Prediction(value, _sd(moves), len(moves))


def incumbent_of(others: Sequence[Other], sign: float) -> float | None:
    """The best final value of the others (None: no feasible complete job)."""
    finals = [o.final for o in others if o.final is not None and math.isfinite(o.final)]
    return min(finals, key=lambda v: sign * v) if finals else None


def _moves(others: Sequence[Other], t: float, sign: float) -> list[float]:
    """final_j - best_j(t) of each complete job j whose curve reached step t."""
    return [o.final - b for o in others if o.final is not None and o.reached(t)
            and (b := o.best_by(t, sign)) is not None]


def _sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / max(len(values) - 1, 1))
