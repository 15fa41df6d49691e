"""config.json validation: each mistake gives its one named message, exit code 2, and no state."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from helpers.experiments import BRANIN_VARIABLES, cli, quick_config, write_experiment
from spearmint_nn import cli as cli_module
from spearmint_nn.errors import ConfigError
from spearmint_nn.experiment.config import KEYS, load_config, search_settings
from spearmint_nn.problem.tasks import Tasks, parse_tasks
from spearmint_nn.problem.settings import SearchSettings
from spearmint_nn.drivers.base import available_drivers

INSTALLED = ", ".join(sorted(available_drivers()))


def _with(**changes):
    config = quick_config()
    for key, value in changes.items():
        key = key.replace("_", "-")
        if value is DELETE:
            config.pop(key)
        else:
            config[key] = value
    return json.dumps(config)


DELETE = object()

# (case name, config.json text or bytes, expected message with {dir} for the experiment folder)
BAD_CONFIGS = [
    ("syntax", '{"language": "PYTHON",}',
     "config.json: invalid JSON: Expecting property name enclosed in double quotes at line 1 column 23"),
    ("duplicate key", '{"max-concurrent": 2, "max-concurrent": 3}',
     "max-concurrent: duplicate key (JSON objects must not repeat a key)"),
    ("nested duplicate key", '{"variables": {"x": {"type": "FLOAT", "min": 0, "min": 1, "max": 2}}}',
     "variables.x.min: duplicate key (JSON objects must not repeat a key)"),
    ("not UTF-8", b'{"experiment-name": "caf\xe9"}',
     "config.json: is not UTF-8 text (byte 0xe9 at offset 24)"),
    ("not an object", "[1, 2]", "config.json: must hold a JSON object (got list)"),
    ("unknown key", _with(max_concurent=3), "max-concurent: unknown key (did you mean 'max-concurrent'?)"),
    ("no variables", _with(variables=DELETE),
     'variables: required: the search space, e.g. {{"x": {{"type": "FLOAT", "min": 0, "max": 1}}}}'),
    ("min above max", _with(variables={"lr": {"type": "FLOAT", "min": 1.0, "max": 0.1}}),
     "variables.lr.min: must be < max (got 1.0 >= 0.1)"),
    ("unknown variable key", _with(variables={"lr": {"type": "FLOAT", "min": 0, "max": 1, "sclae": "log"}}),
     "variables.lr.sclae: unknown key (did you mean 'scale'?)"),
    ("language", _with(language="MATLAB"), "language: must be one of PYTHON, SHELL (got 'MATLAB')"),
    ("missing wrapper", _with(**{"main-file": "nothere"}), "main-file: no such file: {dir}/nothere.py"),
    ("wrapper outside", _with(**{"main-file": "../wrapper.py"}),
     "main-file: must be inside the experiment folder (got '../wrapper.py' -> {parent}/wrapper.py)"),
    ("max-concurrent zero", _with(max_concurrent=0), "max-concurrent: must be >= 1 (got 0)"),
    ("max-finished-jobs text", _with(max_finished_jobs="ten"), "max-finished-jobs: must be an integer (got 'ten')"),
    ("polling-time text", _with(polling_time="fast"), "polling-time: must be a finite number of seconds (got 'fast')"),
    ("two objectives", _with(tasks={"a": {"type": "OBJECTIVE"}, "b": {"type": "OBJECTIVE"}}),
     "tasks: must have exactly one OBJECTIVE task (got 2: ['a', 'b'])"),
    ("task type typo", _with(tasks={"f": {"type": "OBJECTIVE"}, "c": {"type": "CONSTRIANT"}}),
     "tasks.c.type: must be one of OBJECTIVE, CONSTRAINT (got 'CONSTRIANT') (did you mean 'CONSTRAINT'?)"),
    ("likelihood", _with(likelihood="NOISY"), "likelihood: must be one of NOISELESS, GAUSSIAN (got 'NOISY')"),
    ("driver name", _with(driver={"name": "slrum"}),
     f"driver.name: no driver named 'slrum' (did you mean 'slurm'?); installed: {INSTALLED}"),
    ("driver option", _with(driver={"name": "local", "time-limt": 10}),
     "driver.time-limt: unknown option for the local driver (did you mean 'time-limit'?); valid options: gpus, time-limit"),
    ("driver time-limit", _with(driver={"name": "local", "time-limit": "soon"}),
     "driver.time-limit: must be seconds or [D-]HH:MM:SS (got 'soon')"),
    ("model typo", _with(model="dnog"), "model: must be one of auto, dngo, dngo-warp, gp, gp-nowarp, sobol (got 'dnog') (did you mean 'dngo'?)"),
    ("kernel typo", _with(kernel="matern"),
     "kernel: must be one of matern52, squared-exponential (got 'matern') (did you mean 'matern52'?)"),
    ("shell without command", _with(language="SHELL", **{"main-file": DELETE}),
     'command: required for language SHELL: an argument list such as ["bash", "run.sh"]'),
    ("command as one string", _with(language="SHELL", command="bash run.sh", **{"main-file": DELETE}),
     'command: must be a list of arguments such as ["bash", "run.sh"], not one string'),
    ("direction typo", _with(direction="maximise"),
     "direction: must be one of minimize, maximize (got 'maximise') (did you mean 'maximize'?)"),
    ("seed negative", _with(seed=-1), "seed: must be >= 0 (got -1)"),
    ("restart-after negative", _with(restart_after=-1), "restart-after: must be >= 0 (got -1)"),
    ("early-stopping rule typo", _with(early_stopping={"rule": "medain"}),
     "early-stopping.rule: must be one of median, asha, model (got 'medain') (did you mean 'median'?)"),
    ("early-stopping asha without max-steps", _with(early_stopping={"rule": "asha"}),
     "early-stopping.max-steps: required by rule asha: a job's full budget in steps (its rungs lie below it)"),
    ("early-stopping option of another rule", _with(early_stopping={"rule": "median", "reduction-factor": 2}),
     "early-stopping.reduction-factor: an option of rule asha, not median"),
    ("early-stopping min-steps", _with(early_stopping={"min-steps": -1}),
     "early-stopping.min-steps: must be a number >= 0 (got -1)"),
]


def _write(folder: Path, text: str | bytes) -> Path:
    folder.mkdir(parents=True)
    (folder / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
    (folder.parent / "wrapper.py").write_text("def main(job_id, params):\n    return 0.0\n")
    data = text.encode() if isinstance(text, str) else text
    (folder / "config.json").write_bytes(data)
    return folder


@pytest.mark.parametrize("name,text,expected", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_names_key_exits_2_and_writes_nothing(tmp_path, capsys, name, text, expected):
    folder = _write(tmp_path / "exp", text)
    before = sorted(p.name for p in folder.iterdir())
    code = cli_module.main(["run", str(folder)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "spearmint-nn: " + expected.format(dir=folder.resolve(), parent=tmp_path.resolve()) + "\n"
    assert sorted(p.name for p in folder.iterdir()) == before
    assert not (folder / ".spearmint").exists()


def test_at_least_fifteen_distinct_mistakes():
    assert len({message for _, _, message in BAD_CONFIGS}) >= 15


def test_wrapper_symlink_escaping_the_folder_is_refused(tmp_path, capsys):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def main(job_id, params):\n    return 1.0\n")
    folder = write_experiment(tmp_path / "exp", quick_config(**{"main-file": "link.py"}))
    os.symlink(outside, folder / "link.py")
    assert cli_module.main(["run", str(folder)]) == 2
    assert capsys.readouterr().err == (f"spearmint-nn: main-file: must be inside the experiment folder "
                                       f"(got 'link.py' -> {outside.resolve()})\n")
    assert not (folder / ".spearmint").exists()


def test_missing_config_and_driver_flag_override(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli_module.main(["status", str(empty)]) == 2
    assert capsys.readouterr().err == f"spearmint-nn: config.json: not found ({empty.resolve()}/config.json)\n"
    folder = write_experiment(tmp_path / "exp", quick_config(), {"wrapper.py": "def main(j, p):\n    return 1\n"})
    assert cli_module.main(["run", str(folder), "--driver", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("spearmint-nn: driver.name: no driver named 'nosuch'")
    assert not (folder / ".spearmint").exists()


def test_real_process_exit_code_is_2(tmp_path):
    folder = _write(tmp_path / "exp", _with(max_concurrent=-1))
    result = cli("run", folder)
    assert result.returncode == 2
    assert result.stderr.strip() == "spearmint-nn: max-concurrent: must be >= 1 (got -1)"
    assert not (folder / ".spearmint").exists()


def test_spearmint_config_with_defaults(tmp_path):
    folder = write_experiment(tmp_path / "exp", {
        "language": "PYTHON", "main-file": "branin", "experiment-name": "simple",
        "likelihood": "NOISELESS", "variables": BRANIN_VARIABLES,
    }, {"branin.py": "def main(job_id, params):\n    return 1.0\n"})
    config = load_config(folder)
    assert config.main_file == (folder / "branin.py").resolve()
    assert config.name == "simple"
    assert config.tasks.names == ("main",) and config.objective == "main"
    assert config.tasks.likelihoods == {"main": "NOISELESS"}
    assert config.driver_name == "local" and config.driver_options == {}
    assert config.max_concurrent == 1 and config.max_finished_jobs is None
    assert config.model == "auto" and config.initial_design == 3  # two parameters, plus one
    assert config.torch_threads == 1
    settings = search_settings(config)
    assert settings.model == "auto" and settings.tasks == Tasks("main", (), {"main": "NOISELESS"})
    assert settings.initial_design == 3 and settings.torch_threads == 1
    assert settings.kernel == "matern52"
    assert settings.restart_after == 10 and settings.budget is None  # max-finished-jobs: no limit
    assert set(KEYS) >= {"language", "main-file", "max-concurrent", "driver", "model", "seed"}


def test_the_budget_and_restart_after_reach_the_optimizer(tmp_path):
    from spearmint_nn.search.optimizer import Optimizer

    folder = write_experiment(tmp_path / "exp", quick_config(**{"max-finished-jobs": 40, "restart-after": 0}),
                              {"wrapper.py": ""})
    config = load_config(folder)
    opt = Optimizer(config.space, search_settings(config))
    assert opt.settings.budget == 40 and opt.settings.restart_after == 0 and opt.space is config.space


def test_the_search_keys_are_the_settings_fields_that_name_one():
    fields = {spec.name: spec for spec in dataclasses.fields(SearchSettings)}
    rows = {key: spec for key, spec in KEYS.items() if spec.setting is not None}
    assert {key: spec.setting for key, spec in rows.items()} == {
        spec.metadata["key"]: name for name, spec in fields.items() if spec.metadata["key"] is not None}
    for key, row in rows.items():
        field = fields[row.setting]
        assert (row.default, row.doc, row.parse) == (field.default, field.metadata["doc"], field.metadata["parse"]), key


def _readme_defaults() -> dict[str, str]:
    """key -> the default column of the README's config.json table."""
    readme = Path(__file__).resolve().parents[3] / "README.md"
    defaults = {}
    for line in readme.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("| `") else []
        for key in cells[0].split(", ") if len(cells) == 3 else ():
            defaults[key.strip("`")] = cells[1]
    return defaults


