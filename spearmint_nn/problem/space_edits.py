"""Jobs run under an earlier version of ``variables``: which of them the model can still use.

Editing the search space between two runs leaves the folder's finished jobs as they ran. Each
job's params are read as a point of the current space (:func:`fit_to_space`):

* a variable no longer declared is dropped from them (the model sees the job as if that variable
  did not matter, the usual reason to remove one), and so is the value of a variable that is now
  inactive under its ``when``;
* a variable the job lacks is taken at its ``default``; a new child whose parent is inactive in
  the job needs none;
* a job whose value the current variables no longer allow (outside a narrowed bound, an ENUM
  option no longer offered, a new variable without a default, another value than a fixed
  variable's) is kept from the model.

A fixed variable (``"value"``) is a variable like the others here: turning a searched variable
into a fixed one keeps the jobs run at that value, changing the value keeps none of the jobs
run at the old one, and searching it again keeps every job within its new range.

Jobs kept from the model still count against ``max-finished-jobs``: they were run.
:class:`EarlierJobs` tallies the reasons so that the daemon and ``status`` say it all in one line.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import ConfigError
from .space import Space, Variable
from .variables import shown


@dataclass(frozen=True)
class Fit:
    """One job's params read against the current space.

    ``params``: the point in JSON form, or None when it lies outside the space, ``outside``
    saying why (one short reason per variable that does not fit); ``dropped``: variables of
    the job that the space no longer declares; ``defaulted``: variables taken at their default.
    """

    params: dict[str, Any] | None
    outside: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    defaulted: tuple[str, ...] = ()


def fit_to_space(space: Space, params: Any) -> Fit:
    """``params`` (JSON form, as a job file holds them) as a point of ``space``: see the module."""
    if not isinstance(params, Mapping):
        return Fit(None, ("its params are not an object",))
    declared = set(space.names)
    dropped = tuple(name for name in params if name not in declared)
    point: dict[str, Any] = {}
    outside: list[str] = []
    defaulted: list[str] = []
    for var in space.parents_first:
        if not all(c.holds_in(point) for c in var.conditions):
            continue  # inactive: a value the job has for it says nothing under the current space
        if var.name in params:
            value = params[var.name]
        elif var.default is not None:
            value = list(var.default)
        else:
            outside.append(f"{var.name} missing (no default)")
            continue
        reasons = _why_outside(var, value)
        outside += reasons
        if not reasons:
            point[var.name] = value
            if var.name not in params:
                defaulted.append(var.name)
    if not outside:
        try:
            space.validate(point)
        except ConfigError as exc:  # an edit _why_outside does not name (a type changed, ...)
            outside.append(f"{exc.path.removeprefix('params.')}: {exc.problem}")
    if outside:
        return Fit(None, tuple(outside), dropped)
    return Fit(space.to_json(point), (), dropped, tuple(defaulted))


def _why_outside(var: Variable, value: Any) -> list[str]:
    """Why a job's value of ``var`` is no value of it now (empty when it is), in words that
    name the variable and the bound or option: "lr above max 0.1"."""
    elements = value if isinstance(value, list) else [value]
    if len(elements) != var.size:
        return [f"{var.name} has {len(elements)} element(s), now size {var.size}"]
    if var.is_fixed:
        # (a default other than the value lands here: the jobs without the variable ran at another one)
        return [] if elements == list(var.value) else [f"{var.name} not at its fixed value {shown(var.value)}"]
    if var.type == "ENUM":
        gone = [v for v in elements if v not in var.options]
        return [f"{var.name} option {v!r} no longer offered" for i, v in enumerate(gone) if v not in gone[:i]]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in elements):
        return [f"{var.name} is not a number"]
    reasons = []
    if var.type == "INT" and any(v != int(v) for v in elements):
        reasons.append(f"{var.name} is not an integer")
    if min(elements) < var.min:
        reasons.append(f"{var.name} below min {var.min:g}")
    if max(elements) > var.max:
        reasons.append(f"{var.name} above max {var.max:g}")
    return reasons


class EarlierJobs:
    """Tallies :func:`fit_to_space` over a folder's finished jobs for one line of each kind."""

    def __init__(self, space: Space):
        self.space = space
        self.outside = 0                       # jobs kept from the model
        self.reasons: Counter[str] = Counter()  # reason -> jobs
        self.dropped: Counter[str] = Counter()  # variable no longer declared -> jobs shown without it
        self.defaulted: Counter[str] = Counter()  # variable -> jobs shown with its default

    def fit(self, params: Any) -> dict[str, Any] | None:
        """The job's point in the current space (counted), or None when it lies outside it."""
        fit = fit_to_space(self.space, params)
        if fit.params is None:
            self.outside += 1
            self.reasons.update(fit.outside)
            return None
        self.dropped.update(fit.dropped)
        self.defaulted.update(fit.defaulted)
        return fit.params

    def outside_line(self) -> str | None:
        """The jobs kept from the model and why, in one line (None when there are none)."""
        return outside_line(self.outside, dict(self.reasons.most_common()))

    def adapted_line(self) -> str | None:
        """What was changed in the earlier jobs the model is shown, or None if nothing."""
        parts = [f"{name} is no longer a variable and is left out of {_jobs(n)}" for name, n in self.dropped.items()]
        parts += [f"{name} is taken at its default {_value(self.space, name)} for {_jobs(n)}"
                  for name, n in self.defaulted.items()]
        return "; ".join(parts) or None


def outside_line(jobs: int, reasons: Mapping[str, int]) -> str | None:
    """"12 earlier jobs lie outside the current variables and are not shown to the model: lr above
    max 0.1 (9 jobs), layers below min 2 (3 jobs); they still count against max-finished-jobs"
    from the number of jobs and each reason's (a job may have several); None for no job."""
    if not jobs:
        return None
    hint = (" (give a new variable a \"default\" to keep the jobs that lack it)"
            if any(reason.endswith("missing (no default)") for reason in reasons) else "")
    return (f"{_jobs(jobs)} lie outside the current variables and are not shown to the model: "
            + ", ".join(f"{reason} ({_jobs(n, earlier=False)})" for reason, n in reasons.items())
            + f"; they still count against max-finished-jobs{hint}")


def _jobs(n: int, earlier: bool = True) -> str:
    return f"{n} {'earlier ' if earlier else ''}job{'' if n == 1 else 's'}"


def _value(space: Space, name: str) -> str:
    return shown(next(var.default for var in space.declared if var.name == name))
