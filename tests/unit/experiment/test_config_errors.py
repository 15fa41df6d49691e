"""Every problem of a config.json at once: each named by its key path, on a line of its own, exit
code 2 and nothing written; one problem reads as it always did."""
from __future__ import annotations

import pytest

from helpers.experiments import cli, quick_config, write_experiment
from spearmint_nn import cli as cli_module
from spearmint_nn.errors import ConfigError, ConfigErrors, Problems
from spearmint_nn.experiment.config import load_config
from spearmint_nn.problem.parsers import count
from spearmint_nn.problem.space import Space

WRAPPER = {"wrapper.py": "def main(job_id, params):\n    return 0.0\n"}

# A newcomer's file: a misspelt key, a number as text, a bound the wrong way round, a wrong scale
# and a task type misspelt, in four different sections.
MISTAKES = quick_config(
    **{"max-concurent": 3, "seed": "1", "max-finished-jobs": 0},
    variables={"lr": {"type": "FLOAT", "min": 1.0, "max": 0.1}, "layers": {"type": "INT", "min": 1, "max": 4,
                                                                          "scale": "ln"}},
    tasks={"loss": "OBJECTIVE", "memory": "CONSTRANT"})
EXPECTED = [
    "max-concurent: unknown key (did you mean 'max-concurrent'?)",
    "seed: must be an integer (got '1')",
    "max-finished-jobs: must be >= 1 (got 0)",
    "variables.lr.min: must be < max (got 1.0 >= 0.1)",
    "variables.layers.scale: must be 'linear' or 'log' (got 'ln')",
    "tasks.memory: must be one of OBJECTIVE, CONSTRAINT (got 'CONSTRANT') (did you mean 'CONSTRAINT'?)",
]


def test_load_config_names_every_problem_of_the_file(tmp_path):
    folder = write_experiment(tmp_path / "exp", MISTAKES, WRAPPER)
    with pytest.raises(ConfigErrors) as info:
        load_config(folder)
    assert [str(problem) for problem in info.value.each] == EXPECTED
    # still a ConfigError of one line, as the daemon's log and status show it
    assert isinstance(info.value, ConfigError)
    assert str(info.value) == f"{len(EXPECTED)} problems: " + "; ".join(EXPECTED)
    assert "\n" not in str(info.value)


def test_run_prints_each_problem_on_its_own_line_exits_2_and_writes_nothing(tmp_path):
    folder = write_experiment(tmp_path / "exp", MISTAKES, WRAPPER)
    before = sorted(path.name for path in folder.iterdir())
    result = cli("run", folder)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"spearmint-nn: {line}" for line in EXPECTED]
    assert sorted(path.name for path in folder.iterdir()) == before
    assert not (folder / ".spearmint").exists()


def test_status_of_a_folder_with_several_problems_names_them_all(tmp_path, capsys):
    folder = write_experiment(tmp_path / "exp", MISTAKES, WRAPPER)
    assert cli_module.main(["status", str(folder)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"spearmint-nn: {line}" for line in EXPECTED]
    assert not (folder / ".spearmint").exists()


def test_a_step_that_needs_a_wrong_key_is_skipped(tmp_path):
    # a misspelt language says nothing of main-file or command: no second message about them
    folder = write_experiment(tmp_path / "exp", quick_config(language="PYTON", command=["bash", "run.sh"]), WRAPPER)
    with pytest.raises(ConfigError) as info:
        load_config(folder)
    assert str(info.value) == "language: must be one of PYTHON, SHELL (got 'PYTON') (did you mean 'PYTHON'?)"
    # a variable with an unknown key is read no further: "maxx" is not also "max missing"
    folder = write_experiment(tmp_path / "other", quick_config(variables={"x": {"type": "FLOAT", "min": 0, "maxx": 1}},
                                                               seed=-1), WRAPPER)
    with pytest.raises(ConfigErrors) as info:
        load_config(folder)
    assert [str(problem) for problem in info.value.each] == [
        "variables.x.maxx: unknown key (did you mean 'max'?)", "seed: must be >= 0 (got -1)"]


def test_every_wrong_key_of_the_variables_at_once():
    with pytest.raises(ConfigErrors) as info:
        Space.from_config({"lr": {"type": "FLOAT", "min": "0", "max": 1, "size": 0},
                           "act": {"type": "ENUM", "options": []},
                           "n": {"type": "INT", "min": 0.5, "max": 2.5},
                           "ok": {"type": "FLOAT", "min": 0, "max": 1}})
    assert [str(problem) for problem in info.value.each] == [
        "variables.lr.size: must be a positive integer (got 0)",
        "variables.lr.min: must be a number (got '0')",
        "variables.act.options: must be a non-empty list of strings (got [])",
        "variables.n.min: must be an integer for an INT (got 0.5)",
        "variables.n.max: must be an integer for an INT (got 2.5)",
    ]


def test_the_collector_reports_a_key_path_once_and_tells_what_failed():
    problems = Problems()
    assert problems.call(count(1), "max-concurrent", 0, fallback=1) == 1
    assert problems.call(count(1), "fantasies", 3) == 3
    problems.report(ConfigError("variables.x.step, seed", "unknown keys"))
    problems.report(ConfigError("variables.x.step", "unknown key"))  # the same key found again: left out
    assert problems.failed("variables") and problems.failed("variables.x") and problems.failed("seed")
    assert not problems.failed("variables.xy") and not problems.failed("fantasies")
    with pytest.raises(ConfigErrors) as info:
        problems.raise_any()
    assert [error.path for error in info.value.each] == ["max-concurrent", "variables.x.step, seed"]
    single = Problems()
    single.report(ConfigError("seed", "must be an integer (got '1')"))
    with pytest.raises(ConfigError) as one:
        single.raise_any()
    assert type(one.value) is ConfigError and one.value.each == (one.value,)
    Problems().raise_any()  # nothing found: nothing raised
