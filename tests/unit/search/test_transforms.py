"""Output transforms: monotone, standardised, and they leave the incumbent finite."""
import numpy as np
import pytest

from scipy import stats

from experiments.benchmarks.functions import FUNCTIONS
from spearmint_nn.search.transforms import (LOG_SHIFT_FRACTION, MIN_DELTA_FRACTION, OUTPUT_TRANSFORMS, LogShift, Standardisation,
                                     SymmetryChosen, YeoJohnson)


@pytest.mark.parametrize("name", sorted(OUTPUT_TRANSFORMS))
def test_fitted_values_are_standardised_and_order_is_kept(name):
    y = np.random.default_rng(0).gamma(0.5, 30.0, size=200)
    transform = OUTPUT_TRANSFORMS[name].fit(y)
    z = transform(y)
    assert abs(z.mean()) < 1e-12 and abs(z.std() - 1.0) < 1e-12
    order = np.argsort(y)
    assert (np.diff(z[order]) >= 0).all()
    assert np.isfinite(transform(y.min()))


def test_log_shift_stretches_the_values_near_the_best_relative_to_standardising():
    # Branin-like: most points far above the minimum, a few close to it.
    y = np.concatenate([[0.40, 0.45, 1.9, 2.4], np.linspace(10.0, 300.0, 40)])
    near_gap = lambda t: float(t(np.array([2.4]))[0] - t(np.array([0.40]))[0])
    assert near_gap(LogShift.fit(y)) > 10 * near_gap(Standardisation.fit(y))


def test_log_shift_bounds_how_far_the_best_point_stands_out():
    y = np.array([0.0, 1.0, 2.0, 3.0, 100.0])
    transform = LogShift.fit(y)
    assert transform.delta == pytest.approx(LOG_SHIFT_FRACTION * 100.0)
    z = transform(y)
    assert (z[1] - z[0]) * transform.std == pytest.approx(np.log(1.0 + transform.delta) - np.log(transform.delta))


def branin_run_closing_in() -> np.ndarray:
    """Values of a Branin run that has sampled one basin densely: 30 random points, then 10 within
    0.1 of the minimum 0.3979."""
    f = FUNCTIONS["branin"]
    lows, highs = np.array(f.bounds).T
    scattered = [f.function(x) for x in lows + (highs - lows) * np.random.default_rng(1).random((30, f.dim))]
    return np.concatenate([scattered, 0.3979 + np.geomspace(1e-4, 0.1, 10)])


def test_log_shift_resolves_the_floor_of_a_basin_the_run_has_closed_in_on():
    y = branin_run_closing_in()
    best_gap = lambda t: float(t(np.array([0.3979 + 1e-3]))[0] - t(np.array([0.3979 + 1e-4]))[0])
    # With delta a share of the range (about 3 here), regret 1e-4 and 1e-3 are a fraction of a
    # hundredth of a standardised unit apart, far below DNGO's training misfit (about 0.02).
    assert best_gap(LogShift.fit(y, resolve_best=False)) < 0.002
    transform = LogShift.fit(y)
    # k = 4 of 40: delta is the gap to the fourth best value.
    assert transform.delta == pytest.approx(np.sort(y)[3] - y.min())
    assert best_gap(transform) > 0.1


def test_log_shift_keeps_a_positive_delta_when_the_best_values_tie():
    y = np.array([1.0, 1.0, 1.0, 1.0, 5.0, 101.0])
    transform = LogShift.fit(y)
    assert transform.delta == pytest.approx(MIN_DELTA_FRACTION * 100.0)
    assert np.isfinite(transform(y)).all()


def test_the_default_chooses_the_log_by_shape_then_resolves_the_best_values():
    y = branin_run_closing_in()
    chosen = SymmetryChosen.fit(y)
    assert isinstance(chosen, LogShift)
    assert chosen == LogShift.fit(y)


def test_yeo_johnson_compresses_a_long_bad_tail_without_a_cusp_at_the_best_value():
    y = branin_run_closing_in()
    transform = YeoJohnson.fit(y)
    assert transform.power < 0.5  # a long tail of bad values: a compressing power
    z = transform(y)
    assert abs(np.mean(z**3)) < 0.5 * abs(np.mean(Standardisation.fit(y)(y) ** 3))
    # Smooth at the best value: equal steps above it change z by nearly equal amounts (the log
    # shift, tied to the best value, makes the first step several times the second).
    steps = lambda t: np.diff(t(0.3979 + np.array([0.0, 0.5, 1.0])))
    assert steps(transform)[0] / steps(transform)[1] < 1.1
    assert steps(LogShift.fit(y))[0] / steps(LogShift.fit(y))[1] > 2.0


