"""The HTML report in a real headless browser (Debian's chromium, driven by chromedriver).

Talks W3C WebDriver over plain HTTP with the standard library, so no extra package is needed.
Skipped, with the command that installs them, where chromium or chromedriver is missing.
"""
from __future__ import annotations

import base64
import io
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views.html_report import write_html
from spearmint_nn.views.status import take_snapshot
from helpers.experiments import wait_for, write_finished_experiment as write_experiment

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"  # W3C WebDriver's key for element references
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1280,1600"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    """The few W3C WebDriver commands this test needs, over urllib."""

    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"
        self.session: str | None = None

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 60) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.read().decode(errors='replace')[:500]}") from None

    def wait_ready(self, seconds: float = 20) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.call("GET", "/status", timeout=2).get("ready"):
                    return
            except (OSError, AssertionError):
                pass
            time.sleep(0.1)
        raise AssertionError("chromedriver did not become ready")

    def start(self, profile: Path) -> None:
        options = {"binary": CHROMIUM, "args": CHROME_FLAGS + [f"--user-data-dir={profile}"]}
        caps = {"browserName": "chrome", "goog:chromeOptions": options, "goog:loggingPrefs": {"browser": "ALL"}}
        self.session = self.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]

    def s(self, path: str) -> str:
        return f"/session/{self.session}{path}"

    def script(self, source: str, *args: Any) -> Any:
        return self.call("POST", self.s("/execute/sync"), {"script": source, "args": list(args)})

    def click(self, css: str) -> None:
        element = self.call("POST", self.s("/element"), {"using": "css selector", "value": css})
        self.call("POST", self.s(f"/element/{element[ELEMENT_KEY]}/click"), {})

    def console(self) -> list[dict]:
        return self.call("POST", self.s("/se/log"), {"type": "browser"})


@pytest.fixture()
def browser(tmp_path):
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip("needs Debian's chromium and chromedriver: apt-get install -y chromium chromium-driver")
    port = _free_port()
    proc = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = WebDriver(port)
    try:
        driver.wait_ready()
        driver.start(tmp_path / "chromium-profile")
        yield driver
    finally:
        if driver.session:
            try:
                driver.call("DELETE", driver.s(""), timeout=20)
            except (OSError, AssertionError):
                pass
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _column(driver: WebDriver, index: int) -> list[str]:
    """Sort keys of one column of the jobs table, top to bottom."""
    return driver.script(
        "var i = arguments[0];"
        "return Array.prototype.map.call(document.querySelectorAll('#jobs-table tbody tr'), function (r) {"
        "  var c = r.cells[i]; var v = c.getAttribute('data-v'); return v === null ? c.textContent : v; });",
        index)


def test_report_loads_cleanly_sorts_on_click_and_renders(browser, tmp_path):
    exp = write_experiment(tmp_path, 40, failures=True, constraint=True, running=2)
    paths = ExperimentPaths(exp)
    paths.reports.mkdir()
    for job_id in (1, 2, 41, 42):  # learning curves of two finished and both running jobs
        paths.report_file(job_id).write_text("".join(f"{s} {job_id / s!r}\n" for s in range(1, 9)))
    snap = take_snapshot(exp)
    report = write_html(snap, tmp_path / "out" / "report.html")
    browser.call("POST", browser.s("/url"), {"url": report.as_uri()})

    assert browser.script("return document.readyState") == "complete"
    assert browser.script("return document.title") == "demo: spearmint-nn report"
    errors = [entry for entry in browser.console() if entry.get("level") == "SEVERE"]
    assert errors == [], errors
    # the hostile failure reason is shown as text, never run
    assert browser.script("return document.querySelectorAll('#failures script, #jobs script').length") == 0
    # the five identical failures are one group, whose output opens on a click
    assert browser.script("return document.querySelectorAll('#failures .failure').length") == 1
    assert browser.script("return document.querySelector('#failures details').open") is False
    browser.click("#failures details summary")
    assert browser.script("return document.querySelector('#failures details').open") is True
    assert "ValueError: <b>bad</b>" in browser.script("return document.querySelector('#failures pre').textContent")
    shown = browser.script("return Array.prototype.map.call(document.querySelectorAll('#plots figure'),"
                           " function (f) { return f.id; })")
    assert shown == ["plot-convergence", "plot-curves", "plot-parameters", "plot-coordinates", "plot-landing", "plot-failures",
                     "plot-phases"]
    assert all(browser.script("return Array.prototype.map.call(document.images, function (i) {"
                              " return i.complete && i.naturalWidth > 500; })"))

    headers = browser.script("return Array.prototype.map.call("
                             "document.querySelectorAll('#jobs-table thead th'), function (h) { return h.textContent; })")
    value_col = headers.index("value")
    n_rows = len(_column(browser, 0))
    assert n_rows == len(snap.jobs) == 42
    browser.click(f"#jobs-table thead th:nth-child({value_col + 1})")
    keys = _column(browser, value_col)
    numbers = [float(k) for k in keys if k != ""]
    assert numbers == sorted(numbers) and len(numbers) == snap.counts["complete"]
    assert keys[len(numbers):] == [""] * (n_rows - len(numbers))  # jobs without a value go last
    browser.click(f"#jobs-table thead th:nth-child({value_col + 1})")
    numbers_desc = [float(k) for k in _column(browser, value_col) if k != ""]
    assert numbers_desc == sorted(numbers, reverse=True)
    # ids sort as numbers (2 < 10), not as text ("10" < "2")
    browser.click("#jobs-table thead th:nth-child(1)")
    ids = [int(k) for k in _column(browser, 0)]
    assert ids == sorted(ids) and ids[:3] == [1, 2, 3]
    assert browser.script("return document.querySelector('#jobs-table thead th').getAttribute('aria-sort')") == "ascending"

    shot = base64.b64decode(browser.call("GET", browser.s("/screenshot")))
    assert shot.startswith(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "screenshot.png").write_bytes(shot)
    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(shot), format="png")[..., :3]
    assert pixels.shape[0] >= 800 and pixels.shape[1] >= 1000
    ink = (pixels < 0.9).any(axis=-1).mean()  # share of pixels that are not (near) white
    colours = len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    assert ink > 0.02 and colours > 50, (ink, colours)

    # every section and every plot, scrolled to the top of the window, is drawn there
    for element in ["summary", "best", *shown, "failures", "jobs"]:
        browser.script(f"document.getElementById('{element}').scrollIntoView();")
        top = browser.script(f"return document.getElementById('{element}').getBoundingClientRect().top")
        assert abs(top) < 2 or browser.script("return window.innerHeight + window.scrollY "
                                              ">= document.body.scrollHeight - 1"), (element, top)
        view = matplotlib.image.imread(io.BytesIO(base64.b64decode(browser.call("GET", browser.s("/screenshot")))),
                                       format="png")[..., :3]
        assert (view < 0.9).any(axis=-1).mean() > 0.01, element


def test_console_errors_are_seen(browser, tmp_path):
    """The console check above would catch a broken script or a blocked fetch."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><meta charset="utf-8">'
                    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; script-src \'unsafe-inline\'">'
                    '</head><body><img src="https://example.invalid/x.png">'
                    '<script>throw new Error("boom")</script></body></html>')
    browser.call("POST", browser.s("/url"), {"url": page.as_uri()})
    messages = " ".join(e["message"] for e in browser.console() if e.get("level") == "SEVERE")
    assert "boom" in messages and "Content Security Policy" in messages


