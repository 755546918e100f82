"""The proxy's reading of a request head and of a TLS ClientHello: strict, so the host checked is the host reached."""

from __future__ import annotations

import ssl

import pytest

from loom_engine.sandbox import client_hello
from loom_engine.sandbox.allowed_hosts import Host
from loom_engine.sandbox.proxy_request import Rejected, parse_request


def head(*lines: str) -> bytes:
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n"


def test_connect_names_host_and_port() -> None:
    request = parse_request(head("CONNECT Example.COM.:443 HTTP/1.1", "Host: example.com:443"))
    assert (request.tunnel, request.host, request.port) == (True, Host("example.com"), 443)


def test_connect_to_a_bracketed_ipv6_address() -> None:
    request = parse_request(head("CONNECT [2001:db8::1]:443 HTTP/1.1"))
    assert request.host.name == "2001:db8::1" and request.host.is_address and request.port == 443


def test_absolute_uri_request_keeps_path_and_query() -> None:
    request = parse_request(head("GET http://example.com/a/b?c=d HTTP/1.1", "Accept: */*"))
    assert (request.tunnel, request.host.name, request.port, request.path) == (False, "example.com", 80, "/a/b?c=d")
    assert parse_request(head("GET http://example.com:8080?q HTTP/1.0")).path == "/?q"


def test_the_upstream_head_takes_host_from_the_uri_and_drops_proxy_headers() -> None:
    request = parse_request(head(
        "POST http://example.com/submit HTTP/1.1",
        "Host: attacker.example.net",  # must not decide which site the origin serves
        "Proxy-Authorization: Basic c2VjcmV0",
        "Proxy-Connection: keep-alive",
        "Connection: keep-alive, X-Secret-Hop",
        "X-Secret-Hop: 1",
        "Content-Length: 4",
        "X-Kept: yes"))
    assert request.upstream_head() == (
        b"POST /submit HTTP/1.1\r\nHost: example.com\r\nContent-Length: 4\r\nX-Kept: yes\r\nConnection: close\r\n\r\n")


def test_a_port_other_than_80_stays_in_the_upstream_host_header() -> None:
    upstream = parse_request(head("GET http://[2001:db8::1]:8080/ HTTP/1.1")).upstream_head()
    assert upstream.startswith(b"GET / HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n")


@pytest.mark.parametrize(("lines", "status", "said"), [
    (("GET / HTTP/1.1", "Host: example.com"), 400, "needs an absolute http:// URI"),
    (("GET https://example.com/ HTTP/1.1",), 400, "https goes through CONNECT"),
    (("GET ftp://example.com/ HTTP/1.1",), 400, "needs an absolute http:// URI"),
    (("GET http://user:pw@example.com/ HTTP/1.1",), 400, "credentials in the URI"),
    (("GET http://allowed.test@evil.test/ HTTP/1.1",), 400, "credentials in the URI"),
    (("GET http://example.com/#x HTTP/1.1",), 400, "fragment"),
    (("GET http://example.com/ HTTP/1.1", " folded: value"), 400, "folded header"),
    (("GET http://example.com/ HTTP/1.1", "NoColon"), 400, "NAME: VALUE"),
    (("GET http://example.com/ HTTP/1.1\nX: y",), 400, "bare CR, LF or NUL"),
    (("GET  http://example.com/ HTTP/1.1",), 400, "METHOD TARGET HTTP/1.x"),
    (("GET http://example.com/ HTTP/2.0",), 505, "HTTP/1.0 and HTTP/1.1"),
    (("CONNECT example.com HTTP/1.1",), 400, "CONNECT needs host:port"),
    (("CONNECT example.com:0 HTTP/1.1",), 400, "from 1 to 65535"),
    (("CONNECT example.com:99999 HTTP/1.1",), 400, "from 1 to 65535"),
    (("CONNECT example.com:+443 HTTP/1.1",), 400, "from 1 to 65535"),
    (("CONNECT 2001:db8::1:443 HTTP/1.1",), 400, "needs brackets"),
    (("CONNECT [2001:db8::1]x:443 HTTP/1.1",), 400, "[address]:port"),
    (("CONNECT 2130706433:443 HTTP/1.1",), 400, "reads as an IP address"),
    (("CONNECT exa%6dple.com:443 HTTP/1.1",), 400, "not a host name"),
    (("GET http://ex\xe4mple.com/ HTTP/1.1",), 400, "characters a method or URI cannot have"),
])
def test_ambiguous_or_malformed_requests_are_rejected(lines: tuple[str, ...], status: int, said: str) -> None:
    with pytest.raises(Rejected) as raised:
        parse_request(head(*lines))
    assert raised.value.status == status
    assert said in raised.value.message