def test_yeo_johnson_power_is_the_maximum_likelihood_one():
    y = np.random.default_rng(3).lognormal(0.0, 1.0, size=60)
    transform = YeoJohnson.fit(y)
    z = transform.scores(y)
    llf = lambda power: stats.yeojohnson_llf(power, z)
    assert llf(transform.power) > max(llf(transform.power - 0.05), llf(transform.power + 0.05))
    assert transform.power != pytest.approx(1.0, abs=0.2)  # the skewed sample is not left alone


def test_yeo_johnson_is_the_z_score_below_three_distinct_values():
    for y in (np.array([2.0, 7.0]), np.array([1.0, 1.0, 4.0, 4.0])):
        transform = YeoJohnson.fit(y)
        assert transform.power == 1.0
        np.testing.assert_allclose(transform(y), Standardisation.fit(y)(y), atol=1e-12)


def test_a_constant_objective_does_not_divide_by_zero():
    for cls in (Standardisation, LogShift, YeoJohnson):
        z = cls.fit(np.full(5, 3.0))(np.full(5, 3.0))
        assert np.isfinite(z).all()


@pytest.mark.slow
def test_the_optimizer_fits_its_model_to_the_configured_transform():
    from spearmint_nn import Optimizer
    from spearmint_nn.errors import ConfigError

    variables = {"x": {"type": "FLOAT", "min": 0.0, "max": 1.0}}
    with pytest.raises(ConfigError, match="output_transform"):
        Optimizer(variables, model="gp", output_transform="box-cox")
    values = [5.0, 0.5, 80.0, 1.0]
    for model, name, cls in [("gp", "standardise", Standardisation), ("gp", "log-shift", LogShift),
                             ("gp", "auto", YeoJohnson), ("dngo", "auto", LogShift)]:
        opt = Optimizer(variables, model=model, seed=0, output_transform=name, initial_design=4)
        for x, value in zip([0.1, 0.4, 0.9, 0.6], values):
            opt.observe({"x": x}, value)
        opt.suggest(1)
        assert opt.models.transform == cls.fit(np.array(values)), (model, name)


@pytest.mark.parametrize("problem, chosen", [("branin", LogShift), ("hartmann6", Standardisation)])
def test_the_default_takes_the_log_only_where_it_makes_the_values_more_symmetric(problem, chosen):
    f = FUNCTIONS[problem]
    rng = np.random.default_rng(0)
    lows, highs = np.array(f.bounds).T
    y = np.array([f.function(x) for x in lows + (highs - lows) * rng.random((64, f.dim))])
    assert isinstance(SymmetryChosen.fit(y), chosen)


def random_objectives(seed: int) -> list[np.ndarray]:
    """Objective values of several shapes: skewed to the bad side, to the good side, symmetric,
    with ties, negative and large."""
    rng = np.random.default_rng(seed)
    return [rng.gamma(0.5, 30.0, size=40), -rng.gamma(0.7, 2.0, size=25) + 3.0, rng.normal(5.0, 2.0, size=30),
            np.repeat(rng.normal(size=6), 3), 1e4 * rng.standard_cauchy(size=20), rng.uniform(size=3)]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("transform_class", [Standardisation, LogShift, YeoJohnson])
def test_untransform_inverts_the_transform_exactly(transform_class, seed):
    rng = np.random.default_rng(100 + seed)
    for y in random_objectives(seed):
        transform = transform_class.fit(y)
        # observed values, values beyond them, and one value on its own (a scalar)
        values = np.concatenate([y, y.min() + (y.max() - y.min()) * rng.uniform(-0.2, 1.5, size=20)])
        if transform_class is LogShift:
            values = values[values > transform.lowest - transform.delta]
        back = transform.untransform(transform(values))
        np.testing.assert_allclose(back, values, rtol=1e-9, atol=1e-9 * (np.abs(y).max() + 1.0))
        assert float(transform.untransform(transform(float(y[0])))) == pytest.approx(float(y[0]), rel=1e-9, abs=1e-12)
        z = transform(values)
        np.testing.assert_allclose(transform(transform.untransform(z)), z, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("power", [-3.0, -0.5, 0.0, 1e-20, 0.5, 1.0, 2.0, 2.0 + 1e-17, 3.5, 4.0])
def test_the_yeo_johnson_inverse_is_exact_at_every_power_within_the_bounds(power):
    x = np.concatenate([-np.geomspace(1e-12, 30.0, 40), [0.0], np.geomspace(1e-12, 30.0, 40)])
    transform = YeoJohnson(power=power)
    np.testing.assert_allclose(transform.untransform(transform(x)), x, rtol=1e-9, atol=1e-15)


def test_the_yeo_johnson_inverse_of_a_value_no_value_transforms_to_is_nan():
    # power -1 maps the values >= 0 onto [0, 1): nothing transforms to 2.
    assert np.isnan(YeoJohnson(power=-1.0).untransform(np.array([2.0]))).all()
    assert np.isnan(YeoJohnson(power=3.0).untransform(np.array([-2.0]))).all()
