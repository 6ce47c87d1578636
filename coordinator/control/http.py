"""The control endpoint's HTTP server: the standard library's ``ThreadingHTTPServer`` on a
thread of its own, so that a slow client never blocks the event loop; each request is routed
by ``routes.route`` (which runs what touches coordinator state on the loop).
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from coordinator.observability.logs import get_logger

from . import pages
from .page import Body
from .routes import ROUTES, Control, route

log = get_logger("coordinator.control")

MAX_BODY_BYTES = 1 << 20
ALL_ROUTES = ROUTES + pages.ROUTES


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restarted server binds the port it had at once
    control: Control


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self._answer(400 if length < 0 else 413,
                         {"error": f"the body must be at most {MAX_BODY_BYTES} bytes"})
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        status, answer = route(self.server.control, method, parts.path,
                               parse_qs(parts.query), body, unquote, ALL_ROUTES)
        self._answer(status, answer)

    def _answer(self, status: int, answer: Any) -> None:
        if isinstance(answer, Body):  # a page, its script or its style
            data, content_type = answer.data, answer.content_type
        else:
            data, content_type = json.dumps(answer, default=str).encode() + b"\n", \
                "application/json"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("control request", client=self.address_string(), line=format % args)


class ControlServer:
    """``start()`` binds ``host:port`` and serves on a daemon thread; ``stop()`` ends it."""

    def __init__(self, control: Control, host: str, port: int) -> None:
        self.control = control
        self.host = "127.0.0.1" if host in ("", "localhost") else host
        self.port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> tuple[str, int]:
        """Bind and serve; returns the bound (host, port)."""
        server_class = _Server6 if ":" in self.host else _Server
        server = server_class((self.host, self.port), _Handler)
        server.control = self.control
        self._server = server
        self.port = int(server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, name="control-http",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self.host, self.port

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(5)
