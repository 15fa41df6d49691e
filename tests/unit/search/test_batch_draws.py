"""Batches chosen on joint posterior draws: greedy Monte Carlo q-EI and the optimizer's use of it."""
from __future__ import annotations

import math

import pytest

import numpy as np
import torch

from spearmint_nn.search.batch_draws import CandidateCrowding, choose_batch, greedy_q_ei
from spearmint_nn.search.candidates import KeepAway
from spearmint_nn.problem.space import Space
from spearmint_nn.search.optimizer import Optimizer

DT = torch.float64


def draws(columns: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack(columns, dim=1)


def test_a_twin_of_a_chosen_point_gains_nothing_so_the_batch_spreads():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(2000, generator=g, dtype=DT)
    independent = torch.randn(2000, generator=g, dtype=DT) + 0.2  # a little worse on average
    paths = draws([a, a.clone(), independent])  # candidates 0 and 1 are the same function value
    assert greedy_q_ei(paths, torch.zeros(2000, dtype=DT), 2) == [0, 2]
    # Alone, the twin is the better second point: what counts is the gain given the first.
    assert greedy_q_ei(paths[:, :2], torch.zeros(2000, dtype=DT), 2) == [0, 1]


def test_pending_jobs_enter_through_each_draws_incumbent():
    g = torch.Generator().manual_seed(1)
    pending = torch.randn(2000, generator=g, dtype=DT)
    near_pending = pending + 0.01 * torch.randn(2000, generator=g, dtype=DT)
    elsewhere = torch.randn(2000, generator=g, dtype=DT) + 0.3
    paths = draws([near_pending, elsewhere])
    incumbent = torch.zeros(2000, dtype=DT)
    assert greedy_q_ei(paths, incumbent, 1) == [0]  # no pending job: the better mean wins
    assert greedy_q_ei(paths, torch.minimum(incumbent, pending), 1) == [1]  # beside the pending job: no gain


def test_feasibility_weighs_the_gain_and_a_sure_optimum_still_gets_the_lowest_point():
    g = torch.Generator().manual_seed(2)
    better, worse = torch.randn(2000, generator=g, dtype=DT) - 0.5, torch.randn(2000, generator=g, dtype=DT)
    paths = draws([better, worse])
    unlikely = torch.tensor([math.log(0.01), 0.0], dtype=DT)
    assert greedy_q_ei(paths, torch.zeros(2000, dtype=DT), 1, unlikely) == [1]
    # No draw improves on the incumbent anywhere: the point whose draws lie least above it.
    high = draws([torch.full((100,), 5.0, dtype=DT), torch.full((100,), 3.0, dtype=DT), torch.full((100,), 4.0, dtype=DT)])
    assert greedy_q_ei(high, torch.zeros(100, dtype=DT), 3) == [1, 2, 0]


class OffsetDraws:
    """Joint draws f_m(x) = c_m + (x - 0.5)^2 + u_m * 3 max(0, x - 0.8) on [0, 1]: a common offset
    c_m per draw (as DNGO's hyperparameter rows shift a whole draw), certain near 0.5, unsure
    beyond 0.8."""

    def sample_paths(self, X: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
        offset, slope = torch.randn(2, n, 1, generator=generator, dtype=DT)
        x = X[:, 0][None]
        return 5.0 * offset + (x - 0.5) ** 2 + slope * 3.0 * (x - 0.8).clamp_min(0.0)


def test_each_draw_is_measured_against_its_own_value_at_the_observed_points():
    # Observed at 0.5, where every draw is lowest but for the unsure region: a point near 0.5
    # cannot beat the observation under any draw; only the unsure region can. Against one fixed
    # value (the old incumbent), the offsets of +-5 would hide that and pick by the mean alone.
    space = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1}})
    observed = np.array([[0.5]])
    chosen = choose_batch(OffsetDraws(), space, 1, observed=observed, avoid=observed, pending=np.zeros((0, 1)),
                          anchors=observed, n_candidates=500, seed=0)
    assert chosen.shape == (1, 1) and chosen[0, 0] > 0.9

