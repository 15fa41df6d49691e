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

Progress (a learning curve) is one call per step, epoch or evaluation, which the daemon reads
as the job runs (``status``, ``results.csv``, the HTML report)::

        for epoch in range(50):
            loss = train_one_epoch()
            job.report(epoch, loss)

Asking to be resumed needs the experiment's ``"resume"`` key in config.json: without it the
scheduler is not asked for a warning and an attempt that stops early is a failure, because a
wrapper that cannot resume must not be restarted from scratch in a loop.

SHELL wrappers get the same through the environment: ``SPEARMINT_CHECKPOINT_DIR``,
``SPEARMINT_ATTEMPT``, ``SPEARMINT_REPORT_FILE`` (append ``<step> <value>`` lines to it, e.g.
``echo "$epoch $loss" >> "$SPEARMINT_REPORT_FILE"``), the warning as the signal
:data:`WARNING_SIGNAL` (SIGUSR1) sent to the command, and exit status
:data:`RESUME_EXIT_STATUS` (99) to ask to be resumed.

Torch-free and numpy-free, and imports nothing else of the package: it costs a job nothing.
"""
from __future__ import annotations

import operator
import os
import signal
import time
from pathlib import Path
from typing import Any

#: The job's checkpoint folder: absolute, created before the wrapper starts, kept across attempts.
CHECKPOINT_DIR_VARIABLE = "SPEARMINT_CHECKPOINT_DIR"
#: The attempt this run of the job is (1, 2, ...).
ATTEMPT_VARIABLE = "SPEARMINT_ATTEMPT"
#: A file the runner creates when the warning arrives. The scheduler signals the runner only
#: (SLURM's ``--signal=B:``, the local driver's kill of one pid), so a process the wrapper
#: started never sees the signal; every process of the job sees the file, whatever its process
#: group or signal handlers, and one stat per call is cheap next to a training step.
WARNING_FILE_VARIABLE = "SPEARMINT_WARNING_FILE"
#: The job's report file (``.spearmint/reports/<id>.txt``), appended to by :func:`report`;
#: its format is :mod:`spearmint_nn.experiment.curves`'s.
REPORT_FILE_VARIABLE = "SPEARMINT_REPORT_FILE"
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


def _report_number(number: Any, what: str) -> int | float:
    """A step or value as a plain int or float (numpy and torch scalars, a tensor of one element)."""
    wrong = TypeError(f"spearmint_nn.job.report: {what} must be a number, not {type(number).__name__}")
    if hasattr(number, "item") and not isinstance(number, (int, float)):  # numpy or torch, one element
        try:
            number = number.item()
        except (TypeError, ValueError, RuntimeError):
            raise wrong from None
    if isinstance(number, (bool, str, bytes)) or number is None:
        raise wrong
    if isinstance(number, int) or (what == "step" and hasattr(number, "__index__")):
        return operator.index(number)
    try:
        return float(number)
    except (TypeError, ValueError):
        raise wrong from None


def report(step: Any, value: Any) -> None:
    """Report the objective's ``value`` at ``step`` (an epoch, a number of samples, seconds: any
    number, growing from one report to the next): one line appended to the job's report file
    (``$SPEARMINT_REPORT_FILE``) and flushed at once, so the daemon sees it at its next poll. The
    job's curve continues across its attempts. Reports are progress only: the job's result is
    still what ``main`` returns.

    A value that is NaN or infinite (a diverged training) is written as such and skipped by the
    daemon, with one warning in the job's record; a step or value that is not a number is a
    TypeError. Outside a job (``main`` run by hand) nothing is written, so the same code runs
    anywhere.
    """
    step, value = _report_number(step, "step"), _report_number(value, "value")
    path = os.environ.get(REPORT_FILE_VARIABLE)
    if not path:
        return
    # One write of the whole line with O_APPEND: a reader sees a line whole or not yet at all
    # (spearmint_nn.experiment.curves ignores a last line without its newline). Opened and closed
    # per report: close is what makes an NFS client send the line to the server.
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(handle, f"{step!r} {value!r}\n".encode("ascii"))
    finally:
        os.close(handle)


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
