"""The server name a TLS ClientHello asks for (SNI), read from its first record.

The proxy checks it against the host of the ``CONNECT``: many allowed sites sit on a
shared CDN, where a tunnel to ``registry.example.com`` carrying a handshake for
``attacker.example.net`` would reach the attacker's site at the same address. Only what
the check needs is parsed, every length against its container; anything else is
:class:`NotClientHello`, and the tunnel is closed.
"""

from __future__ import annotations

RECORD_HEADER_SIZE = 5
# A TLS record carries at most 2^14 bytes of plaintext (RFC 8446 §5.1).
MAX_RECORD_SIZE = 1 << 14
_HANDSHAKE = 0x16
_CLIENT_HELLO = 0x01
_SERVER_NAME_EXTENSION = 0x0000
_HOST_NAME = 0x00


class NotClientHello(ValueError):
    """The bytes are not one complete TLS ClientHello record this reader accepts."""


def record_length(header: bytes) -> int:
    """The payload length named by a record header; raises when it is not a handshake record."""
    if len(header) != RECORD_HEADER_SIZE or header[0] != _HANDSHAKE or header[1] != 0x03:
        raise NotClientHello("the tunnel does not start with a TLS handshake")
    length = int.from_bytes(header[3:5], "big")
    if not 0 < length <= MAX_RECORD_SIZE:
        raise NotClientHello("the TLS record has an impossible length")
    return length


def server_name(payload: bytes) -> str | None:
    """The SNI host name in a ClientHello record's ``payload``; None when it names none."""
    reader = _Reader(payload)
    if reader.byte() != _CLIENT_HELLO:
        raise NotClientHello("the first handshake message is not a ClientHello")
    body = reader.sub(reader.number(3))
    if reader.remaining:
        raise NotClientHello("the record holds more than one handshake message")
    body.skip(2 + 32)  # legacy version, random
    body.skip(body.byte())  # session id
    body.skip(body.number(2))  # cipher suites
    body.skip(body.byte())  # compression methods
    if not body.remaining:
        return None  # no extensions at all
    extensions = body.sub(body.number(2))
    if body.remaining:
        raise NotClientHello("bytes after the ClientHello's extensions")
    found: str | None = None
    seen: set[int] = set()
    while extensions.remaining:
        kind = extensions.number(2)
        data = extensions.sub(extensions.number(2))
        if kind in seen:
            raise NotClientHello("an extension appears twice")
        seen.add(kind)
        if kind == _SERVER_NAME_EXTENSION:
            found = _host_name(data)
    return found


def _host_name(data: _Reader) -> str:
    names = data.sub(data.number(2))
    if data.remaining:
        raise NotClientHello("bytes after the server name list")
    found: str | None = None
    while names.remaining:
        kind = names.byte()
        name = names.take(names.number(2))
        if kind == _HOST_NAME:
            if found is not None:
                raise NotClientHello("the ClientHello names two hosts")
            if not name or not name.isascii():
                raise NotClientHello("the server name is not an ASCII host name")
            found = name.decode("ascii")
    if found is None:
        raise NotClientHello("the server name extension names no host")
    return found


class _Reader:
    """Bounds-checked reading of a byte string, front to back."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._at

    def take(self, count: int) -> bytes:
        if count > self.remaining:
            raise NotClientHello("a length runs past the end of the ClientHello")
        chunk = self._data[self._at:self._at + count]
        self._at += count
        return chunk

    def skip(self, count: int) -> None:
        self.take(count)

    def byte(self) -> int:
        return self.take(1)[0]

    def number(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")

    def sub(self, count: int) -> _Reader:
        return _Reader(self.take(count))
