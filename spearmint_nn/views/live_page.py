"""The report page that the daemon keeps current in the experiment folder (``.spearmint/report.html``)
while it runs, and that ``spearmint-nn serve`` serves.

It is the one-file report of :mod:`.html_report` without the plots: for 1000 jobs the rest of
the page takes about 0.1 s to build and the plots 3 to 5 s, and the page is rewritten every few
seconds (``spearmint-nn report DIR --html PATH`` draws the plots). It needs no server: opened
as a file (from a web portal of the home directory, or a mounted folder) it reloads itself with
a small inline script every :data:`RELOAD_SECONDS` while the daemon runs. The page the daemon
writes as it stops is final and carries no script.

A daemon killed with ``kill -9`` cannot write a final page. It rewrites the live page at least
every :data:`HEARTBEAT_SECONDS`, so a page older than :data:`STALE_SECONDS` says that the
daemon seems gone and stops reloading. A reload would also undo a sort of the table or an
output opened on a click: after such a click the page stops reloading until the user reloads it.
"""
from __future__ import annotations

import os
import socket
from html import escape
from pathlib import Path

from .. import files
from .html_report import render_html
from .status import Snapshot

RELOAD_SECONDS = 5  # how often the page reloads itself, and the least time between rewrites
HEARTBEAT_SECONDS = 60  # the daemon rewrites the page at least this often, changed or not
STALE_SECONDS = 5 * HEARTBEAT_SECONDS  # older than this, the daemon that wrote it seems gone

LIVE_CSS = """
#live { padding: .5em .8em; border-radius: .3em; margin: .8em 0 0; }
#live.running { background: #e7f0fa; }
#live.final { background: #f2f4f7; }
#live.gone { background: #fdf3d9; }
"""

# The page knows when it was written (data-written, unix seconds); it reloads while it is fresh
# and the user has not sorted the table or opened an output (a reload would undo either).
RELOAD_SCRIPT = """
(function () {
  "use strict";
  var live = document.getElementById("live");
  var note = document.getElementById("live-note");
  var written = Number(live.getAttribute("data-written")) * 1000;
  var every = Number(live.getAttribute("data-reload")) * 1000;
  var staleAfter = Number(live.getAttribute("data-stale-after")) * 1000;
  var held = false;
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("th, summary")) {
      held = true;
      note.textContent = "Reloading paused while you sort or read: reload the page to catch up.";
    }
  });
  function tick() {
    var age = Date.now() - written;
    if (age > staleAfter) {
      live.className = "gone";
      note.textContent = "Not rewritten for " + Math.round(age / 60000) + " min: the daemon seems to have " +
        "stopped without finishing this page (killed, or its machine went down). Reloading stopped; " +
        "spearmint-nn status tells where the search stands.";
      return;
    }
    if (!held) { window.location.reload(); return; }
    window.setTimeout(tick, every);
  }
  window.setTimeout(tick, Math.max(0, Math.min(every, staleAfter - (Date.now() - written))));
})();
"""


def _plots_note(snap: Snapshot) -> str:
    return ('<section id="plots"><h2>Plots</h2><p class="muted">Not drawn on the page the daemon keeps '
            "current (for a large search they take seconds each time): "
            f"<code>spearmint-nn report {escape(str(snap.experiment))} --html report.html</code> "
            "writes this report with its plots.</p></section>")


def live_page_html(snap: Snapshot, running: bool) -> str:
    """The page for ``snap``: while the daemon is ``running`` it reloads itself; else it is the
    search's final page (the daemon stopped)."""
    daemon = f"pid {os.getpid()} on {socket.gethostname()}"
    if running:
        banner = (f'<p id="live" class="running" data-written="{snap.taken_at:.3f}" data-reload="{RELOAD_SECONDS}" '
                  f'data-stale-after="{STALE_SECONDS}"><strong>Live</strong>: the daemon ({escape(daemon)}) '
                  f"rewrites this page as jobs finish; it reloads itself every {RELOAD_SECONDS} s. "
                  '<span id="live-note"></span></p>')
        script = RELOAD_SCRIPT
    else:
        banner = (f'<p id="live" class="final"><strong>Final</strong>: written as the daemon ({escape(daemon)}) '
                  "stopped; a new <code>spearmint-nn run</code> of the folder makes it live again.</p>")
        script = ""
    return render_html(snap, plots=_plots_note(snap), banner=banner, css=LIVE_CSS, script=script)


def write_live_page(snap: Snapshot, path: str | Path, running: bool) -> None:
    """Replace the page at ``path`` atomically (a reader sees the old page or the new one)."""
    files.atomic_write_bytes(Path(path), live_page_html(snap, running).encode("utf-8"))
