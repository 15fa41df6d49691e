"""Acquisition maximisation: refinement finds continuous optima, proposals are valid projected
points, never repeats of avoided points, and exhausted finite spaces are reported."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spearmint_nn.search.acquisition import Acquisition
from spearmint_nn.search.candidates import continuous_columns, enumerate_space, point_key, space_size
from spearmint_nn.search.maximize import maximize, minimize_sample_path
from spearmint_nn.problem.space import Space
from helpers.models import DiskFeasibility, ExactGP

torch.set_num_threads(1)


class Bowl(Acquisition):
    """-(squared distance to a target), maximal at the target (an encoded row)."""

    def __init__(self, target):
        self.target = torch.as_tensor(target, dtype=torch.float64)

    def __call__(self, X):
        return -((X - self.target) ** 2).sum(dim=1)


MIXED = {
    "lr": {"type": "FLOAT", "min": 1e-4, "max": 1.0, "scale": "log"},
    "layers": {"type": "INT", "min": 1, "max": 4},
    "act": {"type": "ENUM", "options": ["relu", "tanh", "gelu"]},
    "w": {"type": "FLOAT", "min": -1, "max": 1, "size": 2},
}


def test_refinement_reaches_a_continuous_optimum_the_candidates_miss():
    space = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1, "size": 3}})
    target = np.array([0.123456, 0.654321, 0.999])
    proposal = maximize(Bowl(target), space, n_candidates=64, seed=0)
    assert np.abs(proposal.x - target).max() < 1e-5
    assert not proposal.repeat


def test_proposals_in_a_mixed_space_are_valid_and_avoid_taken_points():
    space = Space.from_config(MIXED)
    # The unconstrained optimum is an invalid point (INT between values, two ENUM columns on).
    target = np.array([0.3, 0.5, 1.0, 1.0, 0.0, 0.2, 0.8])
    first = maximize(Bowl(target), space, n_candidates=512, seed=1)
    assert np.array_equal(space.project(first.x[None])[0], first.x)
    space.validate(space.decode(first.x[None])[0])
    second = maximize(Bowl(target), space, avoid=first.x[None], n_candidates=512, seed=1)
    assert point_key(second.x) != point_key(first.x)
    assert np.array_equal(space.project(second.x[None])[0], second.x)
    assert continuous_columns(space).tolist() == [True, True, False, False, False, True, True]


def test_anchor_neighbourhood_finds_a_narrow_peak_next_to_the_incumbent():
    space = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1, "size": 6}})
    incumbent = np.full(6, 0.37)

    class Spike(Acquisition):
        def __call__(self, X):
            return torch.exp(-((X - torch.as_tensor(incumbent + 0.004)) ** 2).sum(1) / 1e-5)

    proposal = maximize(Spike(), space, anchors=incumbent[None], n_candidates=256, seed=2)
    assert np.abs(proposal.x - (incumbent + 0.004)).max() < 1e-3


def test_small_finite_space_offers_the_last_free_point_then_reports_exhaustion():
    space = Space.from_config({"n": {"type": "INT", "min": 0, "max": 3}, "c": {"type": "ENUM", "options": ["a", "b"]}})
    every = enumerate_space(space)
    assert space_size(space) == 8 and len({point_key(r) for r in every}) == 8
    target = every[0]
    last = maximize(Bowl(target), space, avoid=every[1:], seed=0)
    assert point_key(last.x) == point_key(every[0]) and not last.repeat
    last = maximize(Bowl(target), space, avoid=np.delete(every, 5, axis=0), seed=0)
    assert point_key(last.x) == point_key(every[5]) and not last.repeat
    exhausted = maximize(Bowl(target), space, avoid=every, seed=0)
    assert exhausted.repeat and point_key(exhausted.x) == point_key(target)


def test_large_integer_space_never_repeats_avoided_points():
    space = Space.from_config({"a": {"type": "INT", "min": 0, "max": 40}, "b": {"type": "INT", "min": 0, "max": 40}})
    target = space.encode([{"a": [20], "b": [20]}])[0]
    avoid = np.zeros((0, 2))
    for _ in range(6):
        p = maximize(Bowl(target), space, avoid=avoid, n_candidates=256, seed=3)
        assert point_key(p.x) not in {point_key(r) for r in avoid} and not p.repeat
        avoid = np.vstack([avoid, p.x])
    # The six best valid points are the centre and its nearest lattice neighbours.
    assert np.abs(avoid - target).max() <= 1.5 / 40


def test_refinement_runs_blas_single_threaded_and_restores_its_threads(monkeypatch):
    from threadpoolctl import threadpool_info

    import spearmint_nn.search.maximize as optimize_module

    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    if not blas:
        pytest.skip("no BLAS library reports its threads in this process")
    before = [pool["num_threads"] for pool in blas]
    seen = []
    real_minimize = optimize_module.minimize

    def spying_minimize(*args, **kwargs):
        seen.append([pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"])
        return real_minimize(*args, **kwargs)

    monkeypatch.setattr(optimize_module, "minimize", spying_minimize)
    space = Space.from_config({"x": {"type": "FLOAT", "min": 0.0, "max": 1.0, "size": 2}})
    maximize(Bowl(np.array([0.3, 0.7])), space, n_candidates=64, seed=0)
    assert seen and all(counts == [1] * len(blas) for counts in seen)
    assert [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"] == before


def test_a_thompson_sample_lands_near_the_minimum_when_the_model_is_sure_and_spreads_when_not():
    space = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1}})
    X = torch.linspace(0, 1, 12, dtype=torch.float64)[:, None]
    sure = ExactGP(1, lengthscales=(0.2,))
    sure.fit(X, ((X[:, 0] - 0.37) ** 2 * 20 - 1))
    picks = [minimize_sample_path(sure, space, avoid=X.numpy(), seed=s)[0] for s in range(20)]
    assert np.abs(np.array(picks) - 0.37).max() < 0.05  # where f is known, the draw's minimum is its minimum
    unsure = ExactGP(1, lengthscales=(0.2,))
    unsure.fit(X[[0, -1]], torch.zeros(2, dtype=torch.float64))
    picks = [minimize_sample_path(unsure, space, avoid=X[[0, -1]].numpy(), seed=s)[0] for s in range(20)]
    assert np.std(picks) > 0.15  # a flat, unsure posterior: the minimum of a draw is anywhere


def test_a_thompson_sample_avoids_taken_points_and_unlikely_feasible_ones():
    space = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1, "size": 2}})
    X = torch.rand(8, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    model = ExactGP(2, lengthscales=(0.3,))
    model.fit(X, ((X - torch.tensor([0.95, 0.95])) ** 2).sum(1))  # lowest in a corner, outside the disk
    feasible = DiskFeasibility(radius=0.3)
    for seed in range(10):
        x = minimize_sample_path(model, space, avoid=X.numpy(), feasibility=[feasible], seed=seed)
        assert point_key(x) not in {point_key(r) for r in X.numpy()}
        assert feasible.probability(torch.as_tensor(x[None]))[0] >= 0.5


def test_scoring_in_blocks_gives_exactly_the_values_of_one_pass():
    # The screening set is scored in blocks small enough for a core's cache (SCORE_BLOCK): the
    # posterior of a warped GP with fantasies must not depend on which rows share a block.
    from spearmint_nn.models.gp import GP
    from spearmint_nn.search.acquisition import condition_on_pending, make_acquisition
    from spearmint_nn.search.maximize import SCORE_BLOCK, _score

    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.random((30, 3)))
    gp = GP(seed=0, burn_in=5, n_samples=4)
    gp.fit(X, torch.sin(6 * X).sum(1))
    fantasy, best = condition_on_pending(gp, -1.0, torch.as_tensor(rng.random((4, 3))), 3, torch.Generator().manual_seed(0))
    acquisition = make_acquisition("ei", fantasy, best)
    candidates = rng.random((3 * SCORE_BLOCK + 17, 3))
    whole = _score(acquisition, candidates, chunk=len(candidates))
    assert np.isfinite(whole).all() and np.ptp(whole) > 0
    # The same values up to rounding: vectorised and scalar tails of elementwise kernels may
    # round the last bit differently for rows at other positions.
    np.testing.assert_allclose(_score(acquisition, candidates), whole, rtol=1e-12, atol=0)
    np.testing.assert_allclose(_score(acquisition, candidates, chunk=7), whole, rtol=1e-12, atol=0)


def test_a_batch_screening_scores_each_member_as_its_fantasy_would():
    # One screening set for a batch: each member's scores there, from the model's kept solves and
    # the pending points added one by one, are those of the acquisition on that member's fantasy.
    from spearmint_nn.models.gp import GP
    from spearmint_nn.search.acquisition import condition_on_pending, make_acquisition
    from spearmint_nn.search.maximize import BatchScreening, _score

    space = Space.from_config({"x": {"type": "FLOAT", "min": 0, "max": 1, "size": 3}})
    rng = np.random.default_rng(0)
    X = rng.random((30, 3))
    gp = GP(seed=0, burn_in=5, n_samples=4)
    gp.fit(torch.as_tensor(X), torch.sin(6 * torch.as_tensor(X)).sum(1))
    screening, pending = BatchScreening(), rng.random((4, 3))
    # the first member screens a set of its own, as a single proposal does
    first = make_acquisition("ei", gp, -1.0)
    assert screening.scores(first, gp, gp, torch.zeros(0, 3), space, avoid=X, anchors=X[:1], n_candidates=256, seed=7,
                            keep_away=None) is None
    for j in range(4):
        X_pending = torch.as_tensor(pending[:j])
        fantasy, best = condition_on_pending(gp, -1.0, X_pending, 3, torch.Generator().manual_seed(j))
        acquisition = make_acquisition("ei", fantasy, best)
        avoid = np.concatenate([X, pending[:j]])
        candidates, values = screening.scores(acquisition, gp, fantasy, X_pending, space, avoid=avoid, anchors=X[:1],
                                              n_candidates=256, seed=7, keep_away=None)
        assert len(candidates) > 256 and np.ptp(values) > 0
        np.testing.assert_allclose(values, _score(acquisition, candidates), rtol=1e-9, atol=1e-9)
        assert maximize(acquisition, space, avoid=avoid, seed=1, screened=(candidates, values)).value >= values.max()
    # the set is drawn once: the members' candidates are that set less the taken points
    assert len(screening.candidates) == len(candidates)
    # a model without that posterior (DNGO's batches are joint draws) screens per member as before
    other = ExactGP(3, lengthscales=(0.3,))
    other.fit(torch.as_tensor(X), torch.sin(6 * torch.as_tensor(X)).sum(1))
    screening = BatchScreening()
    screening.members = 1
    assert screening.scores(make_acquisition("ei", other, -1.0), other, other, torch.zeros(0, 3), space,
                            avoid=X, anchors=None, n_candidates=256, seed=0, keep_away=None) is None
    # nor does an acquisition that reads no objective posterior (P(feasible) alone, before any
    # feasible point), while a feasibility-weighted EI takes its base's posterior score
    screening = BatchScreening()
    screening.members = 1
    only_feasibility = make_acquisition("ei", None, None, [DiskFeasibility()])
    assert not only_feasibility.scores_posterior
    assert screening.scores(only_feasibility, gp, gp, torch.zeros(0, 3), space, avoid=X, anchors=None,
                            n_candidates=256, seed=0, keep_away=None) is None
    weighted = make_acquisition("ei", gp, -1.0, [DiskFeasibility()])
    assert weighted.scores_posterior and make_acquisition("lcb", gp, -1.0).scores_posterior
