"""How the Optimizer tells its models about the experiment: the objective's likelihood, EI per
second with a duration model (and the daemon recording predicted durations), the saved warpings
the report reads, conditional spaces (arc kernel, inactive variables left alone by the
acquisition optimiser), and the ``auto`` model's switch from the GP to DNGO."""
from __future__ import annotations

import dataclasses
import io
import json
import math
import struct
import threading

import numpy as np
import pytest
import torch

from helpers.experiments import BRANIN_VARIABLES, all_jobs, cli, quick_config
from spearmint_nn.search.acquisition import Acquisition
from spearmint_nn.experiment.config import load_config
from spearmint_nn.daemon.proposer import Proposer
from spearmint_nn.daemon.event_log import EventLog
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.models.dngo import DNGO
from spearmint_nn.models.gp import GP
from spearmint_nn.models.gp_hyperparameters import NOISELESS_JITTER
from spearmint_nn.search.candidates import continuous_columns
from spearmint_nn.search.maximize import _refine, maximize
from spearmint_nn.search import model_store
from spearmint_nn.search.model_bank import conditional_kernel
from spearmint_nn.search.optimizer import Optimizer
from spearmint_nn.search.model_store import AUTO_STATE_FILE
from spearmint_nn.search.policy import (
    AUTO_GP_MAX_IN_FLIGHT, AUTO_GP_MAX_OBSERVATIONS, AUTO_GP_MAX_WAITING_SHARE, PACE_CALLS, auto_model_choice,
    waiting_share,
)
from spearmint_nn.problem.space import Space

torch.set_num_threads(1)

LINE = {"x": {"type": "FLOAT", "min": 0.0, "max": 1.0}}
# Small sampler budgets: these tests check the wiring, not the GP's statistics.
QUICK_GP = {"n_samples": 4, "burn_in": 4, "sweeps_per_fit": 1}
CONDITIONAL = {
    "kind": {"type": "ENUM", "options": ["a", "b"]},
    "shared": {"type": "FLOAT", "min": 0.0, "max": 1.0},
    "only_a": {"type": "FLOAT", "min": 0.0, "max": 1.0, "when": {"kind": "a"}},
    "layers": {"type": "INT", "min": 1, "max": 3},
    "second": {"type": "FLOAT", "min": 1e-3, "max": 1.0, "scale": "log", "when": {"layers": {">=": 2}}},
}


def _observe_line(opt: Optimizer, xs, duration=None) -> None:
    for x in xs:
        opt.observe({"x": [x]}, (x - 0.3) ** 2, duration=None if duration is None else duration(x))


# ---- 1. the objective's likelihood -----------------------------------------------------------

@pytest.mark.parametrize("likelihood, noiseless", [("NOISELESS", True), ("GAUSSIAN", False)])
def test_the_objective_likelihood_reaches_the_gp(likelihood, noiseless):
    opt = Optimizer(LINE, model="gp", seed=0, initial_design=3, likelihoods={"main": likelihood},
                    model_options=QUICK_GP)
    _observe_line(opt, [0.1, 0.5, 0.9, 0.7])
    opt.suggest(1)
    noise = opt.models.objective.hyperparameters()["noise"]
    assert opt.models.objective.noiseless is noiseless
    if noiseless:
        assert noise == [NOISELESS_JITTER] * 4
    else:
        assert all(n != NOISELESS_JITTER for n in noise)


def test_dngo_is_built_without_gp_only_options():
    opt = Optimizer({**LINE, "k": {"type": "INT", "min": 1, "max": 2},
                     "c": {"type": "FLOAT", "min": 0, "max": 1, "when": {"k": 2}}},
                    model="dngo", seed=0, likelihoods={"main": "NOISELESS"})
    assert isinstance(opt.models.new_surrogate("main"), DNGO)  # neither noiseless= nor conditional= passed


# ---- 2. EI per second --------------------------------------------------------------------------

def test_ei_per_second_fits_a_duration_model_and_reports_predicted_seconds():
    def seconds(x: float) -> float:
        return math.exp(1.0 + 4.0 * x)  # 2.7 s at x = 0, 400 s at x = 1

    opt = Optimizer(LINE, model="gp-nowarp", seed=0, initial_design=3, acquisition="ei-per-second",
                    model_options=QUICK_GP)
    assert opt.propose(1).predicted_durations == [None]  # Sobol stage: no duration model yet
    _observe_line(opt, [0.05, 0.2, 0.4, 0.6, 0.8, 0.95], duration=seconds)
    suggestion = opt.propose(1)
    ((params,), (predicted,)) = suggestion.points, suggestion.predicted_durations
    x = float(params["x"][0])
    assert isinstance(predicted, float) and predicted > 0
    assert abs(math.log(predicted) - math.log(seconds(x))) < math.log(1.5), (x, predicted)
    # the duration model is fitted on log seconds and orders cheap before expensive
    low, high = opt.models.durations.predict(np.array([0.1])), opt.models.durations.predict(np.array([0.9]))
    assert high / low > 10


