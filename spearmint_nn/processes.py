"""What Linux's ``/proc`` says of a process, for those who must tell a live process from a pid
that was reused: the local driver (its jobs), the folder's lock (the daemon holding it) and the
claims of jobs (the runner evaluating one). Torch-free, as every job process imports it."""
from __future__ import annotations

from typing import NamedTuple


class ProcessStat(NamedTuple):
    """A live process's state letter (``R``, ``S``, ``Z``...) and its start time in clock ticks
    since boot: the pair (pid, start) names one process for good, as a pid alone does not."""

    state: str
    start_ticks: int


def process_stat(pid: int) -> ProcessStat | None:
    """The state and start of a live pid (from ``/proc/<pid>/stat``), or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may contain spaces and ')'
    return ProcessStat(fields[0], int(fields[19]))