def test_the_readme_gives_each_search_key_its_default():
    readme = _readme_defaults()
    for key, row in KEYS.items():
        if row.setting is None:
            continue
        shown = readme[key]
        if row.default is None:  # said in words (the space's default initial design), or null
            assert not shown.startswith("`") or shown.startswith("`null`"), key
        else:
            assert json.loads(shown.split("`")[1]) == row.default, key


# (field, value, parsed) where config.json and the Optimizer's keywords used to disagree, and more
SAME_VALUE = [("model", "GP", "gp"), ("kernel", "Matern52", "matern52"), ("direction", "MAXIMIZE", "maximize"),
              ("initial_design", 3.0, 3), ("initial_design", 0, 0), ("fantasies", 2.0, 2), ("torch_threads", 2, 2)]
SAME_REFUSAL = [("model", "gp-warp", "must be one of auto, dngo, dngo-warp, gp, gp-nowarp, sobol (got 'gp-warp') "
                 "(did you mean 'gp-nowarp'?)"),
                ("kernel", "MATERN", "must be one of matern52, squared-exponential (got 'MATERN') "
                 "(did you mean 'matern52'?)"),
                ("initial_design", 3.5, "must be an integer (got 3.5)"), ("initial_design", -1, "must be >= 0 (got -1)"),
                ("fantasies", True, "must be an integer (got True)"), ("seed", 2**63, "must be < 2**63 (got 9223372036854775808)"),
                ("torch_threads", 0, "must be >= 1 (got 0)")]


