"""``report DIR --html out.html``: the whole search in one self-contained HTML file.

The file needs nothing but a browser: CSS and the table-sorting script are inline, plots are
PNG images embedded as ``data:`` URIs, and a Content-Security-Policy forbids every fetch, so it
opens the same from a laptop after ``scp`` as on the cluster. Sections: summary, best job with
its params, the plots (when matplotlib is installed), failures with their reasons, and the
table of all jobs (the columns of ``results.csv``), sortable by a click on a header.

Everything that comes from the user or a job (names, params, reasons, stderr) is escaped.
"""
from __future__ import annotations

import base64
import statistics
import time
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any, Iterable

from .errors import ConfigError
from .config import load_config
from .progress import Snapshot, format_duration, objective_value, take_snapshot

CSS = """
:root { --fg: #1b1f24; --muted: #5b6470; --line: #d6dae0; --head: #f2f4f7; --accent: #1f77b4; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       margin: 0 auto; padding: 1.5em 2em 4em; max-width: 1200px; }
h1 { margin: 0 0 .2em; font-size: 1.7em; }
h2 { margin: 1.8em 0 .6em; padding-bottom: .2em; border-bottom: 2px solid var(--line); font-size: 1.25em; }
.muted { color: var(--muted); }
nav a { margin-right: 1em; color: var(--accent); }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .25em 1.5em; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: var(--head); }
td.num { text-align: right; }
.scroll { overflow-x: auto; max-height: 80vh; overflow-y: auto; border: 1px solid var(--line); }
.scroll table { border: 0; }
table.sortable thead th { position: sticky; top: 0; cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable thead th:hover { background: #e4e8ee; }
table.sortable thead th::after { content: "\\2195"; color: #aab; margin-left: .3em; font-size: .85em; }
table.sortable thead th[aria-sort="ascending"]::after { content: "\\25B2"; color: var(--fg); }
table.sortable thead th[aria-sort="descending"]::after { content: "\\25BC"; color: var(--fg); }
tr.best td { background: #e7f5e7; }
tr.state-failed td { color: #9b1c1c; }
td.reason { max-width: 36em; overflow-wrap: anywhere; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); margin-top: .3em; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; max-height: 20em; margin: .3em 0 0; }
details { margin: .2em 0 .8em; }
.failure { margin-bottom: 1em; }
.kind { display: inline-block; padding: 0 .5em; border-radius: 1em; background: #fde2e2; color: #9b1c1c; }
"""

# Sorts the table under the clicked header; numbers compare as numbers, empty cells go last,
# equal keys keep their previous order (so a second click on another column refines the first).
SORT_SCRIPT = """
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim() : v;
  }
  function isNumber(s) { return s !== "" && !isNaN(Number(s)); }
  function compare(a, b) {
    if (a === "" || b === "") { return a === b ? 0 : (a === "" ? 1 : -1); }
    var na = isNumber(a), nb = isNumber(b);
    if (na && nb) { return Number(a) - Number(b); }
    if (na !== nb) { return na ? -1 : 1; }
    return a.localeCompare(b, undefined, {numeric: true, sensitivity: "base"});
  }
  function sortBy(table, column, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, index) {
      return {row: row, index: index, key: key(row.cells[column])};
    });
    rows.sort(function (x, y) {
      var empty = (x.key === "") - (y.key === "");
      if (empty !== 0) { return empty; }
      var c = compare(x.key, y.key);
      return (ascending ? c : -c) || x.index - y.index;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.tabIndex = 0;
      th.title = "sort by " + th.textContent;
      th.addEventListener("click", function () { sortBy(table, column, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, column, th); }
      });
    });
  });
})();
"""

# No fetch of any kind: the report must work offline and must not phone home.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)


