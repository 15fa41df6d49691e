"""Progress as it happens: the live progress line of ``spearmint-nn run`` and ``status --watch``.

Both show a :class:`~spearmint_nn.views.status.Snapshot`, the one computation of where a search
stands. The live line::

    branin: 12/50 done, 2 running, 1 failed, best 0.3981 (job 17), refit 1.2s, ETA 4m10s

(done: finished jobs that count against ``max-finished-jobs``; a cancelled or lost job does not).

is redrawn in place (carriage return, erase to end of line) only when stdout is a terminal,
with the daemon's log lines scrolling above it. Anywhere else (a log file, a pipe, ``nohup``)
it becomes a plain ``progress`` log line, written when a job finished or the best job changed,
with no control characters.
"""
from __future__ import annotations

import math
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, TextIO

from ..time_share import SUMMARY_TIME_SHARE, TimeShare
from ..experiment.config import ExperimentConfig
from ..experiment.store import Store
from .status import Snapshot, take_snapshot

CLEAR_TO_END = "\x1b[K"
HOME_AND_CLEAR = "\x1b[H\x1b[2J"


# ---- text ------------------------------------------------------------------------------------

def format_duration(seconds: float) -> str:
    """``"42s"``, ``"4m10s"``, ``"3h05m"``, ``"2d04h"``; seconds >= 0."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def progress_text(snap: Snapshot) -> str:
    """The one-line summary shown by the live line (printable characters only).

    Worded so that it never contains the daemon's event words (`` finished ``, `` failed ``)
    between spaces: scripts count those in ``daemon.log``.
    """
    counts = snap.counts
    used = snap.budget_used
    parts = [f"{used}/{snap.budget} done" if snap.budget else f"{used} done", f"{counts['running']} running"]
    if counts["pending"]:
        parts.append(f"{counts['pending']} pending")
    parts.append(f"{counts['failed']} failed")
    if counts.get("stopped"):
        parts.append(f"{counts['stopped']} stopped")  # (early: never followed by a space, see above)
    best = snap.best
    parts.append(f"best {best.objective_value(snap.objective):.6g} (job {best.id})" if best else "best -")
    model_best = snap.model_best  # a noisy objective: the luckiest draw above, the model's pick here
    if model_best is not None:
        parts.append(f"model's best {model_best['mean']:.6g} (job {model_best['id']})")
    if snap.last_refit_s is not None:
        parts.append(f"refit {snap.last_refit_s:.1f}s")
    eta = snap.eta_seconds()
    if eta is not None and snap.budget and used < snap.budget:
        parts.append(f"ETA {format_duration(eta)}")
    return f"{snap.name}: " + ", ".join(parts)


def change_key(snap: Snapshot) -> tuple:
    """What must change for a new plain progress line: a job finished, or the best job changed
    (not every submission: a log file gets about one progress line per finished job)."""
    return snap.counts["complete"], snap.counts["failed"], snap.counts["stopped"], snap.best.id if snap.best else None


# ---- the live line ---------------------------------------------------------------------------

class LiveLine:
    """One status line kept at the bottom of a terminal, with log lines scrolling above it.

    stream : the terminal (default stdout). Write every other line through :meth:`above`.
    """

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stdout
        self._text: str | None = None
        self._drawn = False
        self._lock = threading.Lock()  # log lines may come from several threads

    def _width(self) -> int:
        return max(shutil.get_terminal_size((100, 24)).columns - 1, 20)

    def _redraw(self) -> None:
        if self._text is not None:
            self.stream.write("\r" + self._text[: self._width()] + CLEAR_TO_END)
            self._drawn = True
        self.stream.flush()

    def show(self, text: str) -> None:
        """Replace the live line by text (cut to the terminal width, so it never wraps)."""
        with self._lock:
            self._text = text
            self._redraw()

    def above(self, line: str) -> None:
        """Write a log line above the live line, which is then redrawn."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r" + CLEAR_TO_END)
            self.stream.write(line + "\n")
            self._redraw()

    def close(self) -> None:
        """Leave the cursor on a fresh line below the last drawn line."""
        with self._lock:
            if self._drawn:
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class EventSource(Protocol):
    """What the progress display needs of the daemon's event log
    (:class:`~spearmint_nn.daemon.event_log.EventLog`): a view reads the folder's formats and
    hooks into the daemon through this, never through the daemon's modules."""

    console: Callable[[str], None]

    def add_listener(self, listener: Callable[[str, str, Mapping[str, Any]], None]) -> None: ...

    def event(self, kind: str, message: str, **fields: Any) -> None: ...


