"""DomainProxy served for real: clients on its Unix socket (or a passed connection), origins on 127.0.0.1."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loom_engine.sandbox.allowed_hosts import AllowedHosts
from loom_engine.sandbox.proxy import DomainProxy, ProxyLimits, SystemResolver, is_local_address
from loom_engine.sandbox.proxy_request import Rejected
from tests.doubles.proxy_origin import Origin, StaticResolver, TlsFiles, make_certificate

# Long enough for a loaded machine; a test that needs it has already failed.
PATIENCE = 30.0


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_certificate(tmp_path_factory.mktemp("tls"), ["allowed.test", "other.test"])


@pytest.fixture
def refusals() -> list[str]:
    return []


@pytest.fixture
async def proxy(http_origin: Origin, https_origin: Origin, refusals: list[str]) -> AsyncIterator[DomainProxy]:
    async with DomainProxy(AllowedHosts.parse(["allowed.test", "*.allowed.test", "other.test"]),
                           ports={http_origin.port, https_origin.port},
                           resolver=StaticResolver(["allowed.test", "api.allowed.test", "other.test"]),
                           on_refused=refusals.append) as running:
        yield running


async def exchange(proxy: DomainProxy, request: bytes) -> bytes:
    """Send ``request`` on a fresh connection to the proxy; everything it answers, to EOF."""
    reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
    try:
        writer.write(request)
        return await asyncio.wait_for(reader.read(), PATIENCE)
    finally:
        writer.close()


def status_and_body(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()


async def open_tunnel(proxy: DomainProxy, target: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), PATIENCE)
    return reader, writer, answer


def trusting(tls_files: TlsFiles) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(tls_files.cert))


async def test_plain_http_to_an_allowed_host_reaches_it_asked_for_by_its_uri(
        proxy: DomainProxy, http_origin: Origin) -> None:
    answer = await exchange(proxy, (
        f"GET http://allowed.test:{http_origin.port}/page?x=1 HTTP/1.1\r\n"
        "Host: elsewhere.example\r\nProxy-Authorization: Basic c2VjcmV0\r\nX-Kept: yes\r\n\r\n").encode())
    assert status_and_body(answer) == (200, f"http origin: GET /page?x=1 for allowed.test:{http_origin.port}")
    [seen] = http_origin.seen
    assert seen.host == f"allowed.test:{http_origin.port}"
    assert seen.header("Proxy-Authorization") is None and seen.header("X-Kept") == "yes"


async def test_a_request_body_is_passed_through(proxy: DomainProxy, http_origin: Origin) -> None:
    answer = await exchange(proxy, (
        f"POST http://api.allowed.test:{http_origin.port}/submit HTTP/1.1\r\n"
        "Content-Length: 5\r\n\r\nhello").encode())
    expected = f"http origin: POST /submit for api.allowed.test:{http_origin.port} with hello"
    assert status_and_body(answer) == (200, expected)


async def test_a_tunnel_carries_tls_to_an_allowed_host(
        proxy: DomainProxy, https_origin: Origin, tls_files: TlsFiles) -> None:
    reader, writer, answer = await open_tunnel(proxy, f"allowed.test:{https_origin.port}")
    assert answer.startswith(b"HTTP/1.1 200 ")
    await writer.start_tls(trusting(tls_files), server_hostname="allowed.test")
    writer.write(f"GET /secure HTTP/1.1\r\nHost: allowed.test:{https_origin.port}\r\n"
                 "Connection: close\r\n\r\n".encode())
    response = await asyncio.wait_for(reader.read(), PATIENCE)
    writer.close()
    assert status_and_body(response) == (200, f"https origin: GET /secure for allowed.test:{https_origin.port}")


@pytest.mark.parametrize("form", ["connect", "absolute"])
async def test_an_unlisted_host_is_refused_with_403_naming_it_and_the_setting(
        proxy: DomainProxy, http_origin: Origin, refusals: list[str], form: str) -> None:
    request = (f"CONNECT evil.test:{http_origin.port} HTTP/1.1\r\n\r\n" if form == "connect"
               else f"GET http://evil.test:{http_origin.port}/ HTTP/1.1\r\n\r\n")
    status, body = status_and_body(await exchange(proxy, request.encode()))
    assert status == 403
    assert f"evil.test:{http_origin.port}" in body and "evil.test is not in [sandbox] allowed_domains" in body
    assert refusals == [body.strip()]
    assert http_origin.seen == []


async def test_the_refusal_reason_phrase_carries_the_message_for_clients_that_show_only_it(
        proxy: DomainProxy) -> None:
    answer = await exchange(proxy, b"CONNECT evil.test:443 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403 Loom's sandbox refused evil.test:443: evil.test is not in ")


async def test_an_allowed_host_on_a_closed_port_is_refused(proxy: DomainProxy, refusals: list[str]) -> None:
    status, body = status_and_body(await exchange(proxy, b"GET http://allowed.test:25/ HTTP/1.1\r\n\r\n"))
    assert status == 403
    assert "port 25 is closed" in body and 'network = "on"' in body


async def test_the_default_ports_are_80_and_443() -> None:
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), resolver=StaticResolver({})) as proxy:
        status, body = status_and_body(await exchange(proxy, b"CONNECT allowed.test:8443 HTTP/1.1\r\n\r\n"))
        assert status == 403 and "(open: 80, 443)" in body
        # Port 443 passes the check and goes on to resolve the name.
        status, body = status_and_body(await exchange(proxy, b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n"))
        assert (status, body.strip()) == (502, "cannot resolve allowed.test: not in the test's table")


async def test_a_tunnel_whose_handshake_asks_for_another_host_is_closed(
        proxy: DomainProxy, https_origin: Origin, tls_files: TlsFiles, refusals: list[str]) -> None:
    """CDN fronting: CONNECT names an allowed host, the TLS handshake another (the origin serves both)."""
    _, writer, answer = await open_tunnel(proxy, f"allowed.test:{https_origin.port}")
    assert answer.startswith(b"HTTP/1.1 200 ")
    with pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):
        await asyncio.wait_for(writer.start_tls(trusting(tls_files), server_hostname="other.test"), PATIENCE)
    writer.close()
    assert https_origin.seen == []
    assert refusals == [f"Loom's sandbox closed the tunnel to allowed.test:{https_origin.port}: "
                        "its TLS handshake asks for other.test"]


async def test_a_tunnel_that_does_not_carry_tls_is_closed(
        proxy: DomainProxy, http_origin: Origin, refusals: list[str]) -> None:
    reader, writer, answer = await open_tunnel(proxy, f"allowed.test:{http_origin.port}")
    assert answer.startswith(b"HTTP/1.1 200 ")
    writer.write(f"GET http://evil.test/ HTTP/1.1\r\nHost: allowed.test:{http_origin.port}\r\n\r\n".encode())
    rest = await asyncio.wait_for(reader.read(), PATIENCE)
    writer.close()
    assert rest == bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112])  # a TLS alert, then EOF
    assert http_origin.seen == []
    assert refusals == [f"Loom's sandbox closed the tunnel to allowed.test:{http_origin.port}: "
                        "the tunnel does not start with a TLS handshake"]


async def test_an_ip_literal_is_reached_only_when_listed(http_origin: Origin) -> None:
    port = http_origin.port
    async with DomainProxy(AllowedHosts.parse(["127.0.0.1"]), ports={port}, resolver=StaticResolver({})) as proxy:
        status, body = status_and_body(await exchange(proxy, f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n".encode()))
        assert (status, body) == (200, f"http origin: GET / for 127.0.0.1:{port}")
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), ports={port},
                           resolver=StaticResolver(["allowed.test"])) as proxy:
        status, body = status_and_body(await exchange(proxy, f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n".encode()))
        assert status == 403 and "127.0.0.1 is not in [sandbox] allowed_domains" in body
    assert len(http_origin.seen) == 1


async def test_each_address_of_a_name_is_tried_in_turn(http_origin: Origin) -> None:
    port = http_origin.port
    nothing_there = ipaddress.ip_address("127.0.0.2")  # loopback, but the origin listens on 127.0.0.1 only
    resolver = StaticResolver({"allowed.test": [nothing_there, ipaddress.ip_address("127.0.0.1")],
                               "dead.allowed.test": [nothing_there]})
    async with DomainProxy(AllowedHosts.parse(["*.allowed.test", "allowed.test"]), ports={port},
                           resolver=resolver) as proxy:
        answer = await exchange(proxy, f"GET http://allowed.test:{port}/ HTTP/1.1\r\n\r\n".encode())
        assert status_and_body(answer)[0] == 200
        status, body = status_and_body(
            await exchange(proxy, f"GET http://dead.allowed.test:{port}/ HTTP/1.1\r\n\r\n".encode()))
        assert status == 502 and body.startswith(f"cannot connect to dead.allowed.test:{port}: ")


async def test_the_system_resolver_refuses_a_name_that_leads_to_this_machine(http_origin: Origin) -> None:
    """An allowed name whose DNS answers 127.0.0.1 (or 169.254.169.254) must not reach Loom's own machine."""
    async with DomainProxy(AllowedHosts.parse(["localhost"]), ports={http_origin.port}) as proxy:
        status, body = status_and_body(
            await exchange(proxy, f"GET http://localhost:{http_origin.port}/ HTTP/1.1\r\n\r\n".encode()))
    assert status == 403
    assert "localhost: it resolves only to an address of this machine or its local link" in body
    assert http_origin.seen == []


