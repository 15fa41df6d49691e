"""The busy-cluster benchmark's shares of the slots' time, on hand-made accounting and job
records: who a free slot waited on (the daemon, or the scheduler) is told apart."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.benchmarks.busy_cluster import busy_share, daemon_side


def test_the_steady_share_leaves_out_the_settling_windows_and_counts_whole_seconds() -> None:
    # 2 slots from 0 to 40 s: one always busy, the other idle 10-20 s (to 15 s inside the window
    # left out after the restart at 8-10 s) and 30-35 s
    intervals = [(0.0, 40.0), (0.0, 10.0), (20.0, 30.0), (35.0, 40.0), (40.0, 41.0)]
    shares = busy_share(intervals, 2, disturbed=[(8.0, 10.0)], settle_s=5.0)
    assert shares["window_s"] == 40.0 and shares["accounted_jobs"] == 5
    # counted: 5-8 and 15-40 s, 28 s x 2 slots; idle: 15-20 and 30-35 s of one slot
    assert shares["steady_busy_share"] == pytest.approx((56 - 10) / 56)
    assert shares["busy_share"] == pytest.approx((40 + 10 + 10 + 5) / 80)


def _record(folder: Path, job: int, submitted: float, started: float, ended: float) -> None:
    path = folder / ".spearmint" / "jobs" / "complete" / f"{job:06d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": job, "state": "complete", "submitted": submitted,
                                "process_started": started, "ended": ended}))


def test_a_free_slot_is_put_down_to_the_daemon_or_to_the_scheduler(tmp_path: Path) -> None:
    # 2 slots, 0-20 s, settling 1 s: slot A's job ends at 10 s and its next is submitted only at
    # 14 s (the daemon's 4 s), which the scheduler starts at 16 s (the scheduler's 2 s); slot B
    # is busy throughout
    _record(tmp_path, 1, 0.0, 0.0, 10.0)
    _record(tmp_path, 2, 14.0, 16.0, 20.0)
    _record(tmp_path, 3, 0.0, 0.0, 20.0)
    shares = daemon_side(tmp_path, 2, 0.0, 20.0, [], settle_s=1.0)
    assert shares["steady_in_flight_share"] == pytest.approx((38 - 4) / 38, abs=0.01)
    assert shares["steady_queued_share"] == pytest.approx(2 / 38, abs=0.01)
