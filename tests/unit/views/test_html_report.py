"""The one-file HTML report: self-contained, escaped, complete."""
from __future__ import annotations

import base64
import json
import re
import sys

import pytest

from spearmint_nn.errors import ConfigError
from spearmint_nn.views.html_report import render_html, write_html
from spearmint_nn.views.status import take_snapshot
from helpers.experiments import cli
from helpers.reports import Page, png_size
from helpers.experiments import write_finished_experiment as write_experiment


@pytest.mark.slow
def test_report_is_self_contained_and_complete(tmp_path):
    exp = write_experiment(tmp_path, 30, failures=True, constraint=True, running=2)
    snap = take_snapshot(exp)
    path = write_html(snap, tmp_path / "nested" / "report.html")
    html = path.read_text(encoding="utf-8")
    page = Page(html)
    assert page.open == []

    # nothing is fetched: no external URL in any attribute, every image a data URI, one script
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            assert not re.match(r"\s*(https?:)?//", value or ""), (tag, name, value)
    images = page.all("img")
    assert len(images) == 6 and all(img["src"].startswith("data:image/png;base64,") for img in images)
    for img in images:
        assert png_size(base64.b64decode(img["src"].split(",", 1)[1]))[0] > 500
    assert len(page.all("script")) == 1 and not any(a.get("src") for a in page.all("script"))
    assert not page.all("link")
    assert "default-src 'none'" in page.all("meta")[1]["content"]

    # one row per job, the best highlighted, every section present
    rows = [a for t, a in page.tags if t == "tr" and "state-" in a.get("class", "")]
    assert len(rows) == len(snap.jobs) == 32
    assert sum("best" in r["class"].split() for r in rows) == 1
    assert {s["id"] for s in page.all("section")} == {"summary", "best", "plots", "failures", "jobs"}
    text = " ".join(page.text)
    assert f"job {snap.best.id}" in text and "30 of 40" in text
    # the four failures are one group: its reason once, then each job's in the table
    assert text.count("wrapper raised ValueError: <script>alert('x')</script>") == 1 + 4
    assert "exception × 4" in text and "(jobs 7, 14, 21, 28)" in text


@pytest.mark.slow
def test_user_strings_are_escaped(tmp_path):
    exp = write_experiment(tmp_path, 6, failures=True, name="xss")
    config = json.loads((exp / "config.json").read_text())
    config["experiment-name"] = "<img src=x onerror=alert(1)>"
    config["variables"]["act"]["options"] = ["relu", "<script>alert(2)</script>", "gelu"]
    (exp / "config.json").write_text(json.dumps(config))
    for file in (exp / ".spearmint" / "jobs" / "complete").glob("*.json"):
        job = json.loads(file.read_text())
        job["params"]["act"] = ["<script>alert(2)</script>"]
        file.write_text(json.dumps(job))
    html = render_html(take_snapshot(exp))
    page = Page(html)
    assert len(page.all("script")) == 1 and page.all("img") == [
        a for a in page.all("img") if a["src"].startswith("data:")]
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_report_without_matplotlib_says_how_to_get_plots(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    page = Page(render_html(take_snapshot(write_experiment(tmp_path, 4))))
    assert page.all("img") == []
    assert "pip install 'spearmint-nn[plot]'" in " ".join(page.text)


@pytest.mark.slow
def test_empty_experiment_and_broken_config(tmp_path):
    page = Page(render_html(take_snapshot(write_experiment(tmp_path, 0))))
    text = " ".join(page.text)
    assert "No feasible complete job yet." in text and "No failed jobs." in text
    assert len(page.all("img")) == 1  # the (empty) convergence plot only

    exp = write_experiment(tmp_path, 3, name="broken")
    (exp / "config.json").write_text('{"variables": {}}')
    with pytest.raises(ConfigError, match="needed for the job table"):
        render_html(take_snapshot(exp))


@pytest.mark.slow
def test_report_html_command(tmp_path):
    exp = write_experiment(tmp_path, 10, failures=True)
    out = tmp_path / "share" / "report.html"
    result = cli("report", exp, "--html", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {out}"
    page = Page(out.read_text(encoding="utf-8"))
    assert len([a for t, a in page.tags if t == "tr" and "state-" in a.get("class", "")]) == 10
    (exp / "config.json").write_text('{"variables": {"x": {"type": "FLOAT", "min": 1, "max": 0}}}')
    result = cli("report", exp, "--html", tmp_path / "bad.html")
    assert result.returncode == 2 and "variables.x.min" in result.stderr and not (tmp_path / "bad.html").exists()


@pytest.mark.slow
def test_a_report_of_ten_thousand_jobs_stays_a_few_megabytes(tmp_path):
    snap = take_snapshot(write_experiment(tmp_path, 10_000, failures=True, constraint=True))
    html = write_html(snap, tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count("<tr class=") == 10_000
    images = sum(len(m) for m in re.findall(r'src="data:image/png;base64,([^"]*)"', html))
    # measured 2026-11-28: 2.2 MB of images and 2.9 MB of table (288 bytes a job)
    assert images < 3_000_000 and len(html) - images < 3_500_000