@pytest.mark.parametrize(("address", "local"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("169.254.169.254", True), ("fe80::1", True),
    ("0.0.0.0", True), ("0.1.2.3", True), ("::", True), ("::ffff:127.0.0.1", True), ("::ffff:169.254.169.254", True),
    ("224.0.0.1", True), ("240.0.0.1", True),
    ("10.1.2.3", False), ("192.168.1.1", False), ("93.184.216.34", False), ("2606:4700::1", False),
])
def test_which_addresses_count_as_this_machine_or_its_link(address: str, local: bool) -> None:
    assert is_local_address(ipaddress.ip_address(address)) is local


async def test_the_system_resolver_refuses_only_when_no_address_is_left() -> None:
    # /etc/hosts names only: this machine has no DNS.
    with pytest.raises(Rejected) as raised:
        await SystemResolver().resolve("localhost", 80)
    message = raised.value.message
    assert raised.value.status == 403 and ("(127.0.0.1)" in message or "(::1)" in message)
    with pytest.raises(Rejected) as raised:
        await SystemResolver().resolve("no-such-host.invalid", 80)
    assert raised.value.status == 502 and raised.value.message.startswith("cannot resolve no-such-host.invalid: ")


@pytest.mark.parametrize(("request_head", "status", "said"), [
    (b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400, "needs an absolute http:// URI"),
    (b"GET http://allowed.test/ HTTP/3\r\n\r\n", 505, "HTTP/1.0 and HTTP/1.1"),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "bare CR, LF or NUL"),  # TLS, not HTTP
])
async def test_malformed_requests_get_a_one_line_error(
        proxy: DomainProxy, request_head: bytes, status: int, said: str) -> None:
    answer_status, body = status_and_body(await exchange(proxy, request_head))
    assert answer_status == status and said in body and body.count("\n") == 1


