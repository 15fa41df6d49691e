"""The batched slice sampler recovers moments of known densities."""
import math

import pytest
import torch

from spearmint_nn.models.sampling import slice_sample, slice_sweep

torch.set_num_threads(1)
DT = torch.float64


def draws(log_density, x0, n=400, burn_in=20, widths=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return slice_sample(log_density, x0, n, burn_in=burn_in, widths=widths, generator=g).reshape(-1, x0.shape[1])


def test_one_dimensional_gaussian():
    mu, sd = 1.5, 0.7
    x = draws(lambda x: -0.5 * ((x[:, 0] - mu) / sd) ** 2, torch.zeros(16, 1, dtype=DT))
    assert abs(x.mean().item() - mu) < 0.05
    assert abs(x.var().item() / sd**2 - 1) < 0.1


def test_gamma_on_the_positive_reals_with_minus_infinity_outside():
    shape, rate = 3.0, 2.0

    def log_gamma(x):
        t = x[:, 0]
        inside = (shape - 1) * torch.log(t.clamp_min(1e-300)) - rate * t
        return torch.where(t > 0, inside, torch.full_like(t, -math.inf))

    x = draws(log_gamma, torch.ones(16, 1, dtype=DT), widths=0.5)
    assert (x > 0).all()
    assert abs(x.mean().item() - shape / rate) < 0.05
    assert abs(x.var().item() / (shape / rate**2) - 1) < 0.1


def test_two_dimensional_correlated_gaussian():
    mean = torch.tensor([-1.0, 2.0], dtype=DT)
    cov = torch.tensor([[1.0, 0.8 * 0.5], [0.8 * 0.5, 0.25]], dtype=DT)
    precision = torch.linalg.inv(cov)

    def log_normal(x):
        d = x - mean
        return -0.5 * torch.einsum("ci,ij,cj->c", d, precision, d)

    x = draws(log_normal, torch.zeros(16, 2, dtype=DT), n=600, widths=torch.tensor([1.0, 0.5], dtype=DT))
    torch.testing.assert_close(x.mean(0), mean, rtol=0, atol=0.05)
    torch.testing.assert_close(torch.cov(x.T), cov, rtol=0, atol=0.07)


def test_chains_are_independent_of_each_other():
    """Two chains started far apart on either side both settle on the same distribution."""
    x0 = torch.tensor([[-50.0], [50.0]], dtype=DT)
    g = torch.Generator().manual_seed(1)
    samples = slice_sample(lambda x: -0.5 * x[:, 0] ** 2, x0, 2000, burn_in=20, widths=1.0, generator=g)
    for chain in range(2):
        assert abs(samples[:, chain, 0].mean().item()) < 0.15
        assert abs(samples[:, chain, 0].var().item() - 1) < 0.15


def test_a_start_outside_the_support_is_refused():
    with pytest.raises(ValueError):
        slice_sweep(lambda x: torch.where(x[:, 0] > 0, -x[:, 0], torch.full_like(x[:, 0], -math.inf)),
                    torch.tensor([[-1.0]], dtype=DT), 1.0)


def test_stepping_out_evaluates_both_bracket_ends_in_one_call_and_no_state_twice():
    """Every call gets at most both ends of the C chains' brackets (2C states), only those whose
    density is still needed: a coordinate update of 8 chains on a standard normal (width 2.5)
    costs ~6 calls; evaluating the two ends in separate calls, as a plain coordinate-wise sampler
    does, costs ~8.4. An end already outside the slice, or a chain already accepted, is not
    evaluated again."""
    sizes, seen, repeats = [], set(), 0

    def log_density(x):
        nonlocal repeats
        sizes.append(len(x))
        for row in x.tolist():
            repeats += tuple(row) in seen
            seen.add(tuple(row))
        return -0.5 * (x**2).sum(-1)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 3, generator=g, dtype=DT)
    for _ in range(20):
        seen.clear()
        x, _ = slice_sweep(log_density, x, 2.5, g)
    assert max(sizes) == 16 and min(sizes) < 8 and repeats == 0
    calls_per_update = (len(sizes) - 20) / (20 * 3)  # one starting evaluation per sweep
    assert calls_per_update < 7.5


def _sweep_evaluating_every_state(log_density, x, widths, generator, max_step_out=32, max_shrink=64):
    """The sweep as it was written before it evaluated only the needed states: every call on all
    2C bracket ends or all C chains."""
    x = x.clone()
    C, P = x.shape
    w = torch.as_tensor(widths, dtype=x.dtype).expand(P)
    logp = log_density(x)
    rand = lambda n: torch.rand(n, generator=generator, dtype=x.dtype)  # noqa: E731

    def at(coord, values):
        moved = x.repeat(len(values) // C, 1)
        moved[:, coord] = values
        return log_density(moved)

    for d in range(P):
        level = logp + torch.log(rand(C))
        left = x[:, d] - rand(C) * w[d]
        right = left + w[d]
        for _ in range(max_step_out):
            ends = at(d, torch.cat([left, right])) > level.repeat(2)
            if not ends.any():
                break
            left, right = torch.where(ends[:C], left - w[d], left), torch.where(ends[C:], right + w[d], right)
        new, new_logp, todo = x[:, d].clone(), logp.clone(), torch.ones(C, dtype=torch.bool)
        for _ in range(max_shrink):
            proposal = left + rand(C) * (right - left)
            lp = at(d, proposal)
            accept = todo & (lp > level)
            new, new_logp = torch.where(accept, proposal, new), torch.where(accept, lp, new_logp)
            todo = todo & ~accept
            if not todo.any():
                break
            below = proposal < x[:, d]
            left, right = torch.where(todo & below, proposal, left), torch.where(todo & ~below, proposal, right)
        x[:, d], logp = new, new_logp
    return x, logp


def test_evaluating_only_the_needed_states_moves_the_chains_exactly_as_evaluating_all():
    # a skewed, bounded density: brackets step out several times and shrink from both sides
    def log_density(x):
        inside = (x > -3).all(-1)
        return torch.where(inside, -0.5 * (x**2).sum(-1) + x[:, 0] - 0.3 * x[:, 1] ** 4, -math.inf)

    start = torch.randn(6, 2, generator=torch.Generator().manual_seed(2), dtype=DT) * 0.5
    mine, reference = start, start
    g_mine, g_reference = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(30):
        mine, mine_logp = slice_sweep(log_density, mine, 0.3, g_mine)
        reference, reference_logp = _sweep_evaluating_every_state(log_density, reference, 0.3, g_reference)
    assert torch.equal(mine, reference) and torch.equal(mine_logp, reference_logp)
    assert not torch.equal(mine, start)
