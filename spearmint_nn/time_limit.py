"""The runner's side of the warning before a job's time limit (config.json's ``resume``).

The scheduler sends :data:`~spearmint_nn.job.WARNING_SIGNAL` (SIGUSR1) to the runner: SLURM
with ``--signal=B:USR1@<warning>`` to the batch shell, which the job script's ``exec`` made the
runner; the local driver to the runner's pid; Grid Engine, at the soft limit ``s_rt``, to the
job's whole process group. :class:`WarningWatch` handles it once, however often it comes:

- it notes the time (:func:`spearmint_nn.job.should_checkpoint` is then True in the runner's
  process, where a PYTHON wrapper's ``main`` runs);
- it creates the attempt's warning file (``$SPEARMINT_WARNING_FILE``), which every process of
  the job can see, since a process the wrapper started gets no signal of its own;
- it sends the signal on to a SHELL wrapper's command, unless the scheduler signalled the whole
  process group (Grid Engine: the job script exports :data:`WARNING_TO_GROUP_VARIABLE`), so that
  the command gets exactly one.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from . import job

# Exported by job scripts of schedulers whose warning reaches the whole process group.
WARNING_TO_GROUP_VARIABLE = "SPEARMINT_WARNING_TO_GROUP"


class WarningWatch:
    """The runner's handler of the warning signal (see the module docstring)."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.marker: Path | None = None       # the attempt's warning file, once the attempt is known
        self.child: subprocess.Popen | None = None  # a SHELL wrapper's running command
        self.forward = False                  # whether the experiment opted in (its "resume" key)
        self.to_group = os.environ.get(WARNING_TO_GROUP_VARIABLE) == "1"
        self._previous: Any = signal.SIG_DFL

    def install(self) -> "WarningWatch":
        """Handle the signal from now on (before anything slow: unhandled, it kills the runner)."""
        self._previous = signal.signal(job.WARNING_SIGNAL, self._handle)
        return self

    def uninstall(self) -> None:
        """Give the signal back to its earlier handler, and forget the warning (the job is over)."""
        signal.signal(job.WARNING_SIGNAL, self._previous)
        job._forget_warning()

    def attach(self, marker: Path) -> None:
        """The attempt is known: its warning file is ``marker`` (created now if the warning came)."""
        self.marker = marker
        if job.warned_at() is not None:
            self._touch()

    def _handle(self, signum: int, frame: Any) -> None:
        if job.warned_at() is not None:
            return  # one warning per attempt: a second copy (a restarted local daemon) changes nothing
        job._warning_arrived()
        print(f"spearmint-nn runner: job {self.job_id}: the warning before the time limit came", file=sys.stderr,
              flush=True)
        self._touch()
        child = self.child
        if self.forward and not self.to_group and child is not None and child.poll() is None:
            child.send_signal(job.WARNING_SIGNAL)

    def _touch(self) -> None:
        if self.marker is None:
            return
        try:
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            self.marker.touch()
        except OSError as exc:  # the flag in this process still says it
            print(f"spearmint-nn runner: cannot create {self.marker}: {exc.strerror}", file=sys.stderr, flush=True)
