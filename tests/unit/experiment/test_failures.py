"""Failure signatures, groups and the streak that stops a daemon whose jobs fail the same way."""
from __future__ import annotations

from spearmint_nn.experiment.failures import (NAN_STREAK_FACTOR, WRAPPER_FAILURES_TO_STOP, FailureStreak, group_failures,
                                   signature, signature_as_run)
from spearmint_nn.experiment.jobs import Job, JobState


def failed(job_id: int, kind: str = "exception", reason: str = "ValueError: boom", **extra) -> Job:
    return Job(job_id, JobState.FAILED, {}, {"failure": kind, "reason": reason, **extra})


def complete(job_id: int) -> Job:
    return Job(job_id, JobState.COMPLETE, {}, {"value": 1.0, "values": {"main": 1.0}})


def test_signature_masks_point_values_and_ids_but_keeps_short_codes():
    a = failed(1, reason="ValueError: x=0.25 diverged in slurm job 123456")
    b = failed(2, reason="ValueError: x=3.5e-2 diverged in slurm job 123999")
    assert signature(a) == signature(b)
    assert signature(failed(3, "exit_code", "command exited with status 1")) != \
        signature(failed(4, "exit_code", "command exited with status 2"))
    assert signature(failed(5, location="wrapper.py:3")) != signature(failed(6, location="wrapper.py:4"))


def test_groups_count_first_and_last_job_and_keep_an_output_tail():
    jobs = [failed(1, stderr_tail="Traceback\nValueError: boom"), complete(2), failed(3),
            failed(4, "nan", "returned nan", stdout_tail="caught: ZeroDivisionError",
                   stderr_tail="spearmint-nn runner: job 4 failed (nan)"), failed(7)]
    groups = group_failures(jobs)
    assert [(g.kind, g.count, g.first_job, g.last_job) for g in groups] == [("exception", 3, 1, 7), ("nan", 1, 4, 4)]
    assert groups[0].output_tail == "Traceback\nValueError: boom"
    assert groups[1].output_tail == "caught: ZeroDivisionError\nspearmint-nn runner: job 4 failed (nan)"
    assert groups[0].as_dict()["count"] == 3


def test_wrapper_failures_stop_after_three_in_a_row():
    streak = FailureStreak(limit=20, ignored=["bad_wrapper"])
    outcomes = [streak.record(failed(i, "bad_wrapper", "NameError: name 'np' is not defined",
                                     location="wrapper.py:4")) for i in range(1, WRAPPER_FAILURES_TO_STOP + 1)]
    assert outcomes[:-1] == [None] * (WRAPPER_FAILURES_TO_STOP - 1)
    group = outcomes[-1]
    assert (group.count, group.first_job, group.last_job, group.location) == (3, 1, 3, "wrapper.py:4")


def test_a_success_or_another_failure_ends_a_streak():
    streak = FailureStreak(limit=3, ignored=[])
    assert streak.record(failed(1)) is None and streak.record(failed(2)) is None
    assert streak.record(complete(3)) is None
    assert streak.record(failed(4)) is None and streak.record(failed(5)) is None
    assert streak.record(failed(6, reason="KeyError: 'a'")) is None
    assert streak.record(failed(7)) is None and streak.record(failed(8)) is None
    assert streak.record(failed(9)).count == 3


def test_nan_results_need_a_longer_streak_and_cancellations_none():
    streak = FailureStreak(limit=2, ignored=[])
    for i in range(2 * NAN_STREAK_FACTOR - 1):
        assert streak.record(failed(i, "nan", "returned nan")) is None
        assert streak.record(failed(1000 + i, "cancelled", "cancelled by the user")) is None
    assert streak.record(failed(99, "nan", "returned nan")).count == 2 * NAN_STREAK_FACTOR


def test_failures_not_shown_to_the_model_stop_even_when_they_differ():
    streak = FailureStreak(limit=4, ignored=["node_fail", "submit_rejected"])
    assert streak.record(failed(1, "node_fail", "node n1 down")) is None
    assert streak.record(failed(2, "submit_rejected", "queue closed")) is None
    assert streak.record(failed(3, "node_fail", "node n2 down")) is None
    group = streak.record(failed(4, "submit_rejected", "queue full"))
    assert group is not None and group.last_job == 4


def test_failures_held_back_before_any_success_stop_after_three_as_a_wrapper_bug():
    streak = FailureStreak(limit=20, ignored=[])
    key_error = dict(reason="KeyError: 'lr'", location="wrapper.py:12")
    assert streak.record(failed(1, **key_error), held_back=True) is None
    assert streak.record(failed(2, **key_error), held_back=True) is None
    group = streak.record(failed(3, **key_error), held_back=True)
    assert group.wrapper_bug and (group.kind, group.count, group.location) == ("exception", 3, "wrapper.py:12")
    # The same failures after a success are about their points: the configured streak.
    streak = FailureStreak(limit=20, ignored=[])
    assert all(streak.record(failed(i, **key_error)) is None for i in range(1, 20))
    assert not streak.record(failed(20, **key_error)).wrapper_bug


def test_signature_as_run_is_the_kind_the_job_recorded_before_it_was_taken_for_a_wrapper_bug():
    recorded = failed(1, "bad_wrapper", "KeyError: 'lr'", location="wrapper.py:12", reclassified_from="exception")
    assert signature_as_run(recorded) == signature(failed(9, "exception", "KeyError: 'lr'", location="wrapper.py:12"))
    assert signature_as_run(failed(2, "nan", "returned nan")) == signature(failed(2, "nan", "returned nan"))
