"""``spearmint-nn run`` as a batch job of its own, with the job scripts of the README as printed.

The README ("Running the daemon as a batch job") gives one job script per scheduler; this module
reads them from the README, submits one with a short time limit over an experiment that takes
several of them, and checks that the daemon stopped on the warning before each limit, ran again
(SLURM: ``scontrol requeue``; Grid Engine: ``qresub``) and adopted its jobs, and that the
experiment ended with every job recorded and evaluated exactly once (the wrapper's own ledger,
``runs.log``, and :mod:`helpers.invariants`). ``tests/cluster/test_slurm.py`` and
``test_sge.py`` say how their scheduler is asked (:class:`DaemonJobs`).
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from spearmint_nn.daemon.events.signals import TIME_LIMIT_EXIT

from . import batch_scenarios as scenarios
from .experiments import all_jobs
from .invariants import assert_invariants

README = Path(__file__).parents[2] / "README.md"
_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
_EVENT = re.compile(r"^\S+ \S+ (\w+) ")  # a daemon.log line: date, time, the event's kind
TIME_LIMIT_STOP = "the warning before the time limit of this daemon's batch job"


def readme_script(directive: str) -> str:
    """The README's one bash block that holds ``directive`` (``#SBATCH``, ``#$``)."""
    blocks = [block for block in _BLOCK.findall(README.read_text()) if f"\n{directive} " in block]
    assert len(blocks) == 1, f"{len(blocks)} bash blocks with {directive} lines in the README"
    return blocks[0]


def events(log_text: str, kind: str) -> list[str]:
    """The daemon.log lines of one kind of event (``stopped``, ``adopted``, ...)."""
    return [line for line in log_text.splitlines() if (m := _EVENT.match(line)) and m[1] == kind]


@dataclass
class DaemonJobs:
    """How a test submits the daemon's job script and finds its jobs on one scheduler."""

    directive: str                                           # the script's directive prefix
    # (script, experiment, output folder, environment) -> the daemon job's scheduler id
    submit: Callable[[Path, Path, Path, dict[str, str]], str]
    active: Callable[[str], list[str]]                       # ids of the daemon's jobs still queued or running
    cancel: Callable[[Sequence[str]], None]                  # scancel/qdel of exactly these ids
    first_run_restarts: dict[str, str]                       # restarts a first attempt's claim records


def daemon_as_a_batch_job(tmp_path: Path, cluster: scenarios.Cluster, jobs: DaemonJobs, *, sleep: float,
                          budget: int, timeout_s: float) -> str:
    """Run an experiment of ``budget`` jobs of ``sleep`` s, 3 at a time, under the daemon's job
    script; returns the scheduler id of the daemon's (first) job. The caller's ``submit`` gives
    it a short limit."""
    exp = scenarios.make_experiment(tmp_path / "exp", cluster, sleep=sleep, budget=budget, concurrent=3)
    script = tmp_path / "spearmint-daemon.sh"
    script.write_text(readme_script(jobs.directive))
    # the daemon finds spearmint-nn on the PATH of the shell that submits, as the README says
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    outputs = tmp_path / "daemon-output"
    outputs.mkdir()
    first = jobs.submit(script, exp, outputs, env)
    log = exp / ".spearmint" / "daemon.log"
    try:
        scenarios.wait_for(lambda: log.exists() and "budget reached" in log.read_text() and not jobs.active(first),
                           timeout_s, "the experiment to end and its daemon's job to leave the queue")
    except BaseException:
        _clean_up(jobs, first, exp)
        for output in sorted(outputs.iterdir()):
            print(f"---- {output.name}\n{output.read_text()[-3000:]}", file=sys.stderr)
        raise
    text = log.read_text()
    stops = events(text, "stopped")
    assert len(stops) >= 3 and "budget reached" in stops[-1], stops
    # at least two runs stopped on the warning, each leaving its jobs to the next run
    time_limited = [line for line in stops if TIME_LIMIT_STOP in line]
    assert len(time_limited) >= 2 and len(time_limited) == len(stops) - 1, stops
    assert all(f"exit status {TIME_LIMIT_EXIT}" in line for line in time_limited)
    assert events(text, "adopted"), "no run adopted a job the previous run left running"
    scenarios.assert_each_job_ran_once(exp, budget)
    assert_invariants(exp, evaluations=scenarios.runs(exp))
    for _, job in all_jobs(exp).values():
        # one attempt each, started as a first run: nothing of the daemon's own job leaked into it
        assert [(a["attempt"], a["outcome"], a["restarts"]) for a in job["attempts"]] == [
            (1, "ok", jobs.first_run_restarts)], job
    return first


def _clean_up(jobs: DaemonJobs, first: str, exp: Path) -> None:
    """Cancel the daemon's job, then the experiment's jobs it left in the queue: these ids only."""
    daemon = jobs.active(first)
    if daemon:
        jobs.cancel(daemon)
    left = [job["scheduler_id"] for job in scenarios.by_state(exp, "running").values() if job.get("scheduler_id")]
    if left:
        jobs.cancel(left)
