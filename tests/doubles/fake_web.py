"""A local web site for web_fetch tests: fixed routes on 127.0.0.1, in a thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# path -> (status, headers, body)
Routes = Mapping[str, tuple[int, Mapping[str, str], bytes]]
SLOW_PATH = "/slow"  # held without an answer until the test releases it, for cancellation tests
HOLD_LIMIT_S = 60.0  # a held request is answered after this even if nobody releases it


@dataclass(frozen=True)
class HeldRequests:
    """Requests to SLOW_PATH wait here: a test sees one arrive, and knows no answer was sent
    until it sets ``release`` (the site sets it on exit)."""

    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a slow handler must not hold up the next test
    routes: Routes = {}
    held: HeldRequests


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path == SLOW_PATH:
            self.server.held.arrived.set()
            self.server.held.release.wait(HOLD_LIMIT_S)
        status, headers, body = self.server.routes.get(
            self.path, (404, {"Content-Type": "text/plain"}, b"no such page"))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def local_site(routes: Routes, held: HeldRequests | None = None) -> Iterator[str]:
    """Serve ``routes``; yields the base URL (``http://127.0.0.1:PORT``)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.routes = routes
    server.held = held or HeldRequests()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.held.release.set()
        server.shutdown()
        server.server_close()