def _key(field: str) -> str:
    return next(key for key, row in KEYS.items() if row.setting == field)


@pytest.mark.parametrize("field, value, parsed", SAME_VALUE)
def test_config_json_and_the_keywords_take_the_same_values(tmp_path, field, value, parsed):
    folder = write_experiment(tmp_path / "exp", quick_config(**{_key(field): value}), {"wrapper.py": ""})
    assert getattr(search_settings(load_config(folder)), field) == parsed
    assert getattr(SearchSettings(**{field: value}), field) == parsed


@pytest.mark.parametrize("field, value, problem", SAME_REFUSAL)
def test_config_json_and_the_keywords_refuse_the_same_values(tmp_path, field, value, problem):
    folder = write_experiment(tmp_path / "exp", quick_config(**{_key(field): value}), {"wrapper.py": ""})
    with pytest.raises(ConfigError) as from_config:
        load_config(folder)
    with pytest.raises(ConfigError) as from_keyword:
        SearchSettings(**{field: value})
    assert (from_config.value.path, from_config.value.problem) == (_key(field), problem)
    assert (from_keyword.value.path, from_keyword.value.problem) == (field, problem)


def test_config_json_tasks_are_read_by_the_optimizers_parser(tmp_path):
    tasks = {"c": "constraint", "loss": {"type": "OBJECTIVE"}, "mem": {"type": "CONSTRAINT", "likelihood": "NOISELESS"}}
    folder = write_experiment(tmp_path / "exp", quick_config(tasks=tasks, likelihood="noiseless"), {"wrapper.py": ""})
    config = load_config(folder)
    assert config.tasks == parse_tasks(tasks, default_likelihood="NOISELESS") == Tasks(
        "loss", ("c", "mem"), {"c": "NOISELESS", "loss": "NOISELESS", "mem": "NOISELESS"}, names=("c", "loss", "mem"))
    assert search_settings(config).tasks == config.tasks
    assert SearchSettings(tasks=tasks).tasks == Tasks("loss", ("c", "mem"), {"mem": "NOISELESS"}, ("c", "loss", "mem"))


