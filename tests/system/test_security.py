"""What the daemon trusts and what it does not.

* No pickle: no module of the package imports it, torch weights load with weights_only=True.
* No shell: commands are argument lists; hostile variable names, ENUM options and folder names
  (``;``, ``$()``, backquotes, quotes, newlines) reach the wrapper intact and never a shell
  unquoted - checked on the local driver's argv and on real SLURM/SGE job scripts (bash -n, and
  running them).
* Nothing written outside the experiment folder (every file a daemon run opens for writing, as
  strace sees it); main-file must resolve inside the folder; state files follow the umask.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.experiments import quick_config, write_experiment
from helpers.fake_scheduler import install_fake_slurm, run_daemon
from helpers.invariant_checks import assert_folder_ok
from spearmint_nn import cli as cli_module
from spearmint_nn.drivers.base import JobSpec
from spearmint_nn.drivers.batch import render_job_script
from spearmint_nn.drivers.sge import SgeDriver
from spearmint_nn.drivers.slurm import SlurmDriver
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.runner import command_for

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(REPO / "spearmint_nn").rglob("*.py"), *(REPO / "drivers").rglob("*.py")])
HOSTILE = "a;b $(touch PWNED) `touch PWNED` 'q' \"d\" \\ \n next"
HOSTILE_FOLDER = "exp ;$(touch PWNED) 'q' \"d\" `x`"


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node, ast.unparse(node.func)


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(REPO)) for p in SOURCES])
def test_no_pickle_no_shell_in_the_source(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            assert name.split(".")[0] not in {"pickle", "cPickle", "dill", "shelve", "marshal", "joblib", "cloudpickle"}, \
                f"{path.name}:{node.lineno} imports {name}"
    for node, func in _calls(tree):
        keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
        where = f"{path.name}:{node.lineno} {ast.unparse(node)[:80]}"
        if func.endswith("torch.load") or func == "load" and "weights_only" in keywords:
            assert keywords.get("weights_only") == "True", where
        assert keywords.get("shell") not in ("True", "1"), where
        assert keywords.get("allow_pickle") not in ("True", "1"), where
        assert func not in ("os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput"), where


def test_every_torch_load_in_the_package_is_weights_only():
    loads = [(p.name, ast.unparse(node)) for p in SOURCES for node, func in _calls(ast.parse(p.read_text()))
             if func.endswith("torch.load")]
    assert loads, "the surrogates save weights: some torch.load must exist"
    assert all("weights_only=True" in call for _, call in loads), loads


def _hostile_experiment(folder: Path, **config) -> Path:
    wrapper = f"""
        import json

        def main(job_id, params):
            assert sorted(params) == sorted([{HOSTILE!r}, "y"]), params
            assert params["y"][0] in ({HOSTILE!r}, "plain"), params
            with open("seen.jsonl", "a") as out:
                out.write(json.dumps({{"job": job_id, "params": {{k: list(map(str, v)) for k, v in params.items()}}}}) + "\\n")
            return float(params[{HOSTILE!r}][0])
        """
    variables = {HOSTILE: {"type": "FLOAT", "min": 0, "max": 1}, "y": {"type": "ENUM", "options": [HOSTILE, "plain"]}}
    settings = {"max-finished-jobs": 3, "max-concurrent": 2, "polling-time": 0.2, "variables": variables,
                "experiment-name": HOSTILE, **config}
    return write_experiment(folder, quick_config(**settings), {"wrapper.py": wrapper})


def _no_pwned(root: Path) -> None:
    assert not [p for p in root.rglob("PWNED")], "a value reached a shell unquoted"
    assert not Path("PWNED").exists()


def test_hostile_names_round_trip_on_the_local_driver(tmp_path):
    folder = _hostile_experiment(tmp_path / HOSTILE_FOLDER)
    code, log = run_daemon(folder)
    assert code == 0
    seen = [json.loads(line) for line in (folder / "seen.jsonl").read_text().splitlines()]
    assert len(seen) == 3 and {s["params"]["y"][0] for s in seen} <= {HOSTILE, "plain"}
    argv = command_for(ExperimentPaths(folder).experiment, 1)
    assert argv == [sys.executable, "-m", "spearmint_nn.runner", str(folder.resolve()), "1"]  # no params in argv
    assert all(line[:4].isdigit() for line in log.splitlines())  # a newline in a name never splits a log line
    _no_pwned(tmp_path)
    assert_folder_ok(folder)


def test_hostile_names_round_trip_through_slurm_job_scripts(tmp_path, monkeypatch):
    for key, value in install_fake_slurm(tmp_path / "bin", tmp_path / "slurm").items():
        monkeypatch.setenv(key, value)
    folder = _hostile_experiment(tmp_path / HOSTILE_FOLDER, driver={"name": "slurm", "result-grace": 2})
    code, _ = run_daemon(folder, timeout_s=180)
    assert code == 0
    scripts = sorted((folder / ".spearmint" / "scripts").glob("*.sh"))
    # each job's script, or a link to the job array's script that runs it
    assert {s.name for s in scripts if not s.name.startswith("array-")} == {f"{i:06d}.sh" for i in (1, 2, 3)}
    for script in scripts:
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    for argv in map(json.loads, (tmp_path / "slurm" / "sbatch_calls.jsonl").read_text().splitlines()):
        name = argv[argv.index("--job-name") + 1]
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", name), name
    assert len((folder / "seen.jsonl").read_text().splitlines()) == 3
    _no_pwned(tmp_path)
    assert_folder_ok(folder)


@pytest.mark.parametrize("driver_class", [SlurmDriver, SgeDriver])
def test_job_scripts_quote_every_word(tmp_path, driver_class):
    """A job script for a hostile command, folder and environment: bash -n accepts it, and run,
    it hands the command exactly the words it was given."""
    folder = tmp_path / ("exp ;`x` 'q' \"d\"" if driver_class is SgeDriver else HOSTILE_FOLDER)
    folder.mkdir()
    state = folder / ".spearmint"
    words = [HOSTILE, "$(touch PWNED)", "--x='y'", ""]
    spec = JobSpec(job_id=7, command=[sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *words],
                   workdir=folder, stdout=state / "output" / "7.out", stderr=state / "output" / "7.err",
                   script_path=state / "scripts" / "7.sh", name="exp-7", env={"SPEARMINT_TAG": HOSTILE})
    driver = driver_class({}, state)
    text = render_job_script(spec, [], driver.submit_argv(spec, spec.name, 60.0))
    script = tmp_path / "job.sh"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == words
    _no_pwned(tmp_path)


def _written_paths(trace: Path) -> set[str]:
    """Paths that strace saw opened for writing, created, renamed, linked or removed."""
    written = set()
    for line in trace.read_text(errors="replace").splitlines():
        call = re.search(r"\b(openat|open|creat|mkdir|mkdirat|rename|renameat2?|link|linkat|unlink|unlinkat|rmdir)\(", line)
        if call is None or "= -1" in line:
            continue
        if call.group(1) in ("open", "openat") and not re.search(r"O_WRONLY|O_RDWR|O_CREAT", line):
            continue
        written.update(re.findall(r'"((?:[^"\\]|\\.)*)"', line))
    return {p for p in written if p.startswith("/")}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to see every file a run writes")
def test_a_run_writes_nothing_outside_the_experiment_folder(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(**{"max-finished-jobs": 3}),
                              {"wrapper.py": "def main(job_id, params):\n    return float(params['x'][0])\n"})
    trace = tmp_path / "trace.txt"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(tmp_path / "home")}
    done = subprocess.run(["strace", "-f", "-qq", "-e", "trace=%file", "-o", str(trace),
                           sys.executable, "-m", "spearmint_nn", "run", str(folder)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    experiment = str(folder.resolve())
    written = _written_paths(trace)
    assert experiment + "/.spearmint/results.csv" in written  # the trace does see the run's writes
    outside = sorted(p for p in written
                     if not p.startswith(experiment + "/") and p != experiment
                     and not p.startswith(("/dev/", "/proc/")))
    assert outside == []
    assert_folder_ok(folder)


def test_main_file_outside_the_folder_is_refused_by_the_runner_too(tmp_path):
    """config.json edited while jobs wait: the runner re-checks main-file before importing it."""
    folder = write_experiment(tmp_path / "exp", quick_config(), {"wrapper.py": "def main(j, p):\n    return 1.0\n"})
    (tmp_path / "evil.py").write_text("import os\nos.system('touch PWNED')\ndef main(j, p):\n    return 0.0\n")
    os.symlink(tmp_path / "evil.py", folder / "evil.py")
    paths = ExperimentPaths(folder)
    paths.inputs.mkdir(parents=True)
    paths.results.mkdir()
    (paths.input_file(1)).write_text('{"x": [1.0], "y": [2.0]}')
    (folder / "config.json").write_text(json.dumps(quick_config(**{"main-file": "evil.py"})))
    done = subprocess.run(command_for(paths.experiment, 1), cwd=folder, capture_output=True, text=True, timeout=60)
    result = json.loads(paths.result_file(1).read_text())
    assert done.returncode == 1 and result["failure"] == "bad_config"
    assert result["error"].startswith("main-file: must be inside the experiment folder (got 'evil.py' -> ")
    _no_pwned(tmp_path)


def test_state_files_follow_the_umask_and_are_never_world_writable(tmp_path):
    folder = write_experiment(tmp_path / "exp", quick_config(**{"max-finished-jobs": 2}),
                              {"wrapper.py": "def main(job_id, params):\n    return 1.0\n"})
    done = subprocess.run([sys.executable, "-c", "import os, sys; os.umask(0o077); "
                           "from spearmint_nn.cli import main; sys.exit(main(['run', sys.argv[1]]))", str(folder)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loose = [(str(p.relative_to(folder)), stat.filemode(p.stat().st_mode))
             for p in (folder / ".spearmint").rglob("*") if p.stat().st_mode & 0o077]
    assert loose == []  # umask 077: nothing readable or writable by group or others
    assert_folder_ok(folder)  # (its "permissions" rule: nothing world-writable under any umask)
    assert cli_module.main(["status", str(folder)]) == 0
