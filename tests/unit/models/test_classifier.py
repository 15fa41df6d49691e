"""The constraint network: calibration, the Laplace posterior, gradients, fantasies, its state."""
from __future__ import annotations

import pytest
import torch

from spearmint_nn.models.base import ConstraintModel
from spearmint_nn.models.classifier import ConstraintClassifier
from spearmint_nn.search import model_store

torch.set_num_threads(1)

CENTRE = torch.tensor([0.45, 0.55], dtype=torch.float64)
RADIUS = 0.3


def in_disk(X: torch.Tensor) -> torch.Tensor:
    return (X - CENTRE).norm(dim=-1) < RADIUS


def uniform(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.fixture(scope="module")
def disk_model() -> ConstraintClassifier:
    X = uniform(60, seed=0)
    model = ConstraintClassifier(2, seed=0)
    model.fit(X, in_disk(X))
    return model


def brier(p: torch.Tensor, labels: torch.Tensor) -> float:
    return float(((p - labels.double()) ** 2).mean())


@pytest.mark.parametrize("noiseless", [False, True])
def test_probability_is_calibrated_on_a_feasible_disk(noiseless: bool, disk_model: ConstraintClassifier) -> None:
    if noiseless:
        X = uniform(60, seed=0)
        model = ConstraintClassifier(2, seed=0, noiseless=True)
        model.fit(X, in_disk(X))
    else:
        model = disk_model
    X_test = uniform(4000, seed=1)
    labels = in_disk(X_test)
    with torch.no_grad():
        p = model.probability(X_test)
    constant = brier(labels.double().mean().expand(len(labels)), labels)
    assert brier(p, labels) < 0.3 * constant

    distance = (X_test - CENTRE).norm(dim=-1)
    deep_inside, far_outside = distance < 0.1, distance > 0.55
    assert deep_inside.sum() > 50 and far_outside.sum() > 50
    assert float(p[deep_inside].min()) > 0.9
    assert float(p[far_outside].max()) < 0.1


def _negative_log_posterior(theta: torch.Tensor, phi: torch.Tensor, labels: torch.Tensor, slope: float, alpha: float) -> torch.Tensor:
    """-log p(theta | D) up to a constant, written out from the Bernoulli likelihood."""
    z = slope * (phi @ theta)
    log_lik = torch.where(labels, torch.nn.functional.logsigmoid(z), torch.nn.functional.logsigmoid(-z)).sum()
    return -log_lik + 0.5 * alpha * theta.dot(theta)


def test_laplace_covariance_is_the_inverse_finite_difference_hessian() -> None:
    X = uniform(40, seed=2)
    labels = in_disk(X)
    model = ConstraintClassifier(2, seed=3)
    model.fit(X, labels, epochs=300)
    with torch.no_grad():
        phi = model.features(X)
    theta = model.theta.clone()

    def f(t: torch.Tensor) -> float:
        return float(_negative_log_posterior(t, phi, labels, model.slope, model.alpha))

    # theta is a mode: the central-difference gradient vanishes
    h = 1e-5
    n = theta.shape[0]
    eye = torch.eye(n, dtype=torch.float64)
    grad = torch.tensor([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in eye])
    assert float(grad.abs().max()) < 1e-5

    h = 1e-4
    hessian = torch.empty(n, n, dtype=torch.float64)
    f0 = f(theta)
    for i in range(n):
        for j in range(i, n):
            if i == j:
                value = (f(theta + h * eye[i]) - 2 * f0 + f(theta - h * eye[i])) / h**2
            else:
                value = (
                    f(theta + h * (eye[i] + eye[j])) - f(theta + h * (eye[i] - eye[j]))
                    - f(theta - h * (eye[i] - eye[j])) + f(theta - h * (eye[i] + eye[j]))
                ) / (4 * h**2)
            hessian[i, j] = hessian[j, i] = value
    expected = torch.linalg.inv(hessian)
    covariance = model.laplace_covariance()
    assert torch.allclose(covariance, expected, rtol=1e-3, atol=1e-4 * float(expected.abs().max()))


def test_probability_gradient_matches_finite_differences(disk_model: ConstraintClassifier) -> None:
    X = uniform(5, seed=4).requires_grad_(True)
    assert torch.autograd.gradcheck(disk_model.probability, (X,), eps=1e-6, atol=1e-7)
    fantasy = disk_model.fantasize(uniform(3, seed=5), 4, torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(fantasy.probability, (X,), eps=1e-6, atol=1e-7)


def test_all_feasible_means_probability_one_without_a_network() -> None:
    X = uniform(20, seed=6)
    model = ConstraintClassifier(2, seed=0)
    model.fit(X, torch.ones(20, dtype=torch.bool))
    assert model.trivial
    assert torch.equal(model.probability(uniform(7, seed=7)), torch.ones(7, dtype=torch.float64))
    fantasy = model.fantasize(uniform(3, seed=8), 5, torch.Generator().manual_seed(0))
    assert fantasy.trivial and torch.equal(fantasy.probability(uniform(7, seed=7)), torch.ones(7, dtype=torch.float64))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_all_infeasible_steers_away_from_the_failures(seed: int) -> None:
    # failures clustered in one corner: P(feasible) is lower there than far away, and its
    # maximiser (what the search follows while nothing is feasible) lies far from them
    X = 0.2 * uniform(8, seed=9 + seed)
    model = ConstraintClassifier(2, seed=seed)
    model.fit(X, torch.zeros(8, dtype=torch.bool))
    grid = uniform(2000, seed=20)
    with torch.no_grad():
        at_failures = model.probability(X)
        p = model.probability(grid)
    assert float(at_failures.max()) < 0.2
    assert float(p[grid.norm(dim=1) > 0.8].mean()) > float(at_failures.max())
    assert float(grid[p.argmax()].norm()) > 0.8


@pytest.mark.parametrize("noiseless", [False, True])
def test_three_labels_leave_unexplored_corners_uncertain(noiseless: bool) -> None:
    # one success at the top, two failures at the bottom: P(feasible) should rise towards the
    # success and fall towards the failures, but no corner is settled by three labels
    X = torch.tensor([[0.3, 0.3], [0.8, 0.1], [0.5, 0.8]], dtype=torch.float64)
    model = ConstraintClassifier(2, seed=0, noiseless=noiseless)
    model.fit(X, torch.tensor([False, False, True]))
    corners = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    with torch.no_grad():
        p_corners, p_labels = model.probability(corners), model.probability(X)
    assert float(p_corners.min()) > 0.15 and float(p_corners.max()) < 0.85
    assert float(p_labels[2]) > float(p_labels[:2].max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_successes_leave_the_empty_corners_uncertain(seed: int) -> None:
    # Two successes side by side and three failures (a search's first five jobs): a network
    # trained on them put P(feasible) at 0.99-1.00 in the empty corners (0, 0) and (0, 1), and
    # the search tried both; the untrained basis keeps them near the labels' base rate.
    X = torch.tensor([[0.843, 0.789], [0.347, 0.284], [0.106, 0.529], [0.091, 0.535], [0.472, 1.0]],
                     dtype=torch.float64)
    model = ConstraintClassifier(2, seed=seed, noiseless=True)
    model.fit(X, torch.tensor([False, False, True, True, False]))
    corners = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    with torch.no_grad():
        p_corners, p_successes = model.probability(corners), model.probability(X[2:4])
    assert float(p_corners.max()) < 0.65 and float(p_successes.min()) > 0.75


def test_fantasies_move_probability_towards_the_drawn_label(disk_model: ConstraintClassifier) -> None:
    # a pending point on the disk's edge, where the model is unsure
    pending = torch.tensor([[CENTRE[0] + RADIUS, CENTRE[1]]], dtype=torch.float64)
    with torch.no_grad():
        base = float(disk_model.probability(pending))
        fantasy = disk_model.fantasize(pending, 64, torch.Generator().manual_seed(1))
        p = fantasy.probability(pending)[:, 0]
        elsewhere = fantasy.probability(uniform(50, seed=10))
    assert fantasy.probability(uniform(3, seed=11)).shape == (64, 3)
    assert 0.05 < base < 0.95
    moved_up, moved_down = p > base + 1e-3, p < base - 1e-3
    assert int(moved_up.sum()) > 5 and int(moved_down.sum()) > 5
    assert bool((moved_up | moved_down).all())
    # the pending point barely moves the posterior far from it
    assert float((elsewhere - disk_model.probability(uniform(50, seed=10)).detach()).abs().median()) < 0.05


def test_a_fantasy_is_a_classifier_whose_refit_leaves_the_original_alone(disk_model: ConstraintClassifier) -> None:
    X_test = uniform(20, seed=15)
    with torch.no_grad():
        before = disk_model.probability(X_test)
    fantasy = disk_model.fantasize(uniform(3, seed=16), 4, torch.Generator().manual_seed(0))
    assert isinstance(fantasy, ConstraintClassifier) and isinstance(fantasy, ConstraintModel)
    X = uniform(30, seed=17)
    fantasy.fit(X, ~in_disk(X), epochs=20)
    assert fantasy.probability(X_test).shape == (20,)
    with torch.no_grad():
        assert torch.equal(disk_model.probability(X_test), before)


def test_warm_start_continues_from_the_previous_network(tmp_path) -> None:
    X = uniform(50, seed=12)
    labels = in_disk(X)
    model = ConstraintClassifier(2, seed=0)
    model.fit(X[:40], labels[:40])
    first_layer = model.net.hidden[0].weight.detach().clone()
    model_store.save_state(tmp_path, model)

    model.fit(X, labels)
    change = (model.net.hidden[0].weight.detach() - first_layer).norm() / first_layer.norm()
    fresh = ConstraintClassifier(2, seed=1)
    fresh.fit(X[:40], labels[:40])
    assert change < 0.5 * (fresh.net.hidden[0].weight.detach() - first_layer).norm() / first_layer.norm()

    restored = model_store.restore_state(tmp_path, ConstraintClassifier(2, seed=0), 2)
    restored.fit(X, labels)
    X_test = uniform(30, seed=13)
    assert torch.allclose(restored.probability(X_test), model.probability(X_test), atol=1e-9)


def test_state_round_trip_is_exact_and_needs_the_same_configuration(tmp_path, disk_model: ConstraintClassifier) -> None:
    X_test = uniform(30, seed=14)
    restored = ConstraintClassifier(2, seed=5)
    restored.load_state_dict(disk_model.state_dict())
    assert torch.equal(restored.probability(X_test), disk_model.probability(X_test))
    model_store.save_state(tmp_path, disk_model)
    assert torch.load(tmp_path / model_store.STATE_FILE, weights_only=True)["theta"] is not None
    from_file = model_store.restore_state(tmp_path, ConstraintClassifier(2), 2)
    assert torch.equal(from_file.probability(X_test), disk_model.probability(X_test))
    noiseless = ConstraintClassifier(2, noiseless=True)
    with pytest.raises(ValueError, match="noiseless"):
        noiseless.load_state_dict(disk_model.state_dict())
    assert noiseless.trivial and model_store.restore_state(tmp_path, noiseless, 2).trivial


@pytest.mark.parametrize("labels", [[True] * 6, [True, False, True, True, True, False]])
def test_a_trivial_or_fourier_classifier_round_trips(labels: list[bool]) -> None:
    X = uniform(6, seed=18)
    model = ConstraintClassifier(2, seed=0)
    model.fit(X, torch.tensor(labels))
    restored = ConstraintClassifier(2, seed=0)
    restored.load_state_dict(model.state_dict())
    assert restored.trivial == model.trivial and restored.basis_trained is False
    X_test = uniform(10, seed=19)
    assert torch.equal(restored.probability(X_test), model.probability(X_test))


def test_noiseless_posterior_tightens_at_observed_failures() -> None:
    # step likelihood: every label adds the boundary curvature k^2/4, so an observed failure is
    # (nearly) surely infeasible, where the noisy model keeps hedging
    X = uniform(40, seed=2)
    labels = in_disk(X)
    noiseless = ConstraintClassifier(2, seed=3, noiseless=True)
    noiseless.fit(X, labels, epochs=300)
    with torch.no_grad():
        phi = noiseless.features(X)
    expected = phi.T @ phi * noiseless.slope**2 / 4 + noiseless.alpha * torch.eye(phi.shape[1], dtype=torch.float64)
    assert torch.allclose(noiseless.laplace_covariance(), torch.linalg.inv(expected), rtol=1e-6, atol=1e-9)
    with torch.no_grad():
        p_failed = noiseless.probability(X[~labels])
    assert float(p_failed.max()) < 0.05