def test_tasks_and_driver_shorthand(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(
        tasks={"loss": {"type": "objective"}, "mem": {"type": "CONSTRAINT", "likelihood": "noiseless"}},
        driver="local"), {"wrapper.py": ""})
    config = load_config(folder, driver_override="local")
    assert config.objective == "loss" and config.constraints == ["mem"]
    assert config.tasks.likelihoods == {"mem": "NOISELESS", "loss": "GAUSSIAN"}
    assert config.driver == {"name": "local"}


def test_the_choices_are_the_names_the_registries_implement():
    from spearmint_nn.models import MODELS
    from spearmint_nn.models.kernels import CORRELATIONS
    from spearmint_nn.problem import settings as names
    from spearmint_nn.search.acquisition import ACQUISITIONS
    from spearmint_nn.search.transforms import OUTPUT_TRANSFORMS

    assert tuple(MODELS) == names.SURROGATES and tuple(CORRELATIONS) == names.KERNELS
    assert tuple(ACQUISITIONS) == names.ACQUISITIONS and tuple(OUTPUT_TRANSFORMS) == names.OUTPUT_TRANSFORMS
    with pytest.raises(ConfigError, match=r"^model: must be one of auto, dngo, dngo-warp, gp, gp-nowarp, sobol"):
        KEYS["model"].parse("model", "gp-warp")
    with pytest.raises(RuntimeError, match="add the name to both"):
        names.check_registry("a registry", ["ei"], names.ACQUISITIONS)