async def test_an_oversized_head_gets_431() -> None:
    limits = ProxyLimits(max_head_bytes=1024)
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), resolver=StaticResolver({}), limits=limits) as proxy:
        big = b"GET http://allowed.test/ HTTP/1.1\r\nX-Big: " + b"a" * 4096 + b"\r\n\r\n"
        status, body = status_and_body(await exchange(proxy, big))
    assert status == 431 and "over 1024 bytes" in body


async def test_a_client_that_never_finishes_its_head_gets_408() -> None:
    limits = ProxyLimits(head_timeout=0.2)
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), resolver=StaticResolver({}), limits=limits) as proxy:
        status, body = status_and_body(await exchange(proxy, b"GET http://allowed.test/ HTTP/1.1\r\n"))
    assert status == 408 and "no complete request head within 0.2 s" in body


async def test_connections_over_the_cap_get_503(http_origin: Origin, tls_files: TlsFiles) -> None:
    limits = ProxyLimits(max_connections=1)
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), ports={http_origin.port},
                           resolver=StaticResolver(["allowed.test"]), limits=limits) as proxy:
        _, first, answer = await open_tunnel(proxy, f"allowed.test:{http_origin.port}")  # open and held
        assert answer.startswith(b"HTTP/1.1 200 ")
        status, body = status_and_body(await exchange(proxy, b"GET http://allowed.test/ HTTP/1.1\r\n\r\n"))
        first.close()
    assert status == 503 and "already serves 1 connections" in body


