"""The scheduler's calls made off the loop's path (spearmint_nn.daemon.scheduler_calls)."""
from __future__ import annotations

import threading
import time

import pytest

from spearmint_nn.daemon.scheduler_calls import SchedulerCalls
from spearmint_nn.drivers.base import PollError


def test_the_loop_does_its_work_meanwhile_and_gets_the_answer_or_the_error():
    calls = SchedulerCalls(every_s=0.05)
    meanwhile = []
    calls.meanwhile = lambda: meanwhile.append(threading.current_thread().name)
    try:
        assert calls.run(lambda: (time.sleep(0.3), threading.current_thread().name)[1]).startswith("scheduler-calls")
        # the loop's own thread did the work meanwhile, several times
        assert len(meanwhile) >= 3 and set(meanwhile) == {threading.current_thread().name}
        meanwhile.clear()
        assert calls.run(lambda: 42) == 42 and meanwhile == []  # an answer at once: nothing meanwhile

        def fails() -> None:
            raise PollError("squeue gave no answer within 60 s")
        with pytest.raises(PollError, match="no answer"):
            calls.run(fails)
    finally:
        calls.close()