class DaemonProgress:
    """The progress display of ``spearmint-nn run``, hooked into the daemon's event log.

    Build it with the config, hand :meth:`attach` to the daemon (called with its event log and
    its in-memory store once they exist), and :meth:`close` it when the daemon returns.

    On a terminal the event log's console lines are routed through a :class:`LiveLine` on
    ``stream``; elsewhere each change is logged as a plain ``progress`` event (console and
    ``daemon.log``) when a job finished or the best changed. Snapshots are only built in the thread that attached (the daemon's main
    thread, the store's owner); events from other threads (the proposer's ``model`` event)
    only record the refit time, shown at the next event. ``time_share``: the largest share of
    the time spent on snapshots (:class:`~spearmint_nn.time_share.TimeShare`; 1.0: every event).
    """

    def __init__(self, config: ExperimentConfig, stream: TextIO | None = None, interactive: bool | None = None,
                 time_share: float = SUMMARY_TIME_SHARE):
        self._config = config
        self._stream = stream if stream is not None else sys.stdout
        self.interactive = _is_terminal(self._stream) if interactive is None else interactive
        self.live = LiveLine(self._stream) if self.interactive else None
        self._events: EventSource | None = None
        self._store: Store | None = None
        self._owner: int | None = None
        self._refit_s: float | None = None
        self._key: Any = None
        # A snapshot reads every job: with 10,000 of them, one per event would cost more than
        # the event itself. Limited to a share of the time, one update then covers several events.
        self._limit = TimeShare(time_share)

    def attach(self, events: EventSource, store: Store) -> None:
        self._events, self._store, self._owner = events, store, threading.get_ident()
        if self.live is not None:
            events.console = self.live.above
        events.add_listener(self._on_event)

    def _on_event(self, kind: str, message: str, fields: Mapping[str, Any]) -> None:
        if kind == "progress":
            return
        if fields.get("refit_seconds") is not None:
            self._refit_s = float(fields["refit_seconds"])
        if threading.get_ident() == self._owner and (kind == "stopped" or self._limit.seconds_until_due() == 0.0):
            self._limit.run(self.update)

    def update(self) -> None:
        """Show the current progress (live line, or a ``progress`` event when it changed)."""
        snap = Snapshot(self._config.paths.experiment, self._store, self._config, last_refit_s=self._refit_s)
        if self.live is not None:
            self.live.show(progress_text(snap))
            return
        key = change_key(snap)
        if key != self._key:
            self._key = key
            self._events.event("progress", progress_text(snap))

    def close(self) -> None:
        if self.live is not None:
            self.live.close()


# ---- status --watch --------------------------------------------------------------------------

PACE_WINDOW_S = 600.0  # rates are over the last ten minutes at most
SPARK_BLOCKS = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"
SPARK_ASCII = "_.-:=+*#"  # for a terminal that cannot print the blocks
SPARK_WIDTH = 40


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH, chars: str = SPARK_BLOCKS) -> str:
    """The values as one character each (the last of each of ``width`` equal stretches when
    there are more), low to high as ``chars`` goes, by rank; "" without values.

    By rank, not by value: a search's running best falls far in its first jobs and then by
    little, so on a linear scale the first value flattened every later one into the lowest
    character and the line said nothing after job 2; each distinct value now takes a step."""
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        return ""
    step = max(1, math.ceil(len(finite) / width))
    shown = finite[step - 1::step] if len(finite) > width else finite
    levels = {value: rank for rank, value in enumerate(sorted(set(shown)))}
    scale = (len(chars) - 1) / (len(levels) - 1) if len(levels) > 1 else 0.0
    return "".join(chars[int(round(levels[v] * scale))] for v in shown)