def test_plain_ei_predicts_no_durations():
    opt = Optimizer(LINE, model="gp-nowarp", seed=0, initial_design=3, model_options=QUICK_GP)
    _observe_line(opt, [0.1, 0.5, 0.9], duration=lambda x: 5.0)
    assert opt.propose(2).predicted_durations == [None, None] and opt.models.durations.model is None


def test_the_proposer_hands_predicted_durations_to_the_daemon_as_job_fields():
    opt = Optimizer(LINE, model="gp-nowarp", seed=0, initial_design=3, acquisition="ei-per-second",
                    model_options=QUICK_GP)
    wake = threading.Event()
    proposer = Proposer(opt, EventLog(None, io.StringIO()), wake)
    try:
        for x in (0.1, 0.5, 0.9):
            proposer.observe(round(x * 10), {"x": [x]}, x, 10.0 * (1 + x))
        proposer.request(2, [])
        assert wake.wait(120)
        proposal = proposer.take()
        assert len(proposal) == 2 and len(proposer.taken_fields) == 2
        for params, fields in zip(proposal, proposer.taken_fields):
            assert set(fields) == {"predicted_duration", "chosen_by", "search_start"}
            assert fields["chosen_by"] == "gp-nowarp" and fields["search_start"] == 0
            assert 5.0 < fields["predicted_duration"] < 40.0  # observed: 11 to 19 s
    finally:
        proposer.close()


def test_the_proposer_reports_a_restart_as_an_event():
    opt = Optimizer(LINE, model="gp-nowarp", seed=0, initial_design=2, model_options=QUICK_GP)
    log, wake = io.StringIO(), threading.Event()
    proposer = Proposer(opt, EventLog(None, log), wake)
    try:
        for i in range(20):  # nothing improves on the first value: a restart at 20 (10 x the design)
            proposer.observe(i, {"x": [i / 20]}, 0.0 if i == 0 else 1.0 + i / 100, None)
        proposer.request(1, [])
        assert wake.wait(120)
        assert len(proposer.take()) == 1
        assert proposer.taken_fields == [{"chosen_by": "sobol", "search_start": 20}]  # a new design
    finally:
        proposer.close()
    assert opt.search_start == 20
    assert "the search restarted at evaluation 20" in log.getvalue()
    random_search = Optimizer(LINE, model="sobol", seed=0, initial_design=2)
    for i in range(20):
        random_search.observe({"x": [i / 20]}, 0.0 if i == 0 else 1.0)
    assert random_search.search_start == 0  # no model, nothing to restart


# ---- 3 + 2, end to end: the daemon records predictions, the report draws warpings and durations

SLEEPY_WRAPPER = """
import time

def main(job_id, params):
    x = float(params["x"][0])
    time.sleep(0.05 + 0.4 * x)
    return (x - 0.3) ** 2
"""


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_gp_run_with_ei_per_second_records_predictions_and_reports_warpings(make_experiment):
    folder = make_experiment(quick_config(**{
        "variables": LINE, "model": "gp", "acquisition": "ei-per-second", "initial-design": 3,
        "max-concurrent": 1, "max-finished-jobs": 7}), {"wrapper.py": SLEEPY_WRAPPER})
    result = cli("run", folder, timeout=900)
    assert result.returncode == 0, result.stderr
    jobs = [job for _, job in all_jobs(folder).values()]
    assert [job["state"] for job in jobs] == ["complete"] * 7
    assert all("predicted_duration" not in job for job in jobs[:3])  # the Sobol design
    assert [job["chosen_by"] for job in jobs] == ["sobol"] * 3 + ["gp"] * 4
    predicted = [job for job in jobs[3:] if "predicted_duration" in job]
    assert len(predicted) >= 3
    for job in predicted:
        assert 0.02 < job["predicted_duration"] < 2.0 and job["duration"] > 0

    paths = ExperimentPaths(folder)
    summary = json.loads(paths.warpings.read_text())  # written by the GP, read by the report
    assert len(summary["inputs"]) == 1 and len(summary["inputs"][0]["mean"]) == len(summary["grid"])

    from spearmint_nn.views import plots
    from spearmint_nn.views.status import take_snapshot

    keys = [section.key for section in plots.sections(take_snapshot(folder))]
    # one numeric parameter: no landing matrix and no contour; a real run has its phases
    assert keys == ["convergence", "parameters", "coordinates", "importance", "slices", "phases",
                    "warpings", "durations"]
    out = folder / "report.png"
    result = cli("report", folder, "--plot", out)
    assert result.returncode == 0, result.stderr
    width, height = _png_size(out.read_bytes())
    assert width > 500 and height > 1000  # four stacked sections


