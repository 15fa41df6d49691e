"""The parallel benchmark's bookkeeping: the simulated clock, the idle share, shared starts."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from experiments.benchmarks.checkpoints import best_after
from experiments.benchmarks.functions import FUNCTIONS
from experiments.benchmarks.parallel import DURATION_SIGMA, main, run_async, run_batches, summarise, table
from experiments.benchmarks.parallel_methods import make_method, split_methods
from spearmint_nn.problem.space import Space


class _Timer:
    """A timer under which every proposal call takes ``seconds`` (it is read before and after)."""

    def __init__(self, seconds: float):
        self.seconds, self.reads = seconds, 0

    def __call__(self) -> float:
        self.reads += 1
        return (self.reads // 2) * self.seconds  # read before and after each call: +seconds per call


@pytest.mark.slow
def test_one_worker_waits_exactly_for_each_proposal():
    durations = np.random.default_rng(3).lognormal(np.log(10.0), DURATION_SIGMA, 3)
    run = run_async("branin", "sobol", 3, workers=1, evals=3, job_seconds=10.0, timer=_Timer(2.0))
    assert run["propose_seconds"] == [2.0, 2.0] and run["proposed"] == [1, 1]
    assert run["finish_times"] == pytest.approx([durations[0], durations[:2].sum() + 2.0, durations.sum() + 4.0])
    assert run["elapsed_s"] == pytest.approx(durations.sum() + 4.0)
    assert run["idle_share"] == pytest.approx(4.0 / (durations.sum() + 4.0))


@pytest.mark.slow
def test_many_workers_share_durations_and_starts_across_methods():
    slow = run_async("hartmann6", "sobol", 1, workers=8, evals=30, job_seconds=5.0, timer=_Timer(1.0))
    free = run_async("hartmann6", "sobol", 1, workers=8, evals=30, job_seconds=5.0, timer=_Timer(0.0))
    for run in (slow, free):
        assert len(run["values"]) == 30 and sum(run["proposed"]) == 30 - 8
        assert run["finish_times"] == sorted(run["finish_times"])
    assert free["idle_share"] == 0.0 and slow["idle_share"] > 0.05
    assert slow["elapsed_s"] > free["elapsed_s"] + 1.0
    # the first job to finish is a shared initial point with the same drawn duration in both
    assert slow["finish_times"][0] == free["finish_times"][0] and slow["values"][0] == free["values"][0]
    # when several completions wait for one proposal, one call proposes for all of them
    assert max(slow["proposed"]) > 1 and len(slow["proposed"]) < len(free["proposed"])


@pytest.mark.slow
def test_batches_start_from_the_same_sobol_points_and_summaries_read_them():
    ours = run_batches("branin", "ours:model=gp", 0, q=4, evals=8)
    sobol = run_batches("branin", "sobol", 0, q=4, evals=8)
    assert len(ours["values"]) == len(sobol["values"]) == 8 and len(ours["propose_seconds"]) == 1
    assert ours["values"][:4] == sobol["values"][:4]
    assert min(ours["values"]) >= FUNCTIONS["branin"].minimum
    rows = summarise([ours, sobol], [4, 8], [])
    assert [r["method"] for r in rows] == ["ours:model=gp", "sobol"]
    assert rows[0]["best@4"][0] == min(ours["values"][:4]) and "idle_share" not in rows[0]
    assert "ours:model=gp" in table(rows)


@pytest.mark.slow
def test_earlier_reports_join_the_summary_and_a_rerun_replaces_its_run(tmp_path, capsys):
    common = ["--mode", "async", "--problems", "branin", "--methods", "sobol", "--workers-in-flight", "2",
              "--evals", "6", "--job-seconds", "5"]
    first, traces, second = tmp_path / "first.json", tmp_path / "first.traces.json", tmp_path / "second.json"
    assert main([*common, "--seeds", "0-1", "--json", str(first), "--traces", str(traces)]) == 0
    summaries, earlier = json.loads(first.read_text())["runs"], json.loads(traces.read_text())["runs"]
    # the report keeps each run's summary, the traces every value; both give the same table
    assert all("values" not in r for r in summaries) and all(len(r["values"]) == 6 for r in earlier)
    assert [best_after(r, 3) for r in summaries] == [min(r["values"][:3]) for r in earlier]
    earlier[0]["values"] = [-100.0] * 6  # marks the earlier run of seed 0, which the rerun must replace
    traces.write_text(json.dumps({"runs": earlier}))
    assert main([*common, "--seeds", "0,2", "--json", str(second), "--include", str(first), str(traces)]) == 0
    report = json.loads(second.read_text())
    assert sorted(r["seed"] for r in report["runs"]) == [0, 1, 2]
    # the included run names the report it came from; the runs made now are the report's own
    assert {r["seed"]: r.get("source") for r in report["runs"]} == {0: None, 1: 0, 2: None}
    assert [s["file"] for s in report["sources"]] == ["first.traces.json"]  # first.json's runs all replaced
    assert min(best_after(r, 6) for r in report["runs"]) > -100.0
    assert report["summary"][0]["seeds"] == 3 and "| 3 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # a report of other sizes cannot join
        main([*common[:-4], "--evals", "8", "--job-seconds", "5", "--seeds", "3", "--include", str(first)])
    assert "not async, 2 and 8" in capsys.readouterr().err


def test_full_traces_go_only_to_a_file_named_as_git_ignores_it(tmp_path, capsys):
    # (tests/unit/test_checkout.py checks that .gitignore ignores *.traces.json)
    with pytest.raises(SystemExit) as stopped:
        main(["--methods", "sobol", "--seeds", "0", "--traces", str(tmp_path / "traces.json")])
    assert stopped.value.code == 2 and "name the file *.traces.json" in capsys.readouterr().err
    assert not (tmp_path / "traces.json").exists()


def test_a_misspelt_problem_is_named_before_any_run_starts(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--problems", "hartmann6,hartman6", "--methods", "sobol", "--json", str(tmp_path / "out.json")])
    assert stopped.value.code == 2
    assert "--problems: unknown hartman6 (choose from" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("methods, named", [
    ("sobol,botorch_ts", "--methods: unknown method 'botorch_ts'; known: ours, ours:KEY=VALUE,..., sobol, botorch-qlognei"),
    ("ours:restart_afte=0", "--methods: method 'ours:restart_afte=0': unknown setting 'restart_afte' (settings: "),
    ("ours:model", "--methods: method 'ours:model': 'model' is not KEY=VALUE"),
    ("ours:seed=3", "--methods: method 'ours:seed=3': unknown setting 'seed'"),
])
def test_a_misspelt_method_or_setting_is_named_before_any_run_starts(tmp_path, capsys, methods, named):
    with pytest.raises(SystemExit) as stopped:
        main(["--methods", methods, "--seeds", "0", "--json", str(tmp_path / "out.json")])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_our_settings_reach_the_optimizer_and_a_misspelt_one_does_not_build():
    space = Space.from_config(FUNCTIONS["branin"].variables)
    ours = make_method("ours:fantasies=3,model=gp", space, 0, 10, 2)
    assert (ours.optimizer.settings.fantasies, ours.optimizer.settings.model) == (3, "gp")
    scaled = make_method('ours:model_options={"lengthscale_prior":"top-hat"}', space, 0, 10, 2)
    assert dict(scaled.optimizer.settings.model_options) == {"lengthscale_prior": "top-hat"}
    with pytest.raises(ValueError, match="unknown setting 'fantasy'"):
        make_method("ours:fantasy=3", space, 0, 10, 2)


def test_a_method_list_keeps_our_settings_together():
    assert split_methods("ours,ours:model=gp,restart_after=0,sobol,ours:fantasies=20") == [
        "ours", "ours:model=gp,restart_after=0", "sobol", "ours:fantasies=20"]


@pytest.mark.skipif(importlib.util.find_spec("optuna") is None,
                    reason="needs the harness's references: pip install -r experiments/benchmarks/requirements.txt")
def test_optuna_sees_the_jobs_it_did_not_propose_as_running_until_they_finish():
    import optuna

    from experiments.benchmarks.parallel_methods import make_method
    from spearmint_nn.problem.space import Space

    problem = FUNCTIONS["hartmann6"]
    space = Space.from_config(problem.variables)
    method = make_method("optuna-tpe", space, 0, 100, 10)
    design = space.decode(space.sobol(20, seed=0))
    for params in design[:10]:
        method.observe(params, problem(params))
    proposed = method.propose(2, design[10:])
    running = optuna.trial.TrialState.RUNNING
    assert len(method.study.get_trials(states=(running,))) == 12  # 10 foreign, 2 asked
    for params in design[10:] + proposed:
        method.observe(params, problem(params))
    assert not method.study.get_trials(states=(running,)) and len(method.study.trials) == 22
