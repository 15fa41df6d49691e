"""The daemon's reading of running jobs' learning curves (``reports/<id>.txt``).

At each poll of the driver (``polling-time``), one listing of ``reports/`` names the running
jobs that have a report file, and each of them is read from the byte after the last whole line
read before (:func:`spearmint_nn.experiment.curves.read_since`): one open and one read per
reporting job per poll, of what was appended since, whatever the length of its curve. A job
with new reports has its record rewritten with the summary (``reports``, ``last_step``,
``last_value``; see :mod:`spearmint_nn.experiment.layout`), which is what ``status`` and
``results.csv`` show. When a job ends, the daemon reads its file once more, so the record of a
finished job has its whole curve's summary.

Lines that are not reports (garbage, NaN, inf) are skipped; the first one found in a job's file
is said once, as a warning line and the job's ``report_warning`` field, and never again for that
job, also by a later daemon (which finds the field set).

The curves themselves stay in memory (:meth:`CurveReader.curve`), for whatever decides from
them, and in the files, which are durable: a daemon killed and started again reads each running
job's file from its start at its first poll and so loses no report, and a finished job's curve
is read from its file the first time it is asked for.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...experiment.curves import curve_summary, read_curve, read_since, report_names
from ...stopping.curve import CurvePoint
from ...experiment.jobs import JobState
from ...experiment.store import Store
from ..event_log import EventLog


@dataclass
class _Reading:
    """Where the daemon is in one job's report file."""

    offset: int = 0    # bytes of whole lines read
    attempt: int = 1   # the attempt in force at the offset
    reports: list[CurvePoint] = field(default_factory=list)
    warned: bool = False


class CurveReader:
    """The running jobs' curves, read at each poll (see the module docstring)."""

    def __init__(self, store: Store, log: EventLog):
        self.store, self.log = store, log
        self._readings: dict[int, _Reading] = {}

    def poll(self) -> bool:
        """Read what the running jobs appended since the last poll and record it in their job
        files; True when any record changed."""
        running = self.store.ids(JobState.RUNNING)
        if not running:
            return False
        reporting = report_names(self.store.paths.reports) & running
        changed = False
        for job_id in sorted(reporting):
            fields = self._read_new(job_id)
            if fields:
                self.store.update(job_id, **fields)
                changed = True
        return changed

    def final(self, job_id: int) -> dict[str, Any]:
        """The curve fields for the record of a job that is ending (its last reports read now):
        the summary and a warning not yet recorded; empty when the job reported nothing."""
        fields = self._read_new(job_id)
        reading = self._readings.get(job_id)
        return {**(curve_summary(reading.reports) if reading else {}), **fields}

    def curve(self, job_id: int) -> list[CurvePoint]:
        """Every report of the job so far, in file order, as of the last poll (read from its file
        the first time for a job that this daemon has not read)."""
        reading = self._readings.get(job_id)
        if reading is not None:
            return list(reading.reports)
        job = self.store.get(job_id)
        if job is None or not job.state.finished:  # a running job's file is read by the next poll
            return read_curve(self.store.paths.report_file(job_id))
        chunk = read_since(self.store.paths.report_file(job_id))  # a finished job's curve changes no more
        self._readings[job_id] = _Reading(chunk.consumed, chunk.attempt, chunk.reports, warned=True)
        return list(chunk.reports)

    def _read_new(self, job_id: int) -> dict[str, Any]:
        """Read the job's file beyond the last whole line read; the fields to record: the
        summary when reports came, ``report_warning`` the first time garbage did."""
        reading = self._readings.setdefault(job_id, _Reading())
        chunk = read_since(self.store.paths.report_file(job_id), reading.offset, reading.attempt)
        if chunk.consumed == 0:
            return {}
        reading.offset += chunk.consumed
        reading.attempt = chunk.attempt
        reading.reports += chunk.reports
        fields: dict[str, Any] = curve_summary(reading.reports) if chunk.reports else {}
        if chunk.garbage and not reading.warned:
            reading.warned = True
            job = self.store.get(job_id)
            if job is not None and not job.fields.get("report_warning"):
                line = (f"job {job_id}: its report file {self.store.paths.report_file(job_id).name} has lines that "
                        f"are not \"<step> <value>\" with two finite numbers, skipped (the first: "
                        f"{chunk.first_garbage})")
                fields["report_warning"] = line
                self.log.event("warning", line, job=job_id)
        return fields