def test_the_proposer_writes_the_gps_warpings_where_the_report_reads_them(tmp_path):
    from spearmint_nn.views import plots

    paths = ExperimentPaths(tmp_path)
    opt = Optimizer(BRANIN_VARIABLES, model="gp", seed=0, initial_design=3, model_options=QUICK_GP)
    assert opt.warpings is None  # no fit yet
    wake = threading.Event()
    proposer = Proposer(opt, EventLog(None, io.StringIO()), wake, warpings_file=paths.warpings)
    try:
        for i, (x, y) in enumerate([(-3, 2), (0, 10), (5, 5), (9, 1)]):
            proposer.observe(i, {"x": [x], "y": [y]}, float(x * x + y), None)
        proposer.request(1, [])
        assert wake.wait(120) and len(proposer.take()) == 1
    finally:
        proposer.close()
    summary = plots.read_warpings(paths)
    assert summary is not None and len(summary["inputs"]) == 2
    assert summary == opt.models.objective.warpings() == opt.warpings
    assert opt.propose(1).warpings is None  # no refit since: nothing new to write


# ---- 4. conditional spaces -----------------------------------------------------------------------

def test_conditional_kernel_covers_value_columns_of_conditional_variables_only():
    space = Space.from_config(CONDITIONAL)
    kernel = conditional_kernel(space)
    expected = [space.value_columns("only_a").start, space.value_columns("second").start]
    assert list(kernel.dims) == expected  # not the indicator columns, not the parents
    X = space.sobol(16, seed=0)
    assert torch.equal(kernel.active(torch.as_tensor(X)), torch.as_tensor(space.active_mask(X)))
    assert conditional_kernel(Space.from_config(LINE)) is None


def test_optimizer_gp_ignores_inactive_values_and_dngo_reads_the_encoding():
    opt = Optimizer(CONDITIONAL, model="gp", seed=0, initial_design=4, model_options=QUICK_GP)
    assert isinstance(opt.models.new_surrogate("main"), GP) and opt.models.new_surrogate("main").conditional is not None
    rng = np.random.default_rng(0)
    for params in opt.space.decode(rng.random((8, opt.space.dim))):
        opt.observe(params, float(rng.random()))
    opt.suggest(1)
    X = opt.space.project(rng.random((20, opt.space.dim)))
    scrambled = X.copy()
    inactive = ~opt.space.active_mask(X)
    scrambled[inactive] = rng.random(inactive.sum())  # change only values that do not matter
    assert inactive.any()
    with torch.no_grad():
        mean, var = opt.models.objective.posterior(torch.as_tensor(X))
        mean2, var2 = opt.models.objective.posterior(torch.as_tensor(scrambled))
    assert torch.allclose(mean, mean2, atol=1e-10) and torch.allclose(var, var2, atol=1e-10)
    assert Optimizer(CONDITIONAL, model="dngo", seed=0).models.new_surrogate("main").n_inputs == opt.space.dim


class _Uphill(Acquisition):
    """Sum of all columns: the gradient pushes every column towards 1."""

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        return X.sum(dim=1)


def test_refinement_moves_only_active_continuous_columns():
    space = Space.from_config(CONDITIONAL)
    starts = space.project(np.random.default_rng(1).random((12, space.dim)))
    movable = continuous_columns(space) & space.active_mask(starts)
    assert continuous_columns(space).shape == (space.dim,)
    refined = _refine(_Uphill(), starts, movable, maxiter=50)
    assert np.array_equal(refined[~movable], starts[~movable])  # inactive, ENUM and indicator columns
    assert np.allclose(refined[movable], 1.0)
    assert (~space.active_mask(starts)).any() and movable.any()


def test_maximize_on_a_conditional_space_returns_a_valid_point():
    space = Space.from_config(CONDITIONAL)
    proposal = maximize(_Uphill(), space, n_candidates=256, seed=0)
    (params,) = space.decode(proposal.x[None])
    assert space.validate(params) == space.active_names(params)
    assert np.allclose(space.encode([params])[0], proposal.x)


# ---- 5. auto ------------------------------------------------------------------------------------

def test_auto_rule_thresholds():
    assert auto_model_choice(0, 1) == "gp"
    assert auto_model_choice(AUTO_GP_MAX_OBSERVATIONS - 1, AUTO_GP_MAX_IN_FLIGHT) == "gp"
    assert auto_model_choice(AUTO_GP_MAX_OBSERVATIONS, 1) == "dngo"
    assert auto_model_choice(10, AUTO_GP_MAX_IN_FLIGHT + 1) == "dngo"
    assert auto_model_choice(10, 20, waiting=AUTO_GP_MAX_WAITING_SHARE) == "gp"
    assert auto_model_choice(10, 20, waiting=AUTO_GP_MAX_WAITING_SHARE + 0.01) == "dngo"


