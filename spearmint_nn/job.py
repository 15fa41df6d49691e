"""What code running inside a job can ask of spearmint-nn: ``import spearmint_nn.job``.

A job may run in several attempts (the scheduler requeued it, or it stopped before its time
limit to be resumed from a checkpoint). Everything here reads the environment the runner gave
the job, so it works in the PYTHON wrapper's ``main`` and in any process the wrapper starts::

    from spearmint_nn import job

    def main(job_id, params):
        state = job.checkpoint_dir() / "state.json"
        step = json.loads(state.read_text())["step"] if state.exists() else 0
        while step < 1000:
            train_one_step()
            step += 1
            if job.should_checkpoint():          # the time limit is near
                state.write_text(json.dumps({"step": step}))
                job.resume_later()               # this attempt ends; the next one resumes
        return loss

Asking to be resumed needs the experiment's ``"resume"`` key in config.json: without it the
scheduler is not asked for a warning and an attempt that stops early is a failure, because a
wrapper that cannot resume must not be restarted from scratch in a loop.

SHELL wrappers get the same through the environment: ``SPEARMINT_CHECKPOINT_DIR``,
``SPEARMINT_ATTEMPT``, the warning as the signal :data:`WARNING_SIGNAL` (SIGUSR1) sent to the
command, and exit status :data:`RESUME_EXIT_STATUS` (99) to ask to be resumed.

Torch-free and numpy-free, and imports nothing else of the package: it costs a job nothing.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

#: The job's checkpoint folder: absolute, created before the wrapper starts, kept across attempts.
CHECKPOINT_DIR_VARIABLE = "SPEARMINT_CHECKPOINT_DIR"
#: The attempt this run of the job is (1, 2, ...).
ATTEMPT_VARIABLE = "SPEARMINT_ATTEMPT"
#: A file the runner creates when the warning arrives. The scheduler signals the runner only
#: (SLURM's ``--signal=B:``, the local driver's kill of one pid), so a process the wrapper
#: started never sees the signal; every process of the job sees the file, whatever its process
#: group or signal handlers, and one stat per call is cheap next to a training step.
WARNING_FILE_VARIABLE = "SPEARMINT_WARNING_FILE"
#: The signal schedulers send before the time limit, and the runner sends on to a SHELL command.
WARNING_SIGNAL = signal.SIGUSR1
#: The exit status by which a SHELL command that saved its checkpoint asks to be resumed
#: (Grid Engine's own "run me again" status; the runner interprets it and never exits with it).
RESUME_EXIT_STATUS = 99

# Set by the runner's signal handler in the runner's own process (see _warning_arrived).
_warned_at: float | None = None


class NotInJob(RuntimeError):
    """Called outside a job that spearmint-nn's runner started."""


class ResumeLater(BaseException):
    """Raised by :func:`resume_later`. A BaseException, as SystemExit is, so that the user's own
    ``except Exception`` around a training loop does not swallow it."""


def _variable(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise NotInJob(f"{name} is not set: this code runs outside a job started by spearmint-nn's runner "
                       "(python -m spearmint_nn.runner)")
    return value


def checkpoint_dir() -> Path:
    """The job's checkpoint folder (``.spearmint/checkpoints/<id>/``): it exists, survives the
    job's attempts, and is never deleted by spearmint-nn. :class:`NotInJob` outside a job."""
    return Path(_variable(CHECKPOINT_DIR_VARIABLE))


def attempt() -> int:
    """Which attempt of the job this is: 1 for the first run, 2 for the next, ..."""
    return int(_variable(ATTEMPT_VARIABLE))


def should_checkpoint() -> bool:
    """Whether the scheduler's warning before the time limit has arrived: time to save a
    checkpoint and call :func:`resume_later`. False outside a job and while no warning came."""
    if _warned_at is not None:
        return True
    marker = os.environ.get(WARNING_FILE_VARIABLE)
    return bool(marker) and os.path.exists(marker)


def resume_later() -> None:
    """End this attempt and ask to be run again, resuming from :func:`checkpoint_dir`: raises
    :class:`ResumeLater`, which the runner catches. Save the checkpoint first."""
    raise ResumeLater("the wrapper asked to be resumed from its checkpoint")


def _warning_arrived() -> None:
    """The runner's signal handler calls this, in the runner's process."""
    global _warned_at
    if _warned_at is None:
        _warned_at = time.time()


def _forget_warning() -> None:
    """The runner calls this when its job is over (a caller's process may run another)."""
    global _warned_at
    _warned_at = None


def warned_at() -> float | None:
    """Unix time at which the warning reached this process's runner (None: not yet, or not the runner)."""
    return _warned_at