def _cell(value: Any, css: str = "") -> str:
    """A <td>; numbers keep full precision in data-v for sorting and show 6 significant digits."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    classes = " ".join(c for c in ("num" if numeric else "", css) if c)
    attrs = (f' class="{classes}"' if classes else "") + (f' data-v="{escape(repr(value))}"' if numeric else "")
    return f"<td{attrs}>{escape(_fmt(value))}</td>"


def _facts(pairs: Iterable[tuple[str, str]]) -> str:
    return '<dl class="facts">' + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in pairs) + "</dl>"


def _when(unix: Any) -> str:
    if not isinstance(unix, (int, float)) or isinstance(unix, bool):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(unix))


def _params_text(params: Any) -> str:
    """``[0.1]`` -> ``0.1``; longer lists stay lists; values formatted to 6 significant digits."""
    if isinstance(params, list):
        items = [_fmt(v) for v in params]
        return items[0] if len(items) == 1 else "[" + ", ".join(items) + "]"
    return _fmt(params)


def summary_html(snap: Snapshot) -> str:
    counts = snap.counts
    durations = snap.durations()
    best = snap.best
    finished = counts["complete"] + counts["failed"]
    facts = [
        ("experiment folder", str(snap.experiment)),
        ("finished", f"{finished} of {snap.budget}" if snap.budget else str(finished)),
        ("complete / failed", f"{counts['complete']} / {counts['failed']}"),
        ("running / pending", f"{counts['running']} / {counts['pending']}"),
        ("objective", f"{snap.objective} (minimised)"),
    ]
    if snap.constraints:
        facts.append(("constraints (feasible when >= 0)", ", ".join(snap.constraints)))
    facts.append(("best value", f"{objective_value(best, snap.objective):.6g} (job {best['id']})" if best else "-"))
    if durations:
        facts.append(("job duration", f"median {format_duration(statistics.median(durations))}, "
                                      f"total {format_duration(sum(durations))}"))
    eta = snap.eta_seconds()
    if eta and snap.budget and finished < snap.budget:
        facts.append(("estimated time to budget", format_duration(eta)))
    if snap.finished:
        facts.append(("first / last finished", f"{_when(snap.finished[0].get('finished'))} / "
                                               f"{_when(snap.finished[-1].get('finished'))}"))
    return '<section id="summary"><h2>Summary</h2>' + _facts(facts) + "</section>"


def best_html(snap: Snapshot) -> str:
    best = snap.best
    if best is None:
        return '<section id="best"><h2>Best job</h2><p class="muted">No feasible complete job yet.</p></section>'
    facts = [("job", str(best["id"])), (snap.objective, f"{objective_value(best, snap.objective):.10g}")]
    facts += [(f"task {t}", _fmt(v)) for t, v in (best.get("values") or {}).items() if t != snap.objective]
    if isinstance(best.get("duration"), (int, float)):
        facts.append(("duration", format_duration(best["duration"])))
    facts += [(key, _fmt(best.get(key))) for key in ("host", "source") if best.get(key)]
    facts.append(("finished", _when(best.get("finished"))))
    params = best.get("params") if isinstance(best.get("params"), dict) else {}
    rows = "".join(f"<tr><th>{escape(str(name))}</th><td>{escape(_params_text(value))}</td></tr>"
                   for name, value in params.items())
    return ('<section id="best"><h2>Best job</h2>' + _facts(facts)
            + '<h3>Parameters</h3><table class="params"><tbody>' + rows + "</tbody></table></section>")


def plots_html(snap: Snapshot) -> str:
    """Every plot section as an embedded PNG, or a note saying how to get plots."""
    from .plots import PlotsUnavailable, figure_bytes, require_matplotlib, section_figure, sections

    try:
        require_matplotlib()
    except PlotsUnavailable as exc:
        return f'<section id="plots"><h2>Plots</h2><p class="muted">{escape(str(exc))}</p></section>'
    figures = []
    for section in sections(snap):
        png = base64.b64encode(figure_bytes(section_figure(section), "png")).decode("ascii")
        figures.append(f'<figure id="plot-{escape(section.key)}"><img src="data:image/png;base64,{png}" '
                       f'alt="{escape(section.title)}"><figcaption>{escape(section.title)}</figcaption></figure>')
    return '<section id="plots"><h2>Plots</h2>' + "".join(figures) + "</section>"


def failures_html(snap: Snapshot) -> str:
    failed = snap.in_state("failed")
    if not failed:
        return '<section id="failures"><h2>Failures</h2><p class="muted">No failed jobs.</p></section>'
    kinds = Counter(job.get("failure") or "unknown" for job in failed)
    parts = [f'<p>{len(failed)} failed: '
             + ", ".join(f"{escape(k)} &times; {n}" for k, n in kinds.most_common()) + "</p>"]
    for job in sorted(failed, key=lambda j: j["id"]):
        tail = job.get("stderr_tail")
        parts.append(
            f'<div class="failure" id="failure-{job["id"]}"><strong>job {job["id"]}</strong> '
            f'<span class="kind">{escape(str(job.get("failure") or "unknown"))}</span> '
            f'{escape(str(job.get("reason") or "no reason recorded"))}'
            + (f"<details><summary>stderr (last lines)</summary><pre>{escape(str(tail))}</pre></details>" if tail else "")
            + "</div>")
    return '<section id="failures"><h2>Failures</h2>' + "".join(parts) + "</section>"


def jobs_table_html(snap: Snapshot) -> str:
    """All jobs in the columns of results.csv (``Store.table``), sortable by any column."""
    if snap.config is None:
        raise ConfigError("config.json", f"needed for the job table: {snap.config_error}")
    header, rows = snap.store.table(snap.config)
    best_id = snap.best["id"] if snap.best else None
    head = "".join(f"<th scope=\"col\">{escape(h)}</th>" for h in header)
    body = []
    reason_col = header.index("reason")
    for row in rows:
        cells = "".join(_cell(v, "reason" if i == reason_col else "") for i, v in enumerate(row))
        css = f"state-{row[1]}" + (" best" if row[0] == best_id else "")
        body.append(f'<tr class="{escape(css)}">{cells}</tr>')
    return ('<section id="jobs"><h2>All jobs</h2><p class="muted">Click a header to sort; click again to '
            'reverse. The best job is highlighted.</p><div class="scroll"><table id="jobs-table" class="sortable">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div></section>")


def render_html(snap: Snapshot) -> str:
    """The complete report page for a snapshot."""
    title = f"{snap.name}: spearmint-nn report"
    nav = "".join(f'<a href="#{k}">{escape(t)}</a>' for k, t in (
        ("summary", "Summary"), ("best", "Best job"), ("plots", "Plots"), ("failures", "Failures"), ("jobs", "All jobs")))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>{escape(snap.name)}</h1><p class=\"muted\">spearmint-nn report generated "
        f"{escape(_when(snap.taken_at))}</p><nav>{nav}</nav></header>",
        summary_html(snap), best_html(snap), plots_html(snap), failures_html(snap), jobs_table_html(snap),
        f"<script>{SORT_SCRIPT}</script>",
        "</body></html>",
    ])


def write_html(snap: Snapshot, path: str | Path) -> Path:
    """Write the report to ``path`` (its folder is created); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(snap), encoding="utf-8")
    return path


def write_reports(experiment_dir: str | Path, plot: str | None = None, svg: bool = False,
                  html: str | None = None) -> list[Path]:
    """What ``report DIR [--plot [PATH]] [--svg] [--html PATH]`` writes; returns the paths.

    ``plot`` is None for no plot, ``""`` for the default path (see :func:`plots.plot_path`);
    ``svg`` alone asks for the plot too. Raises ConfigError for a config that does not
    validate and :class:`~spearmint_nn.plots.PlotsUnavailable` for a plot without matplotlib.
    """
    from .plots import save_plot

    snap = take_snapshot(experiment_dir)
    if snap.config is None:
        load_config(experiment_dir, check_driver=False)  # raises the config's error
    written = []
    if plot is not None or svg:
        written.append(save_plot(snap, plot or None, svg=svg))
    if html:
        written.append(write_html(snap, html))
    return written
