"""What a sandboxed client asks Loom's proxy: its request head, read strictly.

Two forms are served: ``CONNECT host:port`` (a tunnel, for https) and a plain-http
request with an absolute URI (``GET http://host/path HTTP/1.1``). Anything ambiguous is
refused rather than guessed at — bare CR or LF, folded headers, credentials or a fragment
in the URI, an IPv6 address without brackets — since the host that is checked must be
the host that is reached. For plain http the ``Host`` header sent upstream is the one
from the URI (RFC 9112 §3.2.2), so a client cannot name one site and ask another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .allowed_hosts import Host, HostError, parse_host

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_VERSION = re.compile(rb"HTTP/1\.[01]\Z")
_TARGET = re.compile(rb"[\x21-\x7e]+\Z")
# Meant for this hop only: never passed on (with whatever ``Connection`` names).
# ``Transfer-Encoding`` stays: the body is passed through unchanged, framing and all.
_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization",
                         b"proxy-authenticate", b"te", b"trailer", b"upgrade", b"host"})


class Rejected(Exception):
    """A request the proxy answers with an error instead of serving it: ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class ProxyRequest:
    method: str
    host: Host
    port: int
    version: str
    # The origin-form target for a plain-http request; "" for a tunnel.
    path: str = ""
    headers: tuple[tuple[bytes, bytes], ...] = ()

    @property
    def tunnel(self) -> bool:
        return self.method == "CONNECT"

    def upstream_head(self) -> bytes:
        """A plain-http request as the origin server gets it: origin-form, one request, then close."""
        connection_named = {name.strip().lower() for key, value in self.headers
                            if key.lower() == b"connection" for name in value.split(b",")}
        authority = self.host.authority(self.port)
        if self.port == 80:
            authority = authority.rsplit(":", 1)[0]
        lines = [f"{self.method} {self.path} {self.version}".encode("ascii"), b"Host: " + authority.encode("ascii")]
        lines += [key + b": " + value for key, value in self.headers
                  if key.lower() not in _HOP_BY_HOP and key.lower() not in connection_named]
        lines.append(b"Connection: close")
        return b"\r\n".join(lines) + b"\r\n\r\n"


def parse_request(head: bytes) -> ProxyRequest:
    """``head`` is everything up to and including the blank line; raises :class:`Rejected`."""
    lines = head.removesuffix(b"\r\n\r\n").split(b"\r\n")
    if any(b"\r" in line or b"\n" in line or b"\x00" in line for line in lines):
        raise Rejected(400, "the request head has a bare CR, LF or NUL")
    method, target, version = _request_line(lines[0])
    headers = tuple(_header(line) for line in lines[1:])
    if method == "CONNECT":
        host, port = _authority(target, default_port=None)
        return ProxyRequest(method, host, port, version, headers=headers)
    scheme, _, rest = target.partition("://")
    if scheme.lower() == "https":
        raise Rejected(400, "https goes through CONNECT (set HTTPS_PROXY), not as a plain request")
    if scheme.lower() != "http" or not rest:
        raise Rejected(400, "this is a proxy: a request needs an absolute http:// URI, or CONNECT for https")
    if "#" in rest:
        raise Rejected(400, "a URI with a fragment is not passed on")
    split_at = min((rest.find(ch) for ch in "/?" if ch in rest), default=len(rest))
    authority, path = rest[:split_at], rest[split_at:]
    host, port = _authority(authority, default_port=80)
    if not path.startswith("/"):
        path = "/" + path
    return ProxyRequest(method, host, port, version, path, headers)


def _request_line(line: bytes) -> tuple[str, str, str]:
    parts = line.split(b" ")
    if len(parts) != 3:
        raise Rejected(400, "the request line is not METHOD TARGET HTTP/1.x")
    method, target, version = parts
    if not _TOKEN.match(method) or not _TARGET.match(target):
        raise Rejected(400, "the request line has characters a method or URI cannot have")
    if not _VERSION.match(version):
        raise Rejected(505, "only HTTP/1.0 and HTTP/1.1 are served")
    return method.decode("ascii"), target.decode("ascii"), version.decode("ascii")


def _header(line: bytes) -> tuple[bytes, bytes]:
    if line[:1] in (b" ", b"\t"):
        raise Rejected(400, "folded header lines are not accepted")
    name, colon, value = line.partition(b":")
    if not colon or not _TOKEN.match(name):
        raise Rejected(400, "a header line is not NAME: VALUE")
    return name, value.strip(b" \t")


def _authority(text: str, *, default_port: int | None) -> tuple[Host, int]:
    """``host:port`` (``[v6]:port``); ``default_port`` None means the port is required."""
    if "@" in text:
        raise Rejected(400, "credentials in the URI are not passed on")
    if text.startswith("["):
        host_text, bracket, after = text.partition("]")
        host_text += bracket
        if not bracket or (after and not after.startswith(":")):
            raise Rejected(400, "the IPv6 address in the URI is not [address]:port")
        port_text = after[1:] if after else None
    elif text.count(":") > 1:
        raise Rejected(400, "an IPv6 address needs brackets: [address]:port")
    else:
        host_text, colon, port_text_or_empty = text.partition(":")
        port_text = port_text_or_empty if colon else None
    if port_text is None:
        if default_port is None:
            raise Rejected(400, "CONNECT needs host:port")
        port = default_port
    elif port_text.isdigit() and len(port_text) <= 5 and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise Rejected(400, "the port is not a number from 1 to 65535")
    try:
        return parse_host(host_text), port
    except HostError as error:
        raise Rejected(400, str(error)) from None
