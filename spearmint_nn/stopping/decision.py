"""A rule's answer about a running job: what to do with it, and one line saying why (for the
log, the job's record and ``Optimizer.stop_decision``)."""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Action(enum.Enum):
    """What a rule says to do with a running job. A rule that only stops answers CONTINUE or
    STOP; PAUSE (keep the job's checkpoint, give its slot back, thaw it later) is the answer a
    freeze-thaw rule adds, which the daemon applies as one more way for a job to end."""

    CONTINUE = "continue"
    STOP = "stop"
    PAUSE = "pause"


@dataclass(frozen=True)
class Decision:
    """A rule's answer: its :class:`Action` and why."""

    action: Action
    why: str

    @property
    def stop(self) -> bool:
        """Whether the rule says to stop the job."""
        return self.action is Action.STOP

    @classmethod
    def go_on(cls, why: str) -> "Decision":
        return cls(Action.CONTINUE, why)

    @classmethod
    def stop_it(cls, why: str) -> "Decision":
        return cls(Action.STOP, why)