def test_waiting_share_counts_only_proposals_that_run_back_to_back():
    lagging = [(2.0, 5, 50)] * PACE_CALLS  # 5 of 50 workers waited through each call
    assert waiting_share(lagging) == pytest.approx(0.1)
    # Weighted by time: a long call for many workers counts more than a short one for few.
    assert waiting_share([(8.0, 10, 50)] + [(2.0, 2, 50)] * (PACE_CALLS - 1)) == pytest.approx(
        (8 * 10 / 50 + 4 * 2 * 2 / 50) / 16)
    assert waiting_share(lagging[:-1]) == 0.0  # too few calls to judge
    assert waiting_share(lagging[:-1] + [(2.0, 1, 50)]) == 0.0  # one completion at a time: keeping pace


@pytest.mark.slow
def test_auto_leaves_the_gp_when_its_proposals_keep_workers_waiting():
    def run(asked: list[int]) -> list[str]:
        opt = Optimizer(LINE, seed=0, initial_design=3)
        _observe_line(opt, [0.1, 0.5, 0.9])
        running, models = [{"x": [x]} for x in (0.2, 0.3, 0.7)], []
        for n in asked:
            running += opt.suggest(n, pending=running)
            done, running = running[:n], running[n:]
            _observe_line(opt, [p["x"][0] for p in done])
            models.append(opt.surrogate_name)
        return models

    # Every proposal finds 2 of 5 workers free: the completions pile up while the GP proposes.
    assert run([2] * (PACE_CALLS + 1)) == ["gp"] * PACE_CALLS + ["dngo"]
    # One free worker now and then: the proposer keeps pace, the GP stays.
    assert run([2, 2, 1, 2, 2, 2, 2]) == ["gp"] * 7


def test_auto_starts_with_the_gp_and_a_large_batch_switches_it_to_dngo_for_good(tmp_path):
    state = tmp_path / "model"
    opt = Optimizer(LINE, seed=0, initial_design=3, state_dir=state, model_options=QUICK_GP)
    assert opt.settings.model == "auto" and opt.surrogate_name == "gp"
    _observe_line(opt, [0.1, 0.5, 0.9])
    opt.suggest(1)
    assert isinstance(opt.models.objective, GP) and (state / "objective" / model_store.STATE_FILE).exists()
    assert not (state / AUTO_STATE_FILE).exists()

    pending = [{"x": [x]} for x in np.linspace(0.01, 0.99, AUTO_GP_MAX_IN_FLIGHT)]
    opt.settings = dataclasses.replace(opt.settings, model_options={"train_steps": 50, "burn_in": 2, "n_samples": 4})
    opt.suggest(1, pending=pending)  # 20 pending + 1 proposed: more than the GP's batch limit
    assert opt.surrogate_name == "dngo" and isinstance(opt.models.objective, DNGO)
    assert json.loads((state / AUTO_STATE_FILE).read_text())["model"] == "dngo"
    opt.suggest(1)  # a small batch again: still DNGO, no switch back
    assert opt.surrogate_name == "dngo"

    restarted = Optimizer(LINE, seed=0, initial_design=3, state_dir=state)
    assert restarted.surrogate_name == "dngo"  # the switch survives a daemon restart
    fresh = Optimizer(LINE, seed=0, initial_design=3, state_dir=tmp_path / "other")
    assert fresh.surrogate_name == "gp"


def test_config_accepts_the_models_and_acquisitions_and_defaults_to_auto(make_experiment):
    config = quick_config()
    del config["model"]
    assert load_config(make_experiment(config, name="default")).model == "auto"
    for model in ("auto", "gp", "gp-nowarp", "dngo", "sobol"):
        folder = make_experiment(quick_config(model=model, acquisition="ei-per-second"), name=f"m-{model}")
        loaded = load_config(folder)
        assert loaded.model == model and loaded.acquisition == "ei-per-second"


def test_the_proposer_leaves_what_is_in_flight_to_the_daemons_job_files():
    # A job the daemon cancels, or that fails in a way not shown to the model, is never observed:
    # a point the optimizer remembered on its own would stay pending in every later proposal.
    opt = Optimizer(LINE, model="sobol", seed=0)
    wake = threading.Event()
    proposer = Proposer(opt, EventLog(None, io.StringIO()), wake)
    try:
        proposer.request(3, [])
        assert wake.wait(60)
        assert len(proposer.take()) == 3
    finally:
        proposer.close()
    assert opt.pending == []
