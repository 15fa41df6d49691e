"""Text made for people: job ids named exactly (spearmint_nn.text.jobs_text)."""
from __future__ import annotations

from spearmint_nn.text import jobs_text


def test_job_ids_are_named_exactly_in_runs_and_cut_when_many():
    assert jobs_text([4]) == "job 4"
    assert jobs_text([13, 1]) == "jobs 1, 13"  # not "1..13": two jobs
    assert jobs_text([10, 11, 12, 13]) == "jobs 10..13"
    assert jobs_text([1, 2, 3, 7, 5, 6]) == "jobs 1..3, 5..7"
    assert jobs_text(list(range(1, 42, 2))) == "jobs 1, 3, 5, 7, 9, ..., 41 (21 jobs)"