def test_the_gps_default_kernel_is_the_settings_default():
    import inspect

    from spearmint_nn.models.gp import GP
    from spearmint_nn.models.kernels import DEFAULT_CORRELATION
    from spearmint_nn.models.multitask_gp import MultiTaskGP

    for model in (GP, MultiTaskGP):
        assert inspect.signature(model).parameters["kernel"].default == DEFAULT_CORRELATION
    assert DEFAULT_CORRELATION == SearchSettings().kernel == KEYS["kernel"].default


# ---- Spearmint's resources and task-level keys ------------------------------------------------

def _spearmint(resources=None, **changes):
    """Spearmint's examples/constrained config, in the spelling its main.py reads."""
    config = {"language": "PYTHON", "experiment-name": "branin-constrained", "likelihood": "NOISELESS",
              "variables": BRANIN_VARIABLES,
              "tasks": {"branin": {"type": "OBJECTIVE", "main-file": "wrapper", "resources": ["my-machine"]},
                        "y_at_least_x": {"type": "CONSTRAINT", "main-file": "wrapper"}}}
    if resources is not DELETE:
        config["resources"] = resources or {"my-machine": {"scheduler": "local", "max-concurrent": 5,
                                                           "max-finished-jobs": 100}}
    config.update(changes)
    return {key: value for key, value in config.items() if value is not DELETE}


SPEARMINT_MISTAKES = [
    ("PBS", _spearmint({"cluster": {"scheduler": "PBS"}}, tasks=DELETE, **{"main-file": "wrapper"}),
     'resources.cluster.scheduler: PBS is not supported (spearmint-nn drives local, SGE, SLURM): write "SGE" or '
     '"SLURM" if the cluster offers one, or "local" to run the jobs on the daemon\'s machine'),
    ("unknown scheduler", _spearmint({"my-machine": {"scheduler": "Slurm2"}}),
     "resources.my-machine.scheduler: must be one of local, SGE, SLURM (got 'Slurm2') (did you mean 'slurm'?)"),
    ("two resources", _spearmint({"my-machine": {"scheduler": "local"}, "cluster": {"scheduler": "SLURM"}}),
     'resources: declares 2 resources (my-machine, cluster); spearmint-nn runs one driver per experiment: keep one, '
     'or remove resources and write "driver": {"name": "slurm"} (or sge, local) with max-concurrent and '
     'max-finished-jobs at the top level'),
    ("max-concurrent twice", _spearmint(**{"max-concurrent": 2}),
     "max-concurrent, resources.my-machine.max-concurrent: both given (2 and 5); keep one"),
    ("max-finished-jobs twice", _spearmint(**{"max-finished-jobs": 50}),
     "max-finished-jobs, resources.my-machine.max-finished-jobs: both given (50 and 100); keep one"),
    ("driver and scheduler", _spearmint({"cluster": {"scheduler": "SGE"}}, tasks=DELETE, driver={"name": "slurm"},
                                        **{"main-file": "wrapper"}),
     "driver.name, resources.cluster.scheduler: both given ('slurm' and 'sge'); keep one"),
    ("resource limit invalid", _spearmint({"my-machine": {"scheduler": "local", "max-concurrent": 0}}),
     "resources.my-machine.max-concurrent: must be >= 1 (got 0)"),
    ("a main-file per task", _spearmint(tasks={"branin": {"type": "OBJECTIVE", "main-file": "wrapper"},
                                               "c": {"type": "CONSTRAINT", "main-file": "constraint"}}),
     "tasks.branin.main-file, tasks.c.main-file: differ ('wrapper', 'constraint'); spearmint-nn runs one wrapper for "
     "every task: write one top-level main-file whose main returns {task: value}"),
    ("task main-file and top level", _spearmint(**{"main-file": "other"}),
     "main-file, tasks.branin.main-file: both given ('other' and 'wrapper'); keep one"),
    ("task names an undeclared resource", _spearmint(tasks={"f": {"type": "OBJECTIVE", "resources": ["my-machien"]}},
                                                     **{"main-file": "wrapper"}),
     "tasks.f.resources: names 'my-machien', which is not a resource (declared: my-machine) (did you mean 'my-machine'?)"),
    ("resources without a section", _spearmint(DELETE),
     "tasks.branin.resources: names 'my-machine', which is not a resource (config.json has no resources section)"),
    ("every unknown key at once", _spearmint(
        {"my-machine": {"scheduler": "local", "max_concurrent": 1, "scheduler-args": "-q long"}},
        tasks={"branin": {"type": "OBJECTIVE", "main_file": "wrapper", "resources": ["my-machine"]}},
        variables={"x": {"type": "FLOAT", "min": 0, "max": 1, "sclae": "log"}},
        choser="default_chooser", polling_time=1, **{"main-file": "wrapper"}),
     "variables.x.sclae, tasks.branin.main_file, resources.my-machine.max_concurrent, "
     "resources.my-machine.scheduler-args, choser, polling_time: unknown keys (variables.x.sclae: did you mean "
     "'scale'?; tasks.branin.main_file: did you mean 'main-file'?; resources.my-machine.max_concurrent: did you "
     "mean 'max-concurrent'?; resources.my-machine.scheduler-args: write the arguments as a list in "
     "driver.extra-args instead; choser: did you mean 'chooser'?; polling_time: did you mean 'polling-time'?)"),
]


