"""``network = "allowlist"``: the session's domain proxy, started when a command first needs it.

A sandbox with the allow-list runs each command behind the relay (``relay.py``), which
hands every connection over an inherited channel to one :class:`DomainProxy` in Loom's
own process. The proxy is asyncio and serves on the loop the commands are started from;
it is started on the first command, not when the sandbox is opened (most sessions may
never use the network), and again should a later command come from another loop (each
``asyncio.run`` is one), since a proxy cannot serve a loop that has ended.

Off the loop there is nothing to serve connections, so a command started there gets no
relay: no network, the safe side.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Iterator

from .allowed_hosts import AllowedHosts
from .proxy import DEFAULT_PORTS, DomainProxy, RelayLaunch, Resolver


class AllowListGate:
    """The way out of one sandbox's commands: ``with gate.relay(on_refused) as relay: ...``."""

    def __init__(self, allowed: AllowedHosts, *, resolver: Resolver | None = None,
                 ports: Iterable[int] = DEFAULT_PORTS) -> None:
        self._allowed = allowed
        self._resolver = resolver
        self._ports = frozenset(ports)
        self._proxy: DomainProxy | None = None

    @property
    def proxy(self) -> DomainProxy | None:
        """The running proxy, or None before the first command (and after :meth:`close`)."""
        return self._proxy

    @contextlib.contextmanager
    def relay(self, on_refused: Callable[[str], None]) -> Iterator[RelayLaunch | None]:
        """One command's relay (None off the event loop: that command has no network).
        Hold it until the command has started; ``on_refused`` hears each host refused to it."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            yield None
            return
        proxy = self._proxy
        if proxy is None or proxy.loop is not loop:
            if proxy is not None:
                proxy.close()  # its loop has ended: nothing of it can run any more
            proxy = DomainProxy(self._allowed, ports=self._ports, resolver=self._resolver)
            proxy.serve_channels()
            self._proxy = proxy
        with proxy.relay_for_command(on_refused=on_refused) as relay:
            yield relay

    def close(self) -> None:
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            proxy.close()