def pace_text(snap: Snapshot, now: float | None = None, chars: str = SPARK_BLOCKS) -> str:
    """Two lines for ``status --watch``: the best value so far as a sparkline, and the rate at
    which jobs finish against the rate at which the optimizer proposes them (over
    :func:`pace_window`), with the free slots: when proposals lag behind completions while slots are
    free, the cluster is waiting for the optimizer."""
    now = time.time() if now is None else now
    finished = sorted(snap.finished, key=lambda job: job.fields.get("finished", 0))
    sign = snap.sign
    best, running_best = sign * math.inf, []
    for job in finished:
        value = job.objective_value(snap.objective)
        if value is not None and math.isfinite(value) and snap.is_feasible(job):
            best = min(best, value, key=lambda v: sign * v)
        running_best.append(best)
    line = sparkline(running_best, chars=chars)
    first = next((v for v in running_best if math.isfinite(v)), None)
    lines = [f"best so far  {line}  {first:.6g} -> {best:.6g}" if first is not None else "best so far  (none yet)"]
    window = pace_window(snap, now)
    if window is None:
        return "\n".join(lines + ["no job yet"])
    start, end = window
    minutes = max(end - start, 1.0) / 60.0

    def per_minute(times: list[Any]) -> float:
        return sum(1 for t in times if isinstance(t, (int, float)) and start <= t <= end) / minutes

    done = per_minute([job.fields.get("finished") for job in snap.finished])
    proposed = per_minute([job.fields.get("created") for job in snap.jobs if job.fields.get("source") == "optimizer"])
    free = None if snap.concurrency is None else max(0, snap.concurrency - snap.counts["running"] - snap.counts["pending"])
    stopped = snap.daemon["running"] is False
    text = (f"last {format_duration(end - start)}{' before the daemon stopped' if stopped else ''}: "
            f"{done:.1f} jobs done/min, {proposed:.1f} proposed/min")
    if free is not None:
        text += f"; {free} of {snap.concurrency} slots free"
        if free > 0 and not stopped and not snap.search_is_over and proposed < 0.9 * done:
            text += " (the cluster is waiting for the optimizer)"
    return "\n".join(lines + [text])


def pace_window(snap: Snapshot, now: float) -> tuple[float, float] | None:
    """(start, end) unix times of the stretch the pace is measured over; None before any job.

    It starts PACE_WINDOW_S before its end, or at the first job when that is later (a search two
    minutes old has not run for ten). It ends now, unless the daemon is known to have stopped:
    then at the last job's creation or finish, so that a finished search shows the pace it had
    rather than one that falls with every minute since.
    """
    times = [t for job in snap.jobs for t in (job.fields.get("created"), job.fields.get("finished"))
             if isinstance(t, (int, float)) and not isinstance(t, bool)]
    if not times:
        return None
    end = min(now, max(times)) if snap.daemon["running"] is False else now
    return max(end - PACE_WINDOW_S, min(times)), end


def watch(experiment_dir: str | Path, render: Callable[[Snapshot], str], interval_s: float = 2.0,
          stream: TextIO | None = None, interactive: bool | None = None,
          sleep: Callable[[float], None] = time.sleep) -> None:
    """Show ``render(snapshot)`` every ``interval_s`` seconds until the search is over and its
    daemon has exited, until a daemon seen running has stopped (a streak of failures, Ctrl-C in
    its own terminal), or Ctrl-C.

    The last view is taken after the daemon exited, so it says so: the job files show a search
    over a moment before the daemon has written its summaries and gone. On a terminal the
    screen is cleared and redrawn in place; elsewhere each view that differs from the previous
    one is written as plain lines.
    """
    stream = stream if stream is not None else sys.stdout
    interactive = _is_terminal(stream) if interactive is None else interactive
    previous: str | None = None
    seen_running = False
    try:
        while True:
            snap = take_snapshot(experiment_dir)
            running = snap.daemon["running"]  # None: on another host without a heartbeat (an older version)
            text = render(snap).rstrip("\n")
            if interactive:
                stream.write(HOME_AND_CLEAR + text + "\n")
            elif text != previous:
                stream.write(text + "\n")
            stream.flush()
            previous = text
            if running is not True and (snap.search_is_over or seen_running):
                return
            seen_running |= running is True
            sleep(interval_s)
    except KeyboardInterrupt:
        return
