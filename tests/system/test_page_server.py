"""``spearmint-nn serve DIR``: a real server process answering real HTTP requests with the report
page the daemon keeps current, and nothing else of the experiment folder."""
from __future__ import annotations

import http.client
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from helpers.experiments import cli, write_finished_experiment
from spearmint_nn.experiment.layout import ExperimentPaths
from spearmint_nn.views.live_page import write_live_page
from spearmint_nn.views.status import take_snapshot


@pytest.fixture()
def served(tmp_path):
    """An experiment folder with its page, and ``spearmint-nn serve`` on a free port: (folder, port)."""
    exp = write_finished_experiment(tmp_path, 6, running=1)
    write_live_page(take_snapshot(exp), ExperimentPaths(exp).report_html, running=True)
    proc = subprocess.Popen([sys.executable, "-m", "spearmint_nn", "serve", str(exp), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line + proc.stderr.read()
        yield exp, int(match.group(1))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _get(port: int, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """A raw request: the path goes out exactly as given (no client cleans up ``..``)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": host} if host else {}
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    try:
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_serve_answers_with_the_page_as_it_is_on_disk(served):
    exp, port = served
    page = ExperimentPaths(exp).report_html
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert response.headers["Cache-Control"] == "no-store"
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        assert response.read() == page.read_bytes()
    # the daemon rewrites the page: the next request gets the new one
    write_live_page(take_snapshot(exp), page, running=False)
    with urllib.request.urlopen(f"http://localhost:{port}/report.html?reload=1", timeout=10) as response:
        body = response.read()
    assert body == page.read_bytes() and b'id="live" class="final"' in body


@pytest.mark.parametrize("path", ["/config.json", "/wrapper.py", "/.spearmint/", "/.spearmint/report.html",
                                  "/.spearmint/best.json", "/../config.json", "/%2e%2e/config.json",
                                  "/report.html/../config.json", "//etc/passwd", "/jobs/"])
def test_serve_refuses_every_other_path(served, path):
    exp, port = served
    status, _, body = _get(port, path)
    assert status == 404, (path, status)
    assert b"wrapper" not in body and b"{" not in body  # no file, no listing


def test_serve_refuses_a_foreign_host_name_and_says_when_there_is_no_page_yet(served):
    exp, port = served
    assert _get(port, "/", host="attacker.example:80")[0] == 403  # DNS rebinding
    assert _get(port, "/", host=f"localhost:{port + 1}")[0] == 200  # a forwarded port keeps its name
    ExperimentPaths(exp).report_html.unlink()
    status, _, body = _get(port, "/")
    assert status == 503 and b"spearmint-nn run" in body
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)


def test_serve_listens_on_the_loopback_interface_only(served):
    _, port = served
    with open("/proc/net/tcp") as handle:
        listening = [line.split()[1] for line in handle.readlines()[1:] if line.split()[3] == "0A"]
    assert f"0100007F:{port:04X}" in listening  # 127.0.0.1
    assert f"00000000:{port:04X}" not in listening  # not 0.0.0.0


def test_serve_needs_an_experiment_folder(tmp_path):
    result = cli("serve", tmp_path, "--port", "0", timeout=30)
    assert result.returncode == 2 and "not an experiment folder" in result.stderr
