"""Far ends for the sandbox proxy's tests: sites on 127.0.0.1 standing in for made-up names.

Only 127.0.0.1 may be reached from this machine, so a test gives the proxy a
:class:`StaticResolver` that maps ``allowed.test`` and friends to it, and an
:func:`origin_site` that answers over http or https (with a certificate from
:func:`make_certificate`) and records what it was asked.
"""

from __future__ import annotations

import ipaddress
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socket import socket

import pytest

from loom_engine.sandbox.allowed_hosts import IPAddress
from loom_engine.sandbox.proxy_request import Rejected

LOCAL = ipaddress.ip_address("127.0.0.1")


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    host: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)


@dataclass
class Origin:
    port: int
    scheme: str
    seen: list[SeenRequest] = field(default_factory=list)


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path


def make_certificate(folder: Path, names: Sequence[str]) -> TlsFiles:
    """A self-signed certificate for ``names`` (its own CA: pass ``cert`` as the trust file)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    files = TlsFiles(folder / "origin.crt", folder / "origin.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(files.key), "-out", str(files.cert), "-days", "2", "-subj", f"/CN={names[0]}",
         "-addext", "subjectAltName=" + ",".join(f"DNS:{name}" for name in names)],
        check=True, capture_output=True)
    return files


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    origin: Origin
    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[socket, object]:
        sock, address = super().get_request()
        if self.tls is not None:
            # The handshake happens on the handler's first read, in its own thread.
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        origin = self.server.origin
        origin.seen.append(SeenRequest(self.command, self.path, self.headers.get("Host", ""),
                                       tuple(self.headers.items())))
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length) if length else b""
        body = f"{origin.scheme} origin: {self.command} {self.path} for {self.headers.get('Host')}".encode()
        body += b" with " + sent if sent else b""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def origin_site(tls: TlsFiles | None = None) -> Iterator[Origin]:
    """A site on 127.0.0.1 (https with ``tls``); the yielded :class:`Origin` lists what it was asked."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.origin = Origin(server.server_address[1], "https" if tls else "http")
    if tls is not None:
        server.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server.tls.load_cert_chain(tls.cert, tls.key)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.origin
    finally:
        server.shutdown()
        server.server_close()


class StaticResolver:
    """Resolves the names it was given (to 127.0.0.1 by default) and records each question."""

    def __init__(self, names: Mapping[str, Sequence[IPAddress]] | Sequence[str]) -> None:
        self._table: dict[str, list[IPAddress]] = (
            {name: list(addresses) for name, addresses in names.items()} if isinstance(names, Mapping)
            else {name: [LOCAL] for name in names})
        self.asked: list[str] = []

    async def resolve(self, name: str, port: int) -> Sequence[IPAddress]:
        self.asked.append(name)
        if name not in self._table:
            raise Rejected(502, f"cannot resolve {name}: not in the test's table")
        return self._table[name]


# Fixtures, re-exported by tests/conftest.py. ``https_origin`` serves the certificate of the
# test module's own ``tls_files`` fixture (each module names the hosts it needs).
@pytest.fixture
def http_origin() -> Iterator[Origin]:
    with origin_site() as origin:
        yield origin


@pytest.fixture
def https_origin(tls_files: TlsFiles) -> Iterator[Origin]:
    with origin_site(tls_files) as origin:
        yield origin
