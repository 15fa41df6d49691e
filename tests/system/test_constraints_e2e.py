"""Crashed jobs as information: on the crash-region experiment, failures steer the search away.

The Optimizer is driven directly (no daemon) with the experiment's own wrapper functions. Two
arms with the same seed:

* constrained: a crash is observed as NaN, an infeasible observation of the implicit "success"
  constraint, so EI is multiplied by the constraint network's P(success);
* unconstrained: a crash is thrown away; the crashed points are passed as pending so that this
  arm does not simply repeat them, but nothing is learned about where runs crash.

One run's share of crashes swings with its path: over seeds 0-4 the constrained arm crashed in
0.65, 0.35, 0.5, 0.35 and 0.7 of jobs 21-40, the unconstrained one in 0.85-1.0 (measured
2026-11-26), and a single seed decided the test by a hair on one machine and not on another. So
the shares are averaged over three seeds, run two at a time (spawned processes: a forked child of
a process that has used torch's thread pool can hang).
"""
from __future__ import annotations

import importlib.util
import json
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import torch

from spearmint_nn.search.optimizer import Optimizer

torch.set_num_threads(1)

EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "crash_region"
N_JOBS = 40
WARMUP = 20
SEEDS = (0, 1, 2)


def _wrapper():
    spec = importlib.util.spec_from_file_location("crash_region_train", EXPERIMENT / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(learn_from_failures: bool, seed: int) -> tuple[list[bool], Optimizer]:
    train = _wrapper()
    variables = json.loads((EXPERIMENT / "config.json").read_text())["variables"]
    optimizer = Optimizer(variables, model="dngo", seed=seed)
    crashed, thrown_away = [], []
    for _ in range(N_JOBS):
        params = optimizer.suggest(1, pending=[] if learn_from_failures else thrown_away)[0]
        lr, momentum = float(params["learning_rate"][0]), float(params["momentum"][0])
        crashed.append(train.crashes(lr, momentum))
        if not crashed[-1]:
            optimizer.observe(params, train.final_loss(lr, momentum))
        elif learn_from_failures:
            optimizer.observe(params, math.nan)
        else:
            thrown_away.append(params)
    return crashed, optimizer


def _crash_share_and_incumbent(learn_from_failures: bool, seed: int) -> tuple[float, tuple | None]:
    """Share of jobs WARMUP+1..N_JOBS that crashed, and the incumbent (params, value) of one run.

    A spawned worker imports this module, whose top level already sets one torch thread.
    """
    crashed, optimizer = _run(learn_from_failures, seed)
    return sum(crashed[WARMUP:]) / (N_JOBS - WARMUP), optimizer.incumbent


@pytest.mark.slow
def test_failures_steer_proposals_out_of_the_crash_region() -> None:
    arms = [(learn, seed) for seed in SEEDS for learn in (True, False)]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = dict(zip(arms, pool.map(_crash_share_and_incumbent, *zip(*arms))))
    share = sum(results[True, seed][0] for seed in SEEDS) / len(SEEDS)
    share_baseline = sum(results[False, seed][0] for seed in SEEDS) / len(SEEDS)
    assert share_baseline > 0.5  # ignoring failures, most late jobs crash: the comparison means something
    # Learning from failures cuts the crashes: a constraint model that learned nothing would crash
    # about as often as the baseline (measured: 0.5 against 0.95 over these seeds).
    assert share <= 0.7 * share_baseline

    train = _wrapper()
    for seed in SEEDS:
        params, value = results[True, seed][1]
        lr, momentum = float(params["learning_rate"][0]), float(params["momentum"][0])
        assert not train.crashes(lr, momentum)
        assert math.isclose(value, train.final_loss(lr, momentum))
        # and close to the best feasible loss, 0.2368 on the edge of the crash region: about 1% of
        # the box's feasible points score below 0.314 (measured on 4000 log-uniform draws)
        assert value < 0.32