async def test_an_idle_tunnel_is_closed(https_origin: Origin) -> None:
    limits = ProxyLimits(idle_timeout=0.3)
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), ports={https_origin.port},
                           resolver=StaticResolver(["allowed.test"]), limits=limits) as proxy:
        reader, writer, _ = await open_tunnel(proxy, f"allowed.test:{https_origin.port}")
        writer.write(a_client_hello_for("allowed.test"))  # accepted, then the client says nothing more
        # The proxy ends the quiet tunnel: EOF, after the server's first flight if it came in time.
        rest = await asyncio.wait_for(reader.read(), PATIENCE)
        assert rest == b"" or rest.startswith(b"\x16\x03")
        writer.close()


def a_client_hello_for(name: str) -> bytes:
    outgoing = ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


async def test_connections_passed_over_a_channel_are_served(proxy: DomainProxy, http_origin: Origin) -> None:
    """The relay's --pass-fd mode: the accepted connection itself crosses over SCM_RIGHTS."""
    far = proxy.open_channel()
    client, passed = socket.socketpair()
    with far, client:
        socket.send_fds(far, [b"c"], [passed.fileno()])
        passed.close()
        reader, writer = await asyncio.open_connection(sock=client)
        writer.write(f"GET http://allowed.test:{http_origin.port}/via-channel HTTP/1.1\r\n\r\n".encode())
        answer = await asyncio.wait_for(reader.read(), PATIENCE)
        writer.close()
    assert status_and_body(answer) == (200, f"http origin: GET /via-channel for allowed.test:{http_origin.port}")


async def test_anything_but_a_stream_socket_on_a_channel_is_dropped(proxy: DomainProxy, tmp_path: Path) -> None:
    far = proxy.open_channel()
    datagram, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with far, datagram, open(tmp_path / "file", "w") as file:
        socket.send_fds(far, [b"c"], [datagram.fileno(), file.fileno()])
        # The proxy keeps serving: a real connection on the same channel still gets its answer.
        client, passed = socket.socketpair()
        socket.send_fds(far, [b"c"], [passed.fileno()])
        passed.close()
        reader, writer = await asyncio.open_connection(sock=client)
        writer.write(b"CONNECT evil.test:443 HTTP/1.1\r\n\r\n")
        assert status_and_body(await asyncio.wait_for(reader.read(), PATIENCE))[0] == 403
        writer.close()


async def test_the_socket_lives_in_a_private_folder_that_stop_removes(tmp_path: Path) -> None:
    proxy = DomainProxy(AllowedHosts.parse(["allowed.test"]), resolver=StaticResolver(["allowed.test"]),
                        folder_parent=tmp_path)
    with pytest.raises(RuntimeError, match="not running"):
        _ = proxy.socket_path
    await proxy.start()
    folder = proxy.socket_folder
    assert folder.parent == tmp_path
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(proxy.socket_path.stat().st_mode)
    await proxy.stop()
    assert not folder.exists()


async def test_stop_ends_open_tunnels(http_origin: Origin) -> None:
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), ports={http_origin.port},
                           resolver=StaticResolver(["allowed.test"])) as proxy:
        reader, writer, _ = await open_tunnel(proxy, f"allowed.test:{http_origin.port}")
        assert proxy.connection_count == 1
    assert await asyncio.wait_for(reader.read(), PATIENCE) == b""
    writer.close()
    assert proxy.connection_count == 0


async def test_a_socket_path_too_long_for_unix_sockets_is_a_clear_error(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    with pytest.raises(OSError, match="too long for a Unix socket"):
        await DomainProxy(AllowedHosts.parse(["allowed.test"]), folder_parent=deep).start()
    assert os.listdir(deep) == []