# ---- the page the daemon keeps current (.spearmint/report.html) ---------------------------------

SLOW_WRAPPER = """
import time

def main(job_id, params):
    time.sleep(1.5)
    return float(params["x"][0]) ** 2 + float(params["y"][0])
"""

# The summary's "finished" fact ("2 of 8"), and a mark that a reload of the page wipes.
FINISHED_JS = ("var dts = document.querySelectorAll('#summary dt');"
               "for (var i = 0; i < dts.length; i++) { if (dts[i].textContent === 'finished') "
               "{ return dts[i].nextElementSibling.textContent; } } return null;")


def _screenshot(driver: WebDriver) -> bytes:
    shot = base64.b64decode(driver.call("GET", driver.s("/screenshot")))
    assert shot.startswith(b"\x89PNG\r\n\x1a\n")
    return shot


def test_the_live_page_follows_a_run_from_a_file_url_and_stays_still_once_final(browser, make_experiment, tmp_path):
    from helpers.experiments import quick_config, start_daemon
    from spearmint_nn.views.live_page import RELOAD_SECONDS

    folder = make_experiment(quick_config(**{"max-finished-jobs": 8, "max-concurrent": 1}),
                             files={"wrapper.py": SLOW_WRAPPER})
    page = ExperimentPaths(folder).report_html
    daemon = start_daemon(folder)
    try:
        wait_for(page.exists, 60, "the daemon's first page")
        browser.call("POST", browser.s("/url"), {"url": page.as_uri()})  # a file, no server
        assert browser.script("return document.getElementById('live').className") == "running"
        first = browser.script(FINISHED_JS)
        first_shot = _screenshot(browser)
        browser.script("window.notReloaded = true;")
        # the page reloads itself, and a later page shows more finished jobs
        wait_for(lambda: browser.script("return window.notReloaded === undefined && document.readyState === 'complete'"),
              3 * RELOAD_SECONDS, "a reload")
        later = wait_for(lambda: (lambda text: text if text not in (None, first) else None)(browser.script(FINISHED_JS)),
                      60, "a page with more finished jobs")
        second_shot = _screenshot(browser)
        assert int(later.split()[0]) > int(first.split()[0]), (first, later)
        assert first_shot != second_shot
        assert [e for e in browser.console() if e.get("level") == "SEVERE"] == []
        assert daemon.wait(timeout=120) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    # the page the daemon left as it stopped: the whole run, and no more reloading
    browser.call("POST", browser.s("/url"), {"url": page.as_uri()})
    assert browser.script(FINISHED_JS) == "8 of 8"
    assert browser.script("return document.getElementById('live').className") == "final"
    browser.script("window.notReloaded = true;")
    time.sleep(RELOAD_SECONDS + 1.5)
    assert browser.script("return window.notReloaded") is True
    (tmp_path / "live-first.png").write_bytes(first_shot)


