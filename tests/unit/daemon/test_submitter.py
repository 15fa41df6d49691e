"""The daemon's retry policy for failed submissions, without a daemon."""
from __future__ import annotations

import time

import pytest

from spearmint_nn.daemon import submitter
from spearmint_nn.daemon.submitter import MAX_SUBMIT_ATTEMPTS, MAX_SUBMIT_REJECTS, SubmitRetries
from spearmint_nn.drivers.base import SubmitError
from spearmint_nn.errors import DaemonError

TRANSIENT = SubmitError("controller restarting", transient=True)
REJECTED = SubmitError("invalid partition", transient=False)


def test_transient_failures_wait_twice_as_long_each_time_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(submitter, "SUBMIT_RETRY_MAX_S", 5.0)
    retries = SubmitRetries("slurm")
    delays = [retries.failed(1, TRANSIENT).retry_in for _ in range(5)]
    assert delays == [2.0, 4.0, 5.0, 5.0, 5.0]
    assert retries.waiting(1, time.monotonic()) and not retries.waiting(1, time.monotonic() + 6)
    assert not retries.waiting(2, time.monotonic())


def test_a_job_fails_after_its_last_transient_attempt_and_a_success_forgets_its_count():
    retries = SubmitRetries("slurm")
    for _ in range(MAX_SUBMIT_ATTEMPTS - 1):
        assert retries.failed(1, TRANSIENT).retry_in is not None
    last = retries.failed(1, TRANSIENT)
    assert (last.retry_in, last.reason) == (None, f"submission failed {MAX_SUBMIT_ATTEMPTS} times; last: {TRANSIENT}")
    assert not retries.waiting(1, time.monotonic())
    retries.failed(2, TRANSIENT)
    retries.succeeded(2)
    assert not retries.waiting(2, time.monotonic()) and retries.failed(2, TRANSIENT).retry_in == 2.0
    retries.check_rejects(TRANSIENT)  # transient failures are no rejection streak


def test_permanent_rejections_in_a_row_stop_the_daemon_and_a_submission_breaks_the_streak():
    retries = SubmitRetries("slurm")
    for job_id in range(1, MAX_SUBMIT_REJECTS):
        assert retries.failed(job_id, REJECTED) == submitter.AfterSubmitError(None, "invalid partition")
        retries.check_rejects(REJECTED)
    retries.succeeded(99)
    for job_id in range(1, MAX_SUBMIT_REJECTS):
        retries.failed(job_id, REJECTED)
        retries.check_rejects(REJECTED)
    retries.failed(MAX_SUBMIT_REJECTS, REJECTED)
    with pytest.raises(DaemonError, match=f"slurm driver rejected {MAX_SUBMIT_REJECTS} jobs in a row; last: "
                                          f"invalid partition"):
        retries.check_rejects(REJECTED)
