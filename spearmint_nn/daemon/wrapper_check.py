"""A PYTHON wrapper checked before a run submits anything, so that a syntax error or a missing
import is found in a second rather than after a cluster's queue wait.

Each ``spearmint-nn run`` starts ``python -m spearmint_nn.runner --check DIR`` (see
:func:`spearmint_nn.runner.check_wrapper`) with the interpreter jobs use, in the experiment
folder, as a process of its own: the runner imports the wrapper with the code jobs use, and
the daemon, which has imported torch, gives it no module it would not have. Nothing is written:
the check runs before the daemon creates or locks its state folder.

With the local driver, jobs run here, in this environment, so a failure of the check is the
failure of every job: the run stops (exit 2) with the message a job would have recorded. Any
other driver runs jobs elsewhere, after its ``setup`` lines (``module load``, ``conda
activate``), where a module missing here may exist: only what no environment changes stops the
run (a SyntaxError or NameError while importing, no ``main``, a ``main`` that cannot take
``(job_id, params)``); a failed import is a warning, and the jobs tell.
"""
from __future__ import annotations

import json
import subprocess

from ..drivers.base import Driver
from ..drivers.local import LocalDriver
from ..errors import ConfigError
from ..experiment.config import ExperimentConfig
from ..runner import check_command

# A wrapper that imports torch takes a few seconds to import; one that loads its data at import
# time may take longer. Past this the run goes on unchecked rather than wait on the check.
CHECK_SECONDS = 120.0


def check_wrapper_before_jobs(config: ExperimentConfig, driver: Driver) -> str | None:
    """Check the config's PYTHON wrapper in a process of its own; return a warning to report
    (None when there is none). Raises :class:`ConfigError` on ``main-file`` when every job
    would fail: the CLI exits 2."""
    if config.language != "PYTHON":
        return None
    try:
        done = subprocess.run(check_command(config.paths.experiment), cwd=config.paths.experiment,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CHECK_SECONDS)
    except subprocess.TimeoutExpired:
        return f"the check of {config.main_file.name} did not end in {CHECK_SECONDS:g} s; going on unchecked"
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = " ".join(done.stderr.strip().splitlines()[-1:])
        return f"the check of {config.main_file.name} gave no answer (exit status {done.returncode}: {tail}); going on unchecked"
    if result.get("status") == "ok":
        return None
    where = f" at {result['location']}" if result.get("location") else ""
    failed = f"({result.get('failure')}): {result.get('error')}{where}"
    if result.get("depends_on_environment") and not isinstance(driver, LocalDriver):
        return (f"{config.main_file.name} does not import here {failed}; submitting anyway, since the "
                f"{driver.name} jobs may find it after the driver's setup lines")
    raise ConfigError("main-file", f"{config.main_file.name} cannot run, so no job was submitted {failed}. "
                                   f"Fix it and run again")