def bowl(p) -> float:
    return (p["x"][0] - 0.3) ** 2 + (p["y"][0] - 0.6) ** 2


def test_a_dngo_batch_is_chosen_on_draws_valid_distinct_and_around_the_optimum():
    space = {"x": {"type": "FLOAT", "min": 0, "max": 1}, "y": {"type": "INT", "min": 0, "max": 10}}
    opt = Optimizer(space, model="dngo", seed=0, model_options={"n_samples": 4, "train_steps": 300})
    rng = np.random.default_rng(0)
    for x, y in zip(rng.random(30), rng.integers(0, 11, 30)):
        opt.observe({"x": [float(x)], "y": [int(y)]}, (x - 0.3) ** 2 + (y / 10 - 0.6) ** 2)
    batch = opt.suggest(40)
    keys = {(p["x"][0], p["y"][0]) for p in batch}
    assert len(keys) == 40 and all(p["y"][0] == round(p["y"][0]) and 0 <= p["y"][0] <= 10 for p in batch)
    values = sorted((p["x"][0] - 0.3) ** 2 + (p["y"][0] / 10 - 0.6) ** 2 for p in batch)
    assert values[0] < 0.005  # the first point: EI refined by gradient next to the minimum
    assert np.median(values) < 0.1  # most of the batch where the bowl is low (Sobol: ~0.25)
    xs = [p["x"][0] for p in batch]
    assert max(xs) - min(xs) > 0.05  # spread along the valley, not stacked on the EI maximum


def test_the_gp_draws_the_rest_of_a_top_up_and_fantasises_a_batch_started_with_nothing_running(monkeypatch):
    from spearmint_nn.search import optimizer as optimizer_module

    maximisations = []
    original = optimizer_module.maximize
    monkeypatch.setattr(optimizer_module, "maximize", lambda *a, **k: (maximisations.append(1), original(*a, **k))[1])
    space = {"x": {"type": "FLOAT", "min": 0, "max": 1}, "y": {"type": "FLOAT", "min": 0, "max": 1}}
    opt = Optimizer(space, model="gp", seed=0, thompson_every=0, model_options={"n_samples": 3, "burn_in": 3})
    rng = np.random.default_rng(0)
    for x, y in rng.random((12, 2)):
        opt.observe({"x": [float(x)], "y": [float(y)]}, (x - 0.3) ** 2 + (y - 0.6) ** 2)
    assert len(opt.suggest(3)) == 3 and len(maximisations) == 3  # nothing running: one EI maximisation a point
    maximisations.clear()
    batch = opt.suggest(6)  # the first three still run: a top-up
    assert len(maximisations) == 1
    keys = {(p["x"][0], p["y"][0]) for p in batch + opt.pending}
    assert len(batch) == 6 and len(keys) == 9  # distinct from each other and from the running jobs
    values = sorted((p["x"][0] - 0.3) ** 2 + (p["y"][0] - 0.6) ** 2 for p in batch)
    assert np.median(values) < 0.05  # chosen where the bowl is low (uniform points: ~0.2)


def test_thompson_steps_take_the_lowest_free_point_of_one_draw():
    g = torch.Generator().manual_seed(3)
    paths = torch.randn(8, 50, generator=g, dtype=DT)
    paths[:, 7] -= 3.0  # the q-EI favourite under every draw
    chosen = greedy_q_ei(paths, torch.zeros(8, dtype=DT), 3, thompson_steps=(1,))
    assert chosen[0] == 7
    assert chosen[1] == int(torch.argmin(paths[1].masked_fill(torch.arange(50) == 7, torch.inf)))
    likely = torch.full((50,), math.log(0.9), dtype=DT)
    likely[chosen[1]] = math.log(0.1)  # with constraints, only candidates likely feasible
    assert greedy_q_ei(paths, torch.zeros(8, dtype=DT), 3, likely, thompson_steps=(1,))[1] != chosen[1]


