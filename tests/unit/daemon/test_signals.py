"""The daemon's stop signals: real signals sent to this process, caught by StopSignals."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from spearmint_nn.daemon.events.signals import STOP_SIGNALS, TIME_LIMIT_EXIT, StopSignals


@pytest.fixture
def stop():
    wake = threading.Event()
    signals = StopSignals(wake)
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    signals.install()
    yield signals, wake
    signals.restore()
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == before  # handed back as found


def test_sigusr1_is_the_time_limit_warning_and_asks_to_be_run_again(stop):
    signals, wake = stop
    assert not signals.stopping and signals.exit_code() == 0
    os.kill(os.getpid(), signal.SIGUSR1)
    assert wake.wait(5) and signals.stopping and signals.time_limit
    assert signals.exit_code() == TIME_LIMIT_EXIT not in (0, 1, 2, 130, 141)
    assert "time limit" in signals.why() and str(TIME_LIMIT_EXIT) in signals.why()
    # the jobs are left to the next run even with --cancel-on-exit
    assert not signals.cancels_jobs(cancel_on_exit=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_for_good(stop, sig):
    signals, wake = stop
    os.kill(os.getpid(), sig)
    assert wake.wait(5) and signals.stopping and not signals.time_limit
    assert signals.exit_code() == 0 and signals.why() == f"received {sig.name}"
    assert signals.cancels_jobs(cancel_on_exit=True) and not signals.cancels_jobs(cancel_on_exit=False)


def test_the_first_signal_decides(stop):
    signals, wake = stop
    os.kill(os.getpid(), signal.SIGUSR1)
    assert wake.wait(5)
    os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C while stopping for the time limit
    assert signals.received == signal.SIGUSR1 and signals.exit_code() == TIME_LIMIT_EXIT