@pytest.mark.parametrize("name,config,expected", SPEARMINT_MISTAKES, ids=[c[0] for c in SPEARMINT_MISTAKES])
def test_spearmint_sections_that_cannot_be_translated_say_what_to_write(tmp_path, capsys, name, config, expected):
    folder = _write(tmp_path / "exp", json.dumps(config))
    assert cli_module.main(["run", str(folder)]) == 2
    assert capsys.readouterr().err == f"spearmint-nn: {expected}\n"
    assert not (folder / ".spearmint").exists()


def test_spearmint_resource_and_task_keys_become_ours(tmp_path):
    folder = write_experiment(tmp_path / "exp", _spearmint(), {"wrapper.py": "def main(job_id, params):\n    return 1.0\n"})
    config = load_config(folder)
    assert config.main_file == (folder / "wrapper.py").resolve() and config.language == "PYTHON"
    assert config.driver_name == "local" and config.max_concurrent == 5 and config.max_finished_jobs == 100
    assert search_settings(config).budget == 100
    assert config.tasks.likelihoods["branin"] == "NOISELESS" and config.constraints == ["y_at_least_x"]


@pytest.mark.parametrize("scheduler,driver", [("SGE", "sge"), ("SLURM", "slurm"), ("slurm", "slurm"), ("Local", "local")])
def test_a_resources_scheduler_names_the_driver_and_keeps_driver_options(tmp_path, scheduler, driver):
    options = {"time-limit": 600}
    folder = write_experiment(tmp_path / "exp", _spearmint({"cluster": {"scheduler": scheduler}}, tasks=DELETE,
                                                           driver=options, **{"main-file": "wrapper",
                                                                              "max-concurrent": 3}),
                              {"wrapper.py": ""})
    config = load_config(folder)
    assert (config.driver_name, config.driver_options, config.max_concurrent) == (driver, options, 3)
    assert config.max_finished_jobs is None


def test_agreeing_top_level_and_spearmint_keys_are_accepted(tmp_path):
    folder = write_experiment(tmp_path / "exp", _spearmint(driver="local", **{"max-concurrent": 5, "main-file": "wrapper.py"}),
                              {"wrapper.py": ""})
    config = load_config(folder)
    assert (config.driver_name, config.max_concurrent, config.main_file.name) == ("local", 5, "wrapper.py")



def test_the_config_record_has_one_field_for_each_key_of_the_table(tmp_path):
    """The record is generated from KEYS: every key is read one way, as its attribute, and a key
    added to the table is a field at once."""
    from dataclasses import fields

    from spearmint_nn.experiment.config import ExperimentConfig, field_name

    names = {f.name for f in fields(ExperimentConfig)}
    assert {field_name(key) for key in KEYS} <= names
    assert names - {field_name(key) for key in KEYS} == {"paths", "space", "notes", "text"}
    assert not hasattr(ExperimentConfig, "__getitem__") and not hasattr(ExperimentConfig, "values")