def test_a_crowded_batch_moves_to_the_next_best_place_once_the_cap_is_reached():
    # 40 candidates at a sure favourite place (near 0) and 10 at a second one (near 1): q-EI
    # alone fills the favourite; with a cap of 5 jobs per neighbourhood, the batch moves on.
    g = torch.Generator().manual_seed(4)
    candidates = np.concatenate([np.full((40, 1), 0.0), np.full((10, 1), 1.0)]) + np.linspace(0, 0.01, 50)[:, None]
    paths = torch.randn(64, 50, generator=g, dtype=DT) * 0.1
    paths[:, :40] -= 1.0
    alone = greedy_q_ei(paths, torch.zeros(64, dtype=DT), 8)
    assert all(i < 40 for i in alone)
    rule = KeepAway(np.full((3, 1), 0.0), 0.1, cap=5)  # 3 jobs already run at the favourite place
    chosen = greedy_q_ei(paths, torch.zeros(64, dtype=DT), 8, crowded=CandidateCrowding(candidates, rule))
    # 2 more fill the favourite place, 5 the second; with both full, the favourite again.
    assert [i < 40 for i in chosen] == [True, True] + [False] * 5 + [True]
    thompson = greedy_q_ei(paths, torch.zeros(64, dtype=DT), 3, thompson_steps=(2,),
                           crowded=CandidateCrowding(candidates, rule))
    assert thompson[2] >= 40  # a Thompson member does not enter a full place either


@pytest.mark.slow
def test_dngo_trains_its_network_once_per_round_of_results_and_conditions_in_between(monkeypatch):
    from spearmint_nn.models.dngo import DNGO

    trainings = []
    original = DNGO._fit_basis
    monkeypatch.setattr(DNGO, "_fit_basis", lambda self, X, y: (trainings.append(len(y)), original(self, X, y)))
    space = {"x": {"type": "FLOAT", "min": 0, "max": 1}, "y": {"type": "FLOAT", "min": 0, "max": 1}}
    opt = Optimizer(space, model="dngo", seed=0, model_options={"n_samples": 2, "train_steps": 100,
                                                                "lbfgs_steps": 50, "lbfgs_warm_steps": 20})
    rng = np.random.default_rng(1)
    for x, y in rng.random((20, 2)):
        opt.observe({"x": [x], "y": [y]}, (x - 0.3) ** 2 + (y - 0.6) ** 2)
    running = opt.suggest(5)  # 5 in flight: rounds of 5 results
    assert trainings == [20]
    for p in running[:4]:  # results arrive one at a time, each followed by a proposal
        opt.observe(p, bowl(p))
        running.append(opt.suggest(1)[0])
    assert trainings == [20]  # 24 - 20 < 5: the output layer absorbed them
    opt.observe(running[4], bowl(running[4]))
    opt.suggest(1)
    assert trainings == [20, 25]  # a round: the network is trained again
    sequential = Optimizer(space, model="dngo", seed=0, model_options={"n_samples": 2, "train_steps": 100,
                                                                       "lbfgs_steps": 50, "lbfgs_warm_steps": 20})
    trainings.clear()
    for x, y in rng.random((20, 2)):
        sequential.observe({"x": [x], "y": [y]}, (x - 0.3) ** 2 + (y - 0.6) ** 2)
    for _ in range(2):
        p = sequential.suggest(1)[0]
        sequential.observe(p, bowl(p))
    sequential.observe(sequential.suggest(1)[0], float("nan"))  # a crash is a result of the round too
    sequential.suggest(1)
    assert trainings == [20, 21, 22, 22]  # one at a time: every result is a round, the crash included
    trainings.clear()
    wide = Optimizer(space, model="dngo", seed=0, model_options={"n_samples": 2, "train_steps": 100,
                                                                 "lbfgs_steps": 50, "lbfgs_warm_steps": 20})
    for x, y in rng.random((10, 2)):
        wide.observe({"x": [x], "y": [y]}, (x - 0.3) ** 2 + (y - 0.6) ** 2)
    running = wide.suggest(40)  # rounds of 40, but the data double first: trained at 10, then 20
    for count in (5, 5):
        for p in running[:count]:
            wide.observe(p, bowl(p))
        running = running[count:] + wide.suggest(count)
    assert trainings == [10, 20]
