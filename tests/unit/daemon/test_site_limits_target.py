"""The in-flight target under a site's limits (spearmint_nn.daemon.policies.site_limits), without a daemon."""
from __future__ import annotations

import io
import time

import pytest

from spearmint_nn.daemon.policies import site_limits
from spearmint_nn.daemon.event_log import EventLog
from spearmint_nn.daemon.policies.site_limits import LOWER_AFTER, PROBE_FIRST_S, RETRY_S, SiteLimits
from spearmint_nn.drivers.base import JobStatus, SchedulerState
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views.status import read_site_limit, site_limit_lines

MESSAGE = "sbatch failed: sbatch: error: AssocMaxSubmitJobLimit"


@pytest.fixture
def limits(tmp_path):
    paths = ExperimentPaths(tmp_path)
    paths.state.mkdir()
    console = io.StringIO()
    reporter = EventLog(None, console)
    limits = SiteLimits(paths, reporter, "slurm")
    limits.console = console  # what the daemon printed, for the tests
    yield limits
    reporter.close()


def lines(limits: SiteLimits) -> list[str]:
    return [line for line in limits.console.getvalue().splitlines() if " limit " in line]


def test_without_a_refusal_the_target_is_max_concurrent(limits):
    assert limits.target(6, 0) == 6
    limits.accepted(3, 6)  # a success says nothing while no limit holds
    assert limits.target(6, 3) == 6 and not limits.paths.site_limit.exists() and lines(limits) == []


def test_a_refusal_holds_the_target_at_what_the_site_accepted_with_one_line_and_a_file(limits):
    limits.refused([4], 3, MESSAGE, 6)
    now = time.monotonic()
    assert limits.target(6, 3, now) == 3
    assert limits.target(6, 2, now) == 2  # nothing new during the pause after a refusal
    assert limits.target(6, 2, now + RETRY_S + 0.1) == 3  # after it, a job as one ends
    # a probe: one more job once the first wait has passed, never past max-concurrent
    assert limits.target(6, 3, now + PROBE_FIRST_S + 1) == 4 and limits.target(3, 3, now + PROBE_FIRST_S + 1) == 3
    limits.refused([5], 3, MESSAGE, 6)  # the probe refused too: said once only
    assert len(lines(limits)) == 1
    assert "refused job 4 for a limit of the site" in lines(limits)[0] and "holding at 3 job(s)" in lines(limits)[0]
    assert "AssocMaxSubmitJobLimit" in lines(limits)[0]
    found = read_site_limit(limits.paths)
    assert found["held"]["in_flight"] == 3 and found["held"]["message"] == MESSAGE and found["queued"] is None
    assert abs(found["held"]["since"] - time.time()) < 60
    text = "\n".join(site_limit_lines(found, 6))
    assert "3 in flight (max-concurrent 6)" in text and "AssocMaxSubmitJobLimit" in text


def test_the_waits_double_while_the_site_refuses_and_a_success_starts_them_again(limits, monkeypatch):
    monkeypatch.setattr(site_limits, "PROBE_MAX_S", 4 * PROBE_FIRST_S)
    for job_id, (pause, probe) in enumerate([(RETRY_S, PROBE_FIRST_S), (2 * RETRY_S, 2 * PROBE_FIRST_S),
                                             (4 * RETRY_S, 4 * PROBE_FIRST_S), (8 * RETRY_S, 4 * PROBE_FIRST_S)]):
        limits.refused([job_id], 2, MESSAGE, 6)  # refused at the target, each time
        now = time.monotonic()
        assert limits.target(6, 1, now + pause - 0.5) == 1 and limits.target(6, 1, now + pause + 0.5) == 2, pause
        assert limits.target(6, 2, now + probe - 1) == 2 and limits.target(6, 2, now + probe + 1) == 3, probe
    limits.accepted(2, 6)  # a job submitted as one ended: the pause starts again from its first length
    limits.refused([9], 1, MESSAGE, 6)
    now = time.monotonic()
    assert limits.target(6, 1, now + RETRY_S + 0.5) == 2


def test_refusals_below_the_target_lower_it_only_when_they_go_on(limits):
    limits.refused([4], 3, MESSAGE, 6)
    # one of the jobs just ended, and the scheduler still counts it: the target stays
    for job_id in range(5, 5 + LOWER_AFTER - 1):
        limits.refused([job_id], 2, MESSAGE, 6)
        assert limits.held.in_flight == 3
    limits.accepted(3, 6)
    limits.refused([7], 2, MESSAGE, 6)
    assert limits.held.in_flight == 3  # the streak began again at the success
    for job_id in range(8, 8 + LOWER_AFTER - 1):
        limits.refused([job_id], 1, MESSAGE, 6)  # the user's other jobs took the room
    assert limits.held.in_flight == 1 and read_site_limit(limits.paths)["held"]["in_flight"] == 1
    assert limits.target(6, 1, time.monotonic() + 4 * RETRY_S + 1) == 1  # after the pause, before a probe


def test_an_accepted_probe_raises_the_target_and_the_next_probe_follows_at_once(limits):
    limits.refused([4], 3, MESSAGE, 6)
    limits.accepted(3, 6)  # a job submitted as one ended: nothing new learned
    assert limits.target(6, 3) == 3
    limits.accepted(4, 6)
    assert limits.target(6, 4) == 5  # held at 4, and a probe due now
    assert read_site_limit(limits.paths)["held"]["in_flight"] == 4
    limits.accepted(6, 6)
    assert limits.held is None and limits.target(6, 6) == 6
    assert len(lines(limits)) == 2 and "the site's limit has lifted: 6 job(s) in flight" in lines(limits)[1]
    assert not limits.paths.site_limit.exists() and read_site_limit(limits.paths) is None


def test_jobs_queued_for_a_limit_are_said_once_and_shown_while_they_wait(limits):
    waiting = JobStatus(SchedulerState.QUEUED, None, "PENDING (AssocMaxJobsLimit)", site_limit=True)
    running = JobStatus(SchedulerState.RUNNING, None, "RUNNING")
    for_resources = JobStatus(SchedulerState.QUEUED, None, "PENDING (Resources)")
    limits.polled([running, for_resources])
    assert read_site_limit(limits.paths) is None
    limits.polled([running, waiting, waiting])
    assert read_site_limit(limits.paths) == {"held": None,
                                             "queued": {"jobs": 2, "reason": "PENDING (AssocMaxJobsLimit)"}}
    assert "2 job(s) wait in the queue for a limit of the site" in "\n".join(
        site_limit_lines(read_site_limit(limits.paths), 6))
    limits.polled([running])
    assert read_site_limit(limits.paths) is None and limits.target(6, 1) == 6  # no submission was refused
    limits.polled([waiting])
    assert len(lines(limits)) == 1 and "queued by the slurm scheduler for a limit of the site" in lines(limits)[0]


def test_a_new_daemon_removes_the_file_a_stopped_one_left(limits):
    limits.refused([4], 3, MESSAGE, 6)
    assert limits.paths.site_limit.exists()
    reporter = EventLog(None, io.StringIO())
    new = SiteLimits(limits.paths, reporter, "slurm")
    assert limits.paths.site_limit.exists()  # built before the daemon holds the folder: nothing written
    new.forget_previous()  # once it holds it
    reporter.close()
    assert not limits.paths.site_limit.exists()
