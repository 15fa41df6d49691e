"""``report DIR --html out.html``: the whole search in one self-contained HTML file.

The file needs nothing but a browser: CSS and the table-sorting script are inline, plots are
PNG images embedded as ``data:`` URIs, and a Content-Security-Policy forbids every fetch, so it
opens the same from a laptop after ``scp`` as on the cluster. Sections: summary, best job with
its params (for a noisy objective, after it, the best by the model's posterior mean), the plots (when
matplotlib is installed), failures grouped by how they failed with the last lines of their
output, and the table of all jobs (the columns of ``results.csv``), sortable by a click on a
header.

Everything that comes from the user or a job (names, params, reasons, stderr) is escaped.
"""
from __future__ import annotations

import base64
import statistics
import time
from html import escape
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConfigError
from ..experiment.config import load_config
from ..experiment.summaries import job_table
from ..experiment.jobs import FINAL_STATES, JobState
from ..text import jobs_text
from .progress import format_duration
from .status import Snapshot, attempt_counts, attempts_text, failures_by_kind, printable_tail, read_related_summary, related_text, take_snapshot

# Failure groups shown one by one: a run whose failures differ in more than numbers could have
# thousands, and the page must stay small (the job table lists every failed job anyway).
MAX_FAILURE_GROUPS = 50
FAILURE_TAIL_LINES = 40

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
.scroll { overflow-x: auto; max-height: 80vh; overflow-y: auto; border: 1px solid var(--line); }
.scroll table { border: 0; }
table.sortable thead th { position: sticky; top: 0; cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable thead th:hover { background: #e4e8ee; }
table.sortable thead th::after { content: "\\2195"; color: #aab; margin-left: .3em; font-size: .85em; }
table.sortable thead th[aria-sort="ascending"]::after { content: "\\25B2"; color: var(--fg); }
table.sortable thead th[aria-sort="descending"]::after { content: "\\25BC"; color: var(--fg); }
tr.best td { background: #e7f5e7; }
tr.model-best td { background: #efe7f7; }
tr.state-failed td { color: #9b1c1c; }
td.reason { max-width: 36em; overflow-wrap: anywhere; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); margin-top: .3em; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; max-height: 20em; margin: .3em 0 0; }
details { margin: .2em 0 .8em; }
.failure { margin-bottom: 1em; }
.failure code { background: #f6f8fa; padding: 0 .3em; }
h3 { margin: 1.2em 0 .4em; font-size: 1.05em; }
.kind { display: inline-block; padding: 0 .5em; border-radius: 1em; background: #fde2e2; color: #9b1c1c; }
"""

# Sorts the table under the clicked header; numbers compare as numbers, empty cells go last,
# equal keys keep their previous order (so a second click on another column refines the first).
SORT_SCRIPT = """
(function () {
  "use strict";
  function key(cell) { return cell.textContent.trim(); }
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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: Any, css: str = "") -> str:
    """A <td> showing 6 significant digits, which is also what a click sorts by (jobs equal to
    6 digits keep their order; results.csv has every digit). Cells carry nothing else: a table
    of 10,000 jobs is most of a report's size."""
    attrs = f' class="{css}"' if css else ""
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
    finished = counts["complete"] + counts["failed"] + counts["stopped"]
    facts = [
        ("experiment folder", str(snap.experiment)),
        ("finished", f"{finished} of {snap.budget}" if snap.budget else str(finished)),
        ("complete / failed / stopped early", f"{counts['complete']} / {counts['failed']} / {counts['stopped']}"),
        ("running / pending", f"{counts['running']} / {counts['pending']}"),
        ("objective", f"{snap.objective} ({'minimised' if snap.sign > 0 else 'maximised'})"),
    ]
    if snap.constraints:
        facts.append(("constraints (feasible when >= 0)", ", ".join(snap.constraints)))
    by_model = snap.model_best
    facts.append(("best observed value (luckiest draw)" if by_model else "best value",
                  f"{best.objective_value(snap.objective):.6g} (job {best.id})" if best else "-"))
    if by_model:
        facts.append(("best by the model's posterior mean", f"{_mean_std(by_model)} (job {by_model['id']})"))
    if durations:
        facts.append(("job duration", f"median {format_duration(statistics.median(durations))}, "
                                      f"total {format_duration(sum(durations))}"))
    eta = snap.eta_seconds()
    if eta and snap.budget and finished < snap.budget:
        facts.append(("estimated time to budget", format_duration(eta)))
    attempts = attempt_counts([job for job in snap.jobs if job.state in FINAL_STATES])
    if attempts["interrupted_jobs"] or attempts["resumed_jobs"]:
        facts.append(("attempts", attempts_text(attempts)))
    for task in (read_related_summary(snap.config) if snap.config else None) or []:
        facts.append((f"related experiment {task['name']}", related_text(task)))
    if snap.finished:
        facts.append(("first / last finished", f"{_when(snap.finished[0].finished)} / "
                                               f"{_when(snap.finished[-1].finished)}"))
    return '<section id="summary"><h2>Summary</h2>' + _facts(facts) + "</section>"


def _mean_std(by_model: dict[str, Any]) -> str:
    std = by_model["std"]
    return f"{by_model['mean']:.6g}" + (f" \u00b1 {std:.3g}" if std is not None else "")


def _params_table(params: Any) -> str:
    params = params if isinstance(params, dict) else {}
    rows = "".join(f"<tr><th>{escape(str(name))}</th><td>{escape(_params_text(value))}</td></tr>"
                   for name, value in params.items())
    return '<table class="params"><tbody>' + rows + "</tbody></table>"


def best_html(snap: Snapshot) -> str:
    """The best observed job; for a noisy objective (best.json carries the model's best, once
    enough jobs completed) also, after it, the evaluated point with the lowest posterior mean,
    which is what Spearmint reported."""
    best = snap.best
    if best is None:
        return '<section id="best"><h2>Best job</h2><p class="muted">No feasible complete job yet.</p></section>'
    facts = [("job", str(best.id)), (snap.objective, f"{best.objective_value(snap.objective):.10g}")]
    facts += [(f"task {t}", _fmt(v)) for t, v in best.values.items() if t != snap.objective]
    if best.duration is not None:
        facts.append(("duration", format_duration(best.duration)))
    facts += [(key, _fmt(best.fields.get(key))) for key in ("host", "source") if best.fields.get(key)]
    facts.append(("finished", _when(best.fields.get("finished"))))
    by_model = snap.model_best
    if by_model is None:
        return ('<section id="best"><h2>Best job</h2>' + _facts(facts)
                + "<h3>Parameters</h3>" + _params_table(best.params) + "</section>")
    model_facts = [("job", str(by_model["id"])),
                   (f"predicted {snap.objective} (posterior mean \u00b1 std)", _mean_std(by_model))]
    if by_model["value"] is not None:
        model_facts.append((f"observed {snap.objective} there", f"{by_model['value']:.10g}"))
    if by_model["observations"] is not None:
        model_facts.append(("observations in the model", str(by_model["observations"])))
    if by_model["fitted"] is not None:
        model_facts.append(("model fitted", _when(by_model["fitted"])))
    return ('<section id="best"><h2>Best job</h2>'
            '<div id="best-observed"><h3>Best observed (luckiest draw)</h3>' + _facts(facts)
            + "<h4>Parameters</h4>" + _params_table(best.params) + "</div>"
            + '<div id="model-best"><h3>Best by the model\'s posterior mean</h3><p class="muted">The '
            "objective is noisy: its best observed value may be a lucky draw. The model's posterior "
            "mean averages the noise over every evaluation and names the evaluated point it expects "
            "to be best.</p>" + _facts(model_facts)
            + "<h4>Parameters</h4>" + _params_table(by_model["params"]) + "</div></section>")


def plots_html(snap: Snapshot, optimum: float | None = None) -> str:
    """Every plot section as an embedded PNG, or a note saying how to get plots."""
    from .plots import PlotsUnavailable, figure_bytes, require_matplotlib, section_figure, sections

    try:
        require_matplotlib()
    except PlotsUnavailable as exc:
        return f'<section id="plots"><h2>Plots</h2><p class="muted">{escape(str(exc))}</p></section>'
    figures = []
    for section in sections(snap, optimum):
        png = base64.b64encode(figure_bytes(section_figure(section), "png")).decode("ascii")
        figures.append(f'<figure id="plot-{escape(section.key)}"><img src="data:image/png;base64,{png}" '
                       f'alt="{escape(section.title)}"><figcaption>{escape(section.title)}</figcaption></figure>')
    return '<section id="plots"><h2>Plots</h2>' + "".join(figures) + "</section>"


def failures_html(snap: Snapshot) -> str:
    """Failed jobs grouped by how they failed (kind, reason, place), each group with the last
    lines of its output; the largest MAX_FAILURE_GROUPS groups, one entry each, whatever the
    number of failed jobs."""
    groups = snap.failure_groups
    if not groups:
        return '<section id="failures"><h2>Failures</h2><p class="muted">No failed jobs.</p></section>'
    failed = snap.in_state(JobState.FAILED)
    parts = [f"<p>{len(failed)} failed: "
             + ", ".join(f"{escape(k)} &times; {n}" for k, n in failures_by_kind(failed).items())
             + f"; {len(groups)} group(s) of the same kind, reason and place, the largest first.</p>"]
    shown = groups[:MAX_FAILURE_GROUPS]
    for rank, group in enumerate(shown, start=1):
        jobs = jobs_text(group.jobs)
        where = f" at <code>{escape(group.location)}</code>" if group.location else ""
        tail = "\n".join(printable_tail(group.output_tail, FAILURE_TAIL_LINES))
        parts.append(
            f'<div class="failure" id="failure-group-{rank}"><strong>{group.count} job(s)</strong> '
            f'<span class="kind">{escape(group.kind)}</span>{where}: '
            f'{escape(group.reason or "no reason recorded")} <span class="muted">({jobs})</span>'
            + (f"<details><summary>last lines of the output</summary><pre>{escape(tail)}</pre></details>"
               if tail else "") + "</div>")
    if len(groups) > len(shown):
        rest = sum(group.count for group in groups[len(shown):])
        parts.append(f'<p class="muted">{len(groups) - len(shown)} more group(s) with {rest} job(s); '
                     "the table of all jobs lists every failed job.</p>")
    return '<section id="failures"><h2>Failures</h2>' + "".join(parts) + "</section>"


def jobs_table_html(snap: Snapshot) -> str:
    """All jobs in the columns of results.csv (:func:`~spearmint_nn.experiment.summaries.job_table`),
    sortable by any column."""
    if snap.config is None:
        raise ConfigError("config.json", f"needed for the job table: {snap.config_error}")
    header, rows = job_table(snap.jobs, snap.config)
    best_id = snap.best.id if snap.best else None
    model_best_id = snap.model_best["id"] if snap.model_best else None
    head = "".join(f"<th scope=\"col\">{escape(h)}</th>" for h in header)
    # numbers align right, by column: a class on each of 160,000 cells would cost a megabyte
    numeric = [i + 1 for i in range(len(header)) if any(_is_number(row[i]) for row in rows)]
    align = ",".join(f"#jobs-table td:nth-child({i})" for i in numeric)
    style = f"<style>{align} {{ text-align: right; }}</style>" if numeric else ""
    body = []
    reason_col = header.index("reason")
    for row in rows:
        cells = "".join(_cell(v, "reason" if i == reason_col else "") for i, v in enumerate(row))
        css = (f"state-{row[1]}" + (" best" if row[0] == best_id else "")
               + (" model-best" if row[0] == model_best_id else ""))
        body.append(f'<tr class="{escape(css)}">{cells}</tr>')
    highlight = ("The best observed job is highlighted in green, the best by the model's posterior mean "
                 "in violet." if model_best_id is not None else "The best job is highlighted.")
    return ('<section id="jobs"><h2>All jobs</h2><p class="muted">Click a header to sort; click again to '
            f'reverse. {highlight}</p>{style}<div class="scroll"><table id="jobs-table" class="sortable">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div></section>")


def render_html(snap: Snapshot, optimum: float | None = None, *, plots: str | None = None, banner: str = "",
                css: str = "", script: str = "") -> str:
    """The complete report page for a snapshot (``optimum``: see :func:`plots.sections`).

    The page the daemon keeps current (:mod:`.live_page`) gives its own ``plots`` section in place
    of the drawn one, a ``banner`` under the title, and its ``css`` and ``script``."""
    title = f"{snap.name}: spearmint-nn report"
    nav = "".join(f'<a href="#{k}">{escape(t)}</a>' for k, t in (
        ("summary", "Summary"), ("best", "Best job"), ("plots", "Plots"), ("failures", "Failures"), ("jobs", "All jobs")))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}{css}</style></head><body>",
        f"<header><h1>{escape(snap.name)}</h1><p class=\"muted\">spearmint-nn report generated "
        f"{escape(_when(snap.taken_at))}</p>{banner}<nav>{nav}</nav></header>",
        summary_html(snap), best_html(snap), plots_html(snap, optimum) if plots is None else plots,
        failures_html(snap), jobs_table_html(snap),
        f"<script>{SORT_SCRIPT}{script}</script>",
        "</body></html>",
    ])


def write_html(snap: Snapshot, path: str | Path, optimum: float | None = None) -> Path:
    """Write the report to ``path`` (its folder is created); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(snap, optimum), encoding="utf-8")
    return path


def write_reports(experiment_dir: str | Path, plot: str | None = None, svg: bool = False,
                  html: str | None = None, optimum: float | None = None) -> list[Path]:
    """What ``report DIR [--plot [PATH]] [--svg] [--html PATH] [--optimum VALUE]`` writes;
    returns the paths.

    ``plot`` is None for no plot, ``""`` for the default path (see :func:`plots.plot_path`);
    ``svg`` alone asks for the plot too. Raises ConfigError for a config that does not
    validate and :class:`~spearmint_nn.views.plots.PlotsUnavailable` for a plot without matplotlib.
    """
    from .plots import save_plot

    snap = take_snapshot(experiment_dir)
    if snap.config is None:
        load_config(experiment_dir, check_driver=False)  # raises the config's error
    written = []
    if plot is not None or svg:
        written.append(save_plot(snap, plot or None, svg=svg, optimum=optimum))
    if html:
        written.append(write_html(snap, html, optimum))
    return written