def a_client_hello(server_hostname: str | None) -> bytes:
    """The first flight of a real TLS client (Python's ssl), captured without a network."""
    context = ssl.create_default_context()
    if server_hostname is None:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    outgoing = ssl.MemoryBIO()
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname=server_hostname)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def read_name(record: bytes) -> str | None:
    length = client_hello.record_length(record[:client_hello.RECORD_HEADER_SIZE])
    assert len(record) == client_hello.RECORD_HEADER_SIZE + length
    return client_hello.server_name(record[client_hello.RECORD_HEADER_SIZE:])


def test_the_server_name_of_a_real_client_hello_is_read() -> None:
    assert read_name(a_client_hello("api.example.com")) == "api.example.com"


def test_a_client_hello_for_an_address_names_no_host() -> None:
    assert read_name(a_client_hello("127.0.0.1")) is None  # clients send no SNI for an address
    assert read_name(a_client_hello(None)) is None


def test_a_truncated_client_hello_is_not_accepted() -> None:
    record = a_client_hello("api.example.com")
    payload = record[client_hello.RECORD_HEADER_SIZE:]
    for cut in (1, 40, len(payload) // 2, len(payload) - 1):
        with pytest.raises(client_hello.NotClientHello):
            client_hello.server_name(payload[:cut])


@pytest.mark.parametrize("header", [b"GET /", b"\x17\x03\x03\x00\x10", b"\x16\x03\x03\x00\x00", b"\x16\x03\x03\xff\xff",
                                    b"\x16\x02\x00\x00\x10"])
def test_a_tunnel_that_does_not_start_with_a_handshake_record_is_not_accepted(header: bytes) -> None:
    with pytest.raises(client_hello.NotClientHello):
        client_hello.record_length(header)


def sni_hello(*names: bytes, extra: bytes = b"") -> bytes:
    """A minimal ClientHello body with a server_name extension listing ``names`` (host_name entries)."""
    entries = b"".join(b"\x00" + len(name).to_bytes(2, "big") + name for name in names)
    server_name = len(entries).to_bytes(2, "big") + entries
    extensions = b"\x00\x00" + len(server_name).to_bytes(2, "big") + server_name + extra
    body = (b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
            + len(extensions).to_bytes(2, "big") + extensions)
    return b"\x01" + len(body).to_bytes(3, "big") + body


def test_a_hand_built_client_hello_is_read_like_a_real_one() -> None:
    assert client_hello.server_name(sni_hello(b"a.example.com")) == "a.example.com"


@pytest.mark.parametrize("payload", [
    sni_hello(b"a.example.com", b"b.example.com"),  # two names: which would the server use?
    sni_hello(b"a.example.com", extra=b"\x00\x00\x00\x00"),  # the extension twice
    sni_hello(b""),
    sni_hello("ä.example.com".encode()),
    sni_hello(b"a.example.com") + b"\x00",  # trailing bytes after the message
])
def test_ambiguous_client_hellos_are_not_accepted(payload: bytes) -> None:
    with pytest.raises(client_hello.NotClientHello):
        client_hello.server_name(payload)