def test_a_live_page_stops_reloading_when_sorted_or_when_its_daemon_is_gone(browser, tmp_path):
    from spearmint_nn.views.live_page import RELOAD_SECONDS, STALE_SECONDS, write_live_page

    exp = write_experiment(tmp_path, 12, running=1)
    page = ExperimentPaths(exp).report_html
    # a click on a header sorts the table: a reload would undo it, so the page holds still
    write_live_page(take_snapshot(exp), page, running=True)
    browser.call("POST", browser.s("/url"), {"url": page.as_uri()})
    browser.script("window.notReloaded = true;")
    browser.click("#jobs-table thead th:nth-child(1)")
    time.sleep(RELOAD_SECONDS + 1.5)
    assert browser.script("return window.notReloaded") is True
    assert "paused" in browser.script("return document.getElementById('live-note').textContent")
    # a page its daemon last rewrote long ago (killed: no final page) says so and holds still
    old = take_snapshot(exp)
    old.taken_at -= STALE_SECONDS + 60
    write_live_page(old, page, running=True)
    browser.call("POST", browser.s("/url"), {"url": page.as_uri()})
    browser.script("window.notReloaded = true;")
    assert wait_for(lambda: browser.script("return document.getElementById('live').className") == "gone", 5, "gone")
    assert "the daemon seems to have stopped" in browser.script("return document.getElementById('live-note').textContent")
    time.sleep(RELOAD_SECONDS + 1.5)
    assert browser.script("return window.notReloaded") is True
