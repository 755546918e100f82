"""Loom's domain-filtering proxy: a sandboxed command's only way out under ``network = "allowlist"``.

Inside the sandbox there is no network but a private loopback. A relay there
(``relay.py``) listens on 127.0.0.1 and hands each connection to this proxy, which runs
in Loom's own process (asyncio, standard library only) and serves two forms: ``CONNECT
host:port`` for https and plain-http requests with an absolute URI. A host gets through
only when ``allowed_domains`` lists it and its port is open (80 and 443 unless told
otherwise); anything else is answered 403 with a line naming the host and the setting
to change, also passed to ``on_refused``.

Two ways in, both served alike: a Unix socket in a private 0700 folder
(:attr:`DomainProxy.socket_path`, which the sandbox must be able to see), or a channel
(:meth:`DomainProxy.open_channel`), a socket pair whose far end is inherited by the
sandboxed process, over which the relay passes each accepted connection itself — no
socket file to mount and no ``socket(AF_UNIX)`` call inside, so it works under a seccomp
filter that forbids one.

What is checked beyond the name: a name is resolved here, once, and the connection goes
to that address (no second lookup for a rebinding DNS server to answer differently); the
system resolver refuses a name that leads only to this machine or its local link
(loopback, 169.254.169.254 metadata) — list the address itself for that; a tunnel must
start with a TLS ClientHello whose server name is the host of the ``CONNECT``; a plain
request's ``Host`` is rewritten from its URI. Bounded: connections, head size, and time
to send a head, to connect and without traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .allowed_hosts import AllowedHosts, HostError, IPAddress, parse_host
from .client_hello import RECORD_HEADER_SIZE, NotClientHello, record_length, server_name
from .proxy_request import ProxyRequest, Rejected, parse_request
from .relay import DEFAULT_PORT, proxy_environment, relay_argv

DEFAULT_PORTS: frozenset[int] = frozenset({80, 443})
_SETTING = "[sandbox] allowed_domains"
_CHUNK = 64 * 1024
_SOCKET_NAME = "proxy.sock"
# After an error reply: how long, and how much, to read what the client still sends.
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 1 << 20
_MAX_UNIX_PATH = 107  # sun_path holds 108 bytes with the terminating NUL
# A fatal TLS alert, unrecognized_name: what a client sees when its tunnel is refused.
_TLS_REFUSAL = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112])
_REASONS = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 431: "Request Header Fields Too Large",
            502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
            505: "HTTP Version Not Supported"}


@dataclass(frozen=True)
class ProxyLimits:
    max_connections: int = 64
    max_head_bytes: int = 16 * 1024
    # Seconds a client has to send its request head, and a tunnel its ClientHello.
    head_timeout: float = 10.0
    # Seconds to resolve a host and connect to it.
    connect_timeout: float = 15.0
    # A connection with no bytes either way for this long is closed.
    idle_timeout: float = 300.0


@dataclass(frozen=True)
class RelayLaunch:
    """How to start one command behind the relay: ``argv`` before it, ``environment`` added, ``pass_fds`` passed."""

    argv: tuple[str, ...]
    environment: Mapping[str, str]
    pass_fds: tuple[int, ...]


class Resolver(Protocol):
    """Turns an allowed host name into the addresses to try; raises :class:`Rejected` to refuse."""

    async def resolve(self, name: str, port: int) -> Sequence[IPAddress]: ...


class SystemResolver:
    """The system's resolver, minus addresses on this machine or its local link."""

    async def resolve(self, name: str, port: int) -> Sequence[IPAddress]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except socket.gaierror as error:
            raise Rejected(502, f"cannot resolve {name}: {error.strerror}") from None
        found = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos))
        usable = [address for address in found if not is_local_address(address)]
        if found and not usable:
            raise Rejected(403, f"Loom's sandbox refused {name}: it resolves only to an address of this machine "
                                f"or its local link ({found[0]}); list that address in {_SETTING} to allow it")
        if not usable:
            raise Rejected(502, f"cannot resolve {name}: no addresses")
        return usable


