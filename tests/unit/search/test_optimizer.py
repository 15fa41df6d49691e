"""The ask/tell Optimizer: params forms, the initial design, batches over pending jobs,
failures and constraints as feasibility, exhausted spaces, warm-start state, and Branin."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch

from spearmint_nn.errors import ConfigError
from spearmint_nn.models.kernels import CORRELATIONS
from spearmint_nn.search.candidates import point_key
from spearmint_nn.search import optimizer as optimizer_module
from spearmint_nn.problem.settings import KERNELS
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.policy import restart_index

torch.set_num_threads(1)

MIXED = {
    "lr": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"},
    "units": {"type": "INT", "min": 8, "max": 64, "size": 2},
    "act": {"type": "ENUM", "options": ["relu", "tanh"]},
}
SQUARE = {"x": {"type": "FLOAT", "min": 0, "max": 1}, "y": {"type": "FLOAT", "min": 0, "max": 1}}


def branin(x1: float, x2: float) -> float:
    return ((x2 - 5.1 / (4 * math.pi**2) * x1**2 + 5 / math.pi * x1 - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x1) + 10)


def bowl(p) -> float:
    return float((p["x"][0] - 0.3) ** 2 + (p["y"][0] - 0.6) ** 2)


def test_random_search_returns_wrapper_form_and_accepts_every_value_kind():
    opt = Optimizer(MIXED, model="sobol", seed=0)
    batch = opt.suggest(3)
    assert len(batch) == 3
    for params in batch:
        assert isinstance(params["lr"], np.ndarray) and params["lr"].dtype == float and params["lr"].shape == (1,)
        assert params["units"].dtype == np.int64 and params["units"].shape == (2,)
        assert isinstance(params["act"], list) and params["act"][0] in ("relu", "tanh")
        opt.space.validate(params)
    opt.observe(batch[0], 1.5)
    opt.observe(batch[1], {"main": 0.5})
    opt.observe(batch[2], float("nan"))
    assert opt.n_observed == 3
    assert opt.incumbent[1] == 0.5
    assert opt.feasible_mask().tolist() == [True, True, False]
    with pytest.raises(ValueError):
        opt.observe(batch[0], {"mian": 1.0})
    assert len({point_key(r) for r in opt.space.encode(batch + opt.suggest(20, pending=batch))}) == 23


def test_unknown_names_are_config_errors():
    with pytest.raises(ConfigError):
        Optimizer(SQUARE, model="nope")
    with pytest.raises(ConfigError):
        Optimizer(SQUARE, acquisition="nope")
    with pytest.raises(ConfigError):
        Optimizer(SQUARE, tasks={"a": "CONSTRAINT"})
    with pytest.raises(ConfigError):
        Optimizer(SQUARE, kernel="matern32")


def test_the_kernel_reaches_the_gp_and_the_config_offers_every_kernel():
    assert KERNELS == tuple(CORRELATIONS)  # the torch-free list the config checks against
    opt = Optimizer(SQUARE, model="gp-nowarp", seed=0, kernel="squared-exponential", model_options={"burn_in": 2})
    for params in opt.suggest(4):
        opt.observe(params, bowl(params))
    opt.suggest(1)
    assert opt.models.objective.kernel == "squared-exponential"
    assert Optimizer(SQUARE, model="gp", seed=0).models.new_surrogate("main").kernel == "matern52"


def test_exhausted_space_returns_repeats_with_a_warning_instead_of_looping(caplog):
    opt = Optimizer({"n": {"type": "INT", "min": 0, "max": 2}}, model="sobol", seed=1)
    first = opt.suggest(3)
    assert sorted(int(p["n"][0]) for p in first) == [0, 1, 2]
    for p in first:
        opt.observe(p, float(p["n"][0]))
    with caplog.at_level(logging.WARNING, logger="spearmint_nn.search.optimizer"):
        again = opt.suggest(2)
    assert len(again) == 2 and "exhausted" in caplog.text


def test_model_proposals_never_repeat_observed_or_pending_points(exact_gp):
    space = {"k": {"type": "INT", "min": 0, "max": 5}, "c": {"type": "ENUM", "options": ["a", "b"]}}
    opt = Optimizer(space, model=exact_gp, seed=2, initial_design=3)
    for _ in range(6):
        p = opt.suggest(1)[0]
        opt.observe(p, float((p["k"][0] - 2) ** 2 + (p["c"][0] == "b")))
    pending = opt.suggest(2)
    batch = opt.suggest(4, pending=pending)
    keys = [point_key(r) for r in opt.space.encode(batch)]
    taken = {point_key(r) for r in opt._data.X} | {point_key(r) for r in opt.space.encode(pending)}
    assert len(set(keys)) == 4 and not set(keys) & taken  # 12 points in all: 4 left after these


def test_a_batch_spreads_out_where_the_same_point_would_be_proposed_repeatedly(exact_gp):
    opt = Optimizer(SQUARE, model=exact_gp, seed=3, initial_design=6)
    for p in opt.suggest(6):
        opt.observe(p, bowl(p))
    batch = opt.space.encode(opt.suggest(5))
    distances = np.linalg.norm(batch[:, None] - batch[None], axis=-1)[np.triu_indices(5, 1)]
    assert distances.min() > 0.03, distances
    # The first point is the plain EI maximum (a twin asked for one point alone picks it too):
    # ignoring the batch's earlier points would have proposed it five times.
    alone = opt.space.encode(twin_of(opt).suggest(1))[0]
    assert np.allclose(alone, batch[0], atol=1e-6)
    assert opt.last_suggest_seconds > 0 and opt.last_fit_seconds is not None


def test_every_tenth_proposal_made_beside_pending_jobs_is_a_thompson_sample(exact_gp, monkeypatch):
    positions = []  # how many jobs were proposed before each Thompson sample
    real = optimizer_module.minimize_sample_path
    monkeypatch.setattr(optimizer_module, "minimize_sample_path",
                        lambda *args, **kw: positions.append(len(kw["avoid"])) or real(*args, **kw))
    opt = Optimizer(SQUARE, model=exact_gp, seed=3, initial_design=6)
    for p in opt.suggest(6):
        opt.observe(p, bowl(p))
    batch = opt.suggest(10)  # positions 6-15: the 10th job (position 9) is the Thompson sample
    assert positions == [9]
    plain = Optimizer(SQUARE, model=exact_gp, seed=3, initial_design=6, thompson_every=0)
    for p in plain.suggest(6):
        plain.observe(p, bowl(p))
    other = plain.suggest(10)
    assert positions == [9] and other[:3] == batch[:3] and other[3] != batch[3]
    for p in batch:
        opt.observe(p, bowl(p))
    for _ in range(6):  # a sequential run (nothing pending) is never affected: positions 16-21
        p = opt.suggest(1)[0]
        opt.observe(p, bowl(p))
    assert positions == [9]
    running = opt.suggest(1)  # position 22, alone
    opt.suggest(8, pending=running)  # positions 23-30: the 30th job is beside 7 pending ones
    assert positions == [9, 29]


def test_auto_switching_to_dngo_before_two_results_proposes_without_a_fitted_model():
    opt = Optimizer(SQUARE, seed=0)  # "auto"; 60 in flight at the start: DNGO before any result
    batch = opt.suggest(60)
    assert opt.surrogate_name == "dngo" and len({(p["x"][0], p["y"][0]) for p in batch}) == 60
    opt.observe(batch[0], bowl(batch[0]))  # one value: still nothing to fit
    more = opt.suggest(2, pending=batch[1:])
    assert len({(p["x"][0], p["y"][0]) for p in batch + more}) == 62


def twin_of(opt: Optimizer) -> Optimizer:
    """An optimizer with the same observations and seed as opt."""
    twin = Optimizer(SQUARE, model=opt.settings.model, seed=3, initial_design=opt.initial_design)
    for row, value in zip(opt._data.X, opt._data.objective):
        twin.observe(opt.space.decode(row[None])[0], value)
    return twin


@pytest.mark.slow
def test_failures_train_a_success_classifier_and_steer_proposals_away(exact_gp):
    # The objective improves towards x = 1, but every job with x > 0.6 crashes.
    def run(p):
        return math.nan if p["x"][0] > 0.6 else -float(p["x"][0]) + 0.1 * float(p["y"][0])

    opt = Optimizer(SQUARE, model=exact_gp, seed=4, initial_design=8)
    for p in opt.suggest(8):
        opt.observe(p, run(p))
    assert np.isnan(opt._data.objective).any()
    later = []
    for _ in range(8):
        p = opt.suggest(1)[0]
        later.append(p["x"][0])
        opt.observe(p, run(p))
    assert "success" in opt.models.constraints and not opt.models.constraints["success"].trivial
    # Ignoring failures, every proposal lands at x ~ 0.77 (the finite values keep improving
    # towards x = 1); with the success classifier the search hugs the crash boundary instead.
    assert sum(x > 0.65 for x in later) <= 1, later
    assert abs(np.median(later) - 0.6) < 0.05, later
    assert opt.incumbent[0]["x"][0] <= 0.6


def test_constraint_tasks_define_the_incumbent_and_start_with_feasibility_search(exact_gp):
    tasks = {"f": "OBJECTIVE", "c": "CONSTRAINT"}
    opt = Optimizer(SQUARE, model=exact_gp, seed=5, tasks=tasks, likelihoods={"c": "NOISELESS"}, initial_design=4)
    # Only the disk of radius 0.2 around (0.8, 0.8) is feasible; f is lowest at the origin.
    def run(p):
        x, y = p["x"][0], p["y"][0]
        return {"f": float(x + y), "c": 0.2 - math.hypot(x - 0.8, y - 0.8)}

    for p in opt.suggest(4):
        opt.observe(p, run(p))
    for _ in range(10):
        if opt.incumbent is not None:
            break
        p = opt.suggest(1)[0]
        opt.observe(p, run(p))
    assert opt.incumbent is not None, "the feasibility search never found the feasible disk"
    params, value = opt.incumbent
    assert run(params)["c"] >= 0 and value == pytest.approx(run(params)["f"])
    infeasible_values = [f for f, c in zip(opt._data.objective, opt._data.constraints["c"]) if c < 0]
    assert min(infeasible_values) < value  # a better but infeasible point never becomes the incumbent


@pytest.mark.slow
def test_state_dir_holds_model_weights_and_a_new_optimizer_warm_starts(tmp_path):
    # fresh_fit_max=0: warm starts at every N (by default small data are fitted afresh each time).
    options = {"train_steps": 200, "warm_steps": 50, "burn_in": 10, "reburn_in": 2, "n_samples": 4,
               "fresh_fit_max": 0}
    opt = Optimizer(SQUARE, model="dngo", seed=6, state_dir=tmp_path, initial_design=4, model_options=options)
    params = opt.suggest(4)
    for p in params:
        opt.observe(p, bowl(p))
    opt.suggest(1)
    assert (tmp_path / "objective").is_dir() and any((tmp_path / "objective").iterdir())
    restarted = Optimizer(SQUARE, model="dngo", seed=6, state_dir=tmp_path, initial_design=4, model_options=options)
    for p in params:
        restarted.observe(p, bowl(p))
    restarted.suggest(1)
    assert restarted.models.objective.fits_since_reinit == 2  # continued from the saved fit, not fresh


@pytest.mark.slow
def test_dngo_reaches_branin_041_within_60_evaluations():
    opt = Optimizer({"x1": {"type": "FLOAT", "min": -5, "max": 10}, "x2": {"type": "FLOAT", "min": 0, "max": 15}},
                    model="dngo", seed=0)
    best = math.inf
    for _ in range(60):
        p = opt.suggest(1)[0]
        value = branin(p["x1"][0], p["x2"][0])
        opt.observe(p, value)
        best = min(best, value)
        if best < 0.41:
            break
    assert best < 0.41


# ------------------------------------------------------------------------------ restarts

def test_restart_index_starts_a_segment_after_the_given_run_without_improvement():
    values = [5.0, 4.0, 3.0] + [3.5] * 30  # last improvement at index 2, then the segments' first values
    assert restart_index(values, 10, earliest=0, budget=None) == 32  # 12, 22, 32
    assert restart_index(values[:12], 10, earliest=0, budget=None) == 12
    assert restart_index(values[:11], 10, earliest=0, budget=None) == 0
    # Every segment, the restarted ones too, first runs for `earliest` observations: 15, then 30.
    assert restart_index(values, 10, earliest=15, budget=None) == 30
    assert restart_index(values, 0, earliest=0, budget=None) == 0  # 0: never


def test_a_restart_needs_half_the_budget_left_and_measures_improvement_within_its_segment():
    values = [5.0, 4.0, 3.0] + [3.5] * 30
    assert restart_index(values, 10, earliest=0, budget=24) == 12  # not 22: 22 > 24 - 22
    assert restart_index(values, 10, earliest=0, budget=23) == 0   # 12 > 23 - 12
    # After the restart at 12 the segment's own best counts: 3.4 at 13 improves on its 3.5,
    # though not on the overall best 3.0 (else the next restart would be at 22); NaN (a
    # failure) never improves (else there would be none at 23).
    values = [5.0, 4.0, 3.0] + [3.5] * 9 + [3.5, 3.4] + [math.nan] * 15
    assert restart_index(values, 10, earliest=0, budget=None) == 23


def test_restarts_count_in_rounds_of_the_jobs_in_flight():
    # A batch of 50 that does not improve is one round, not fifty sequential stalls: the same
    # history restarts after 10 rounds and 10 rounds' worth of `earliest`, not inside a batch.
    values = [5.0, 4.0, 3.0] + [3.5] * 600
    assert restart_index(values[:13], 10, earliest=1, budget=None) == 12
    assert restart_index(values[:500], 10, earliest=1, budget=None, round_size=50) == 0
    assert restart_index(values, 10, earliest=1, budget=None, round_size=50) == 502  # 2 + 10 x 50
    assert restart_index(values, 10, earliest=11, budget=None, round_size=50) == 550  # 11 rounds
    assert restart_index(values, 10, earliest=1, budget=None, round_size=1) == restart_index(values, 10, 1, None)


def test_without_a_budget_a_basin_still_improving_at_its_pace_is_not_restarted():
    # Improvements every 15 evaluations up to 120: the stall of 14 between them never reaches
    # what it took to find the best, so the basin is refined; once it has gone 120 without
    # improving, the search restarts.
    values, best = [], 10.0
    for i in range(121):
        best = best - 0.1 if i % 15 == 0 else best
        values.append(best if i % 15 == 0 else best + 1.0)
    assert restart_index(values, 10, earliest=20, budget=None) == 0
    assert restart_index(values + [99.0] * 119, 10, earliest=20, budget=None) == 0
    assert restart_index(values + [99.0] * 120, 10, earliest=20, budget=None) == 241  # 121 > 120
    # With a budget the pace does not matter, only what is left of it: the first 10 without
    # improving after `earliest` (15 to 25) restart.
    assert restart_index(values[:26], 10, earliest=20, budget=400) == 25


def test_the_optimizer_counts_stalls_in_rounds_of_the_most_jobs_it_had_in_flight(exact_gp):
    space = {"x": {"type": "FLOAT", "min": 0, "max": 1}}  # earliest restart 20 sequentially
    opt = Optimizer(space, model=exact_gp, seed=0, initial_design=2)
    for i in range(30):
        opt.observe({"x": [i / 30]}, 1.0 if i else 0.0)
    assert opt.search_start == 20
    batch = Optimizer(space, model=exact_gp, seed=0, initial_design=2)
    batch.suggest(5)  # 5 in flight: rounds of 5, so the first restart comes at 10 x 5 = 50
    for p in batch.pending:
        batch.forget(p)
    for i in range(30):
        batch.observe({"x": [i / 30 + 0.001]}, 1.0 if i else 0.0)
    assert batch.search_start == 0


def test_a_stuck_search_restarts_with_a_fresh_model_fitted_only_to_what_follows(exact_gp):
    space = {"x": {"type": "FLOAT", "min": 0, "max": 1}}  # D = 1: initial design 2, earliest restart 20
    opt = Optimizer(space, model=exact_gp, seed=0, initial_design=2)
    for i in range(19):
        opt.observe({"x": [i / 20]}, 1.0 if i else 0.0)  # nothing improves on the first value
    opt.suggest(1)
    stuck_model = opt.models.objective
    assert opt.search_start == 0 and stuck_model.X.shape[0] == 19
    opt.observe(opt.pending[0], 1.0)
    assert opt.search_start == 20
    opt.suggest(1)
    assert opt.models.objective is not stuck_model and opt.models.objective.X.shape[0] == 0  # fresh, not fitted yet
    assert opt.models.objective.n_fits == 0  # the new segment's initial design (Sobol) came first
    opt.observe({"x": [0.33]}, 0.5)
    opt.observe({"x": [0.66]}, 0.4)
    opt.suggest(1)
    assert opt.models.objective.X.shape[0] == 2  # the segment's two observations, not all 22
    assert opt.incumbent[1] == 0.0  # the user still sees the best of everything


def test_with_a_budget_a_search_restarts_only_while_half_of_it_remains(exact_gp):
    space = {"x": {"type": "FLOAT", "min": 0, "max": 1}}
    values = [0.0] + [1.0] * 29
    for budget, expected in ((30, 0), (40, 20), (None, 20)):
        opt = Optimizer(space, model=exact_gp, seed=0, initial_design=2, budget=budget)
        for i, value in enumerate(values):
            opt.observe({"x": [i / 30]}, value)
        assert opt.search_start == expected, budget
    assert Optimizer(space, model=exact_gp, restart_after=0).settings.restart_after == 0

