"""``spearmint-nn serve DIR [--port N]``: the report page the daemon keeps current, over HTTP on
127.0.0.1, for a user who forwards a port from the login node (``ssh -L 8765:localhost:8765``).

Read only, and nothing but the page: ``/`` and ``/report.html`` answer with
``.spearmint/report.html`` as it is on disk at each request (the page carries everything it
needs inline); every other path is 404, so no file of the experiment and no folder listing is
ever served. Bound to the loopback interface only; a request naming another host in its Host
header is refused (403), so a web page that points a name of its own at 127.0.0.1 (DNS
rebinding) cannot read the page through a user's browser.
"""
from __future__ import annotations

import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..experiment.layout import ExperimentPaths
from .html_report import CSP

DEFAULT_PORT = 8765
PAGE_PATHS = ("/", "/report.html")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _host_name(host_header: str) -> str:
    """``localhost:9000`` -> ``localhost``; ``[::1]:9000`` -> ``[::1]``."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[:host.find("]") + 1]
    return host.split(":", 1)[0]


class PageHandler(BaseHTTPRequestHandler):
    """Answers GET and HEAD for the page; everything else is refused."""

    page: Path  # set on the subclass that :func:`make_server` builds
    server_version = "spearmint-nn"

    def version_string(self) -> str:
        return self.server_version

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _answer(self, send_body: bool) -> None:
        if _host_name(self.headers.get("Host", "")) not in LOCAL_HOSTS:
            self._text(HTTPStatus.FORBIDDEN, "only for this machine's browsers (or a port forwarded to it)\n", send_body)
            return
        if urlsplit(self.path).path not in PAGE_PATHS:
            self._text(HTTPStatus.NOT_FOUND, "not found: this server serves the report page at / only\n", send_body)
            return
        try:
            body = self.page.read_bytes()
        except FileNotFoundError:
            self._text(HTTPStatus.SERVICE_UNAVAILABLE, "no report page yet: the daemon (spearmint-nn run) "
                       "writes it when it starts; reload then\n", send_body)
            return
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", body, send_body)

    def _text(self, status: HTTPStatus, text: str, send_body: bool) -> None:
        self._send(status, "text/plain; charset=utf-8", text.encode("utf-8"), send_body)

    def _send(self, status: HTTPStatus, content_type: str, body: bytes, send_body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")  # a reload must fetch the page the daemon rewrote
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: an open page asks every few seconds; errors still go to stderr."""

    def log_error(self, format: str, *args: object) -> None:
        sys.stderr.write(f"spearmint-nn serve: {format % args}\n")


def make_server(experiment_dir: str | Path, port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """A server of the experiment's page on 127.0.0.1:``port`` (0: a free port), not yet serving.

    Raises ConfigError when the folder is no experiment, OSError when the port is taken.
    """
    paths = ExperimentPaths(experiment_dir)
    if not (paths.experiment / "config.json").is_file():
        raise ConfigError(str(experiment_dir), "is not an experiment folder (no config.json)")
    handler = type("ExperimentPageHandler", (PageHandler,), {"page": paths.report_html})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    return server