def is_local_address(address: IPAddress) -> bool:
    """Loopback, link-local (cloud metadata), unspecified, multicast or reserved: this machine or its link."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if isinstance(address, ipaddress.IPv4Address) and address in _THIS_NETWORK:
        return True  # 0.x.x.x: Linux connects 0.0.0.0 to itself
    return (address.is_loopback or address.is_link_local or address.is_unspecified
            or address.is_multicast or address.is_reserved)


_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")


class DomainProxy:
    """``async with DomainProxy(AllowedHosts.parse(["example.com"])) as proxy: proxy.socket_path``."""

    def __init__(self, allowed: AllowedHosts, *, ports: Iterable[int] = DEFAULT_PORTS,
                 resolver: Resolver | None = None, limits: ProxyLimits | None = None,
                 folder_parent: Path | None = None, on_refused: Callable[[str], None] | None = None) -> None:
        self._allowed = allowed
        self._ports = frozenset(ports)
        self._resolver = resolver or SystemResolver()
        self._limits = limits or ProxyLimits()
        self._folder_parent = folder_parent
        self._on_refused = on_refused
        self._folder: Path | None = None
        self._server: asyncio.Server | None = None
        self._channels: dict[int, socket.socket] = {}
        # Per channel: who else hears of a refusal (the command it serves).
        self._channel_listeners: dict[int, Callable[[str], None]] = {}
        self._connections: set[asyncio.Task[None]] = set()
        # The loop it serves on: set by start() or serve_channels(), None when stopped.
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def socket_path(self) -> Path:
        if self._folder is None:
            raise RuntimeError("the proxy is not running")
        return self._folder / _SOCKET_NAME

    @property
    def socket_folder(self) -> Path:
        """The private folder holding :attr:`socket_path`: what a sandbox binds to reach it."""
        return self.socket_path.parent

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def running(self) -> bool:
        return self._loop is not None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop it serves on (None when stopped)."""
        return self._loop

    @property
    def channel_count(self) -> int:
        """Channels still open: one per running command started by :meth:`relay_for_command`."""
        return len(self._channels)

    async def __aenter__(self) -> DomainProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._loop is not None:
            raise RuntimeError("the proxy is already running")
        folder = Path(tempfile.mkdtemp(prefix="loom-proxy-", dir=self._folder_parent))  # 0700
        path = folder / _SOCKET_NAME
        if len(os.fsencode(path)) > _MAX_UNIX_PATH:
            folder.rmdir()
            raise OSError(f"the sandbox proxy's socket path is too long for a Unix socket: {path}")
        try:
            self._server = await asyncio.start_unix_server(self._accepted, path=path,
                                                           limit=self._limits.max_head_bytes)
            path.chmod(0o600)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        self._folder = folder
        self._loop = asyncio.get_running_loop()

    def serve_channels(self) -> None:
        """Serve channels only (:meth:`open_channel`), on the running loop, without a Unix socket.

        Synchronous, so a caller that must not await (a ``with`` that builds a command line,
        on the loop) can start the proxy the moment a command first needs it.
        """
        if self._loop is not None:
            raise RuntimeError("the proxy is already running")
        self._loop = asyncio.get_running_loop()

    async def stop(self) -> None:
        """Stop listening, end every connection and channel, remove the socket folder."""
        server = self._server
        tasks = self.close()
        await asyncio.gather(*tasks, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    def close(self) -> list[asyncio.Task[None]]:
        """:meth:`stop` without waiting, callable off the loop or after it has closed: the
        connections' tasks are cancelled (returned, to await where one can)."""
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                server.close()
        for near in list(self._channels.values()):
            self._close_channel(near)
        tasks = list(self._connections)
        for task in tasks:
            with contextlib.suppress(RuntimeError):
                task.cancel()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        self._loop = None
        return tasks

    def open_channel(self, on_refused: Callable[[str], None] | None = None) -> socket.socket:
        """A socket for the relay's ``--pass-fd`` mode: pass it to the sandboxed process, then close it.

        Every stream socket the relay sends over it (SCM_RIGHTS) is served as a client.
        The channel ends when the relay's copy and the caller's are closed, or at :meth:`stop`.
        ``on_refused`` hears, besides the proxy's own, each refusal of a connection it carried.
        """
        if self._loop is None:
            raise RuntimeError("the proxy is not running")
        near, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        near.setblocking(False)
        self._channels[near.fileno()] = near
        if on_refused is not None:
            self._channel_listeners[near.fileno()] = on_refused
        self._loop.add_reader(near.fileno(), self._receive, near)
        return far

    @contextlib.contextmanager
    def relay_for_command(self, port: int = DEFAULT_PORT, *,
                          on_refused: Callable[[str], None] | None = None) -> Iterator[RelayLaunch]:
        """One command's way out, over a channel; start the command inside the ``with``::

            with proxy.relay_for_command() as relay:
                await asyncio.create_subprocess_exec(*bwrap, "--", *relay.argv, "bash", "-c", command,
                                                     env={**env, **relay.environment}, pass_fds=relay.pass_fds)

        Leaving the block closes Loom's copy of the channel, so it ends with the relay.
        """
        channel = self.open_channel(on_refused)
        try:
            yield RelayLaunch(tuple(relay_argv(port, channel_fd=channel.fileno())), proxy_environment(port),
                              (channel.fileno(),))
        finally:
            channel.close()

    def _receive(self, near: socket.socket) -> None:
        try:
            data, fds, flags, _ = socket.recv_fds(near, 16, 4)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close_channel(near)
            return
        if not data and not fds:
            self._close_channel(near)  # the relay is gone
            return
        for fd in fds:
            self._adopt(fd, truncated=bool(flags & socket.MSG_CTRUNC),
                        listener=self._channel_listeners.get(near.fileno()))

    def _adopt(self, fd: int, *, truncated: bool, listener: Callable[[str], None] | None) -> None:
        try:
            client = socket.socket(fileno=fd)
        except OSError:
            os.close(fd)  # not a socket
            return
        if truncated or client.type != socket.SOCK_STREAM:
            client.close()
            return
        self._spawn(self._serve_socket(client, listener))

    def _close_channel(self, near: socket.socket) -> None:
        fd = near.fileno()
        self._channel_listeners.pop(fd, None)
        if self._channels.pop(fd, None) is not None:
            if self._loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop is already closed
                    self._loop.remove_reader(fd)
            near.close()

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._spawn(self._serve(reader, writer))

    def _spawn(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _serve_socket(self, client: socket.socket, listener: Callable[[str], None] | None) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=client, limit=self._limits.max_head_bytes)
        except OSError:
            client.close()
            return
        await self._serve(reader, writer, listener)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     listener: Callable[[str], None] | None = None) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            if len(self._connections) > self._limits.max_connections:
                raise Rejected(503, f"the sandbox's proxy already serves {self._limits.max_connections} connections")
            request = await self._read_request(reader)
            if request is None:
                return
            self._check(request)
            upstream_reader, upstream = await self._connect(request)
            if request.tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                hello = await self._client_hello(reader, request, listener)
                if hello is None:
                    writer.write(_TLS_REFUSAL)
                    await writer.drain()
                    return
                upstream.write(hello)
            else:
                upstream.write(request.upstream_head())
            await _pipe(reader, writer, upstream_reader, upstream, self._limits.idle_timeout)
        except Rejected as rejection:
            if rejection.status == 403:
                self._refused(rejection.message, listener)
            with contextlib.suppress(OSError, TimeoutError):
                writer.write(_reply(rejection.status, rejection.message))
                await _linger(reader, writer)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass  # a side went away or went quiet: nothing left to tell it
        finally:
            for side in (upstream, writer):
                if side is not None:
                    side.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> ProxyRequest | None:
        try:
            async with asyncio.timeout(self._limits.head_timeout):
                head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise Rejected(431, f"the request head is over {self._limits.max_head_bytes} bytes") from None
        except asyncio.IncompleteReadError:
            return None  # the client left before asking anything
        except TimeoutError:
            raise Rejected(408, f"no complete request head within {self._limits.head_timeout:g} s") from None
        return parse_request(head)

    def _check(self, request: ProxyRequest) -> None:
        where = request.host.authority(request.port)
        if not self._allowed.allows(request.host):
            raise Rejected(403, f"Loom's sandbox refused {where}: {request.host.name} is not in {_SETTING}; "
                                f"add it there in your Loom config to allow it")
        if request.port not in self._ports:
            open_ports = ", ".join(str(port) for port in sorted(self._ports))
            raise Rejected(403, f"Loom's sandbox refused {where}: port {request.port} is closed (open: {open_ports}); "
                                f'other ports need [sandbox] network = "on" in your Loom config')

    async def _connect(self, request: ProxyRequest) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        where = request.host.authority(request.port)
        failure = "no address to try"
        try:
            async with asyncio.timeout(self._limits.connect_timeout):
                if request.host.address is not None:
                    addresses: Sequence[IPAddress] = [request.host.address]  # listed as such
                else:
                    addresses = await self._resolver.resolve(request.host.name, request.port)
                for address in addresses:
                    try:
                        return await asyncio.open_connection(str(address), request.port,
                                                             flags=socket.AI_NUMERICHOST)
                    except OSError as error:
                        failure = error.strerror or str(error)
        except TimeoutError:
            raise Rejected(504, f"no connection to {where} within {self._limits.connect_timeout:g} s") from None
        raise Rejected(502, f"cannot connect to {where}: {failure}")

    async def _client_hello(self, reader: asyncio.StreamReader, request: ProxyRequest,
                            listener: Callable[[str], None] | None) -> bytes | None:
        """The tunnel's first TLS record when it asks for the CONNECT's host; None (and a refusal) otherwise."""
        where = request.host.authority(request.port)
        try:
            async with asyncio.timeout(self._limits.head_timeout):
                header = await reader.readexactly(RECORD_HEADER_SIZE)
                payload = await reader.readexactly(record_length(header))
            name = server_name(payload)
            if name is None and not request.host.is_address:
                raise NotClientHello("the TLS handshake names no host")
            if name is not None and parse_host(name) != request.host:
                raise NotClientHello(f"its TLS handshake asks for {parse_host(name).name}")
        except (NotClientHello, HostError) as error:
            self._refused(f"Loom's sandbox closed the tunnel to {where}: {error}", listener)
            return None
        return header + payload

    def _refused(self, message: str, listener: Callable[[str], None] | None) -> None:
        for hear in (self._on_refused, listener):
            if hear is not None:
                hear(message)


async def _pipe(client_reader: asyncio.StreamReader, client: asyncio.StreamWriter,
                upstream_reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, idle_timeout: float) -> None:
    """Copy both ways until both ends are done, one fails, or nothing moves for ``idle_timeout``."""
    loop = asyncio.get_running_loop()
    clock = _Activity(loop.time())
    copies = {loop.create_task(_copy(client_reader, upstream, clock)),
              loop.create_task(_copy(upstream_reader, client, clock))}
    watchdog = loop.create_task(clock.expired(idle_timeout))
    try:
        pending = set(copies)
        while pending:
            done, _ = await asyncio.wait(pending | {watchdog}, return_when=asyncio.FIRST_COMPLETED)
            if watchdog in done or any(task.exception() for task in done if task in copies):
                return
            pending -= done
    finally:
        for task in (*copies, watchdog):
            task.cancel()
        await asyncio.gather(*copies, watchdog, return_exceptions=True)


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, clock: _Activity) -> None:
    while chunk := await source.read(_CHUNK):
        clock.touch()
        sink.write(chunk)
        await sink.drain()
        clock.touch()
    if sink.can_write_eof():
        sink.write_eof()  # half-close: the other direction may still have bytes to carry


class _Activity:
    """When bytes last moved on a connection, either way."""

    def __init__(self, now: float) -> None:
        self.last = now

    def touch(self) -> None:
        self.last = asyncio.get_running_loop().time()

    async def expired(self, idle_timeout: float) -> None:
        """Returns once ``idle_timeout`` seconds pass with no :meth:`touch`."""
        loop = asyncio.get_running_loop()
        while (left := self.last + idle_timeout - loop.time()) > 0:
            await asyncio.sleep(left)


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Send what is written, then read what the client still sends until it closes (briefly).

    Closing a socket with unread bytes in it resets the connection, and a reset can
    overtake the reply: the client would see "connection reset" instead of why.
    """
    if writer.can_write_eof():
        writer.write_eof()
    await writer.drain()
    async with asyncio.timeout(_LINGER_SECONDS):
        discarded = 0
        while discarded < _LINGER_BYTES and (chunk := await reader.read(_CHUNK)):
            discarded += len(chunk)


def _reply(status: int, message: str) -> bytes:
    """An error reply; the message is also the reason phrase, which is all some clients show of a refused CONNECT."""
    phrase = message if message.isascii() and message.isprintable() and len(message) <= 300 else _REASONS[status]
    body = (message + "\n").encode("utf-8")
    head = (f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode("ascii") + body
