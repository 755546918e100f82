"""Which hosts a sandboxed command may reach through Loom's proxy: ``[sandbox] allowed_domains``.

An entry is ``example.com`` (that host only), ``*.example.com`` (its subdomains, not
itself) or an IP literal (that address only; a name never matches an address, nor a
wildcard an address). Names compare case-insensitively, without a trailing dot, in their
IDNA form, so ``Bücher.de.`` and ``xn--bcher-kva.de`` are one name. Entries are checked
when read: a malformed one is a one-line error naming it, never a silently wider list.

Requested hosts go through the same normalisation, and a name the system resolver would
read as an address (``2130706433``, ``0x7f.1``, ``127.1``) is refused outright: it could
only match an entry by looking like a name while meaning an address.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")
_MAX_NAME = 253
_SETTING = "[sandbox] allowed_domains"
_FORMS = " (write example.com, *.example.com or an IP address)"


class HostError(ValueError):
    """A requested host that is no valid host name or address (the message says why)."""


class AllowedDomainsError(ValueError):
    """An ``allowed_domains`` entry that cannot be read (one line, naming the entry)."""


@dataclass(frozen=True)
class Host:
    """A requested host, normalised: ``name`` is lower-case ASCII (IDNA) or a canonical address."""

    name: str
    address: IPAddress | None = None

    @property
    def is_address(self) -> bool:
        return self.address is not None

    def authority(self, port: int) -> str:
        """``name:port`` as a URL writes it (brackets around an IPv6 address)."""
        host = f"[{self.name}]" if isinstance(self.address, ipaddress.IPv6Address) else self.name
        return f"{host}:{port}"


def parse_host(text: str) -> Host:
    """The normalised form of ``text`` (``example.com``, ``[::1]``, ``1.2.3.4``); raises :class:`HostError`."""
    if text.startswith("[") and text.endswith("]"):
        address = _parse_address(text[1:-1])
        if not isinstance(address, ipaddress.IPv6Address):
            raise HostError(f"{_shown(text)} is not an IPv6 address")
        return Host(str(address), address)
    address = _parse_address(text)
    if address is not None:
        return Host(str(address), address)
    return Host(_normalise_name(text))


@dataclass(frozen=True)
class AllowedHosts:
    """The parsed allow-list; build it with :meth:`parse`."""

    names: frozenset[str] = frozenset()
    # ``.example.com`` for ``*.example.com``: a name ending in it is a subdomain.
    suffixes: tuple[str, ...] = ()
    addresses: frozenset[IPAddress] = frozenset()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowedHosts:
        names: set[str] = set()
        suffixes: set[str] = set()
        addresses: set[IPAddress] = set()
        for entry in entries:
            text = entry.strip()
            if text.startswith("*."):
                suffixes.add("." + _wildcard_base(entry, text[2:]))
                continue
            if not text or "*" in text or "/" in text:
                raise AllowedDomainsError(_bad_entry(entry))
            try:
                host = parse_host(text)
            except HostError as error:
                raise AllowedDomainsError(f"{_SETTING}: {error}{_FORMS}") from None
            if host.address is not None:
                addresses.add(host.address)
            else:
                names.add(host.name)
        return cls(frozenset(names), tuple(sorted(suffixes)), frozenset(addresses))

    def allows(self, host: Host) -> bool:
        if host.address is not None:
            return host.address in self.addresses
        return host.name in self.names or any(host.name.endswith(suffix) for suffix in self.suffixes)

    def __bool__(self) -> bool:
        return bool(self.names or self.suffixes or self.addresses)


def _parse_address(text: str) -> IPAddress | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        # A zone index names an interface of this machine.
        raise HostError(f"{_shown(text)} has a zone index; only plain addresses are accepted")
    return address


def _normalise_name(text: str) -> str:
    name = text.lower()
    if name.endswith("."):
        name = name[:-1]
    if ":" in name and name.rsplit(":", 1)[1].isdigit():
        raise HostError(f"{_shown(text)} has a port; name the host alone")
    if not name or not name.isprintable() or any(ch in name for ch in " %@:/\\"):
        raise HostError(f"{_shown(text)} is not a host name")
    try:
        ascii_name = name.encode("idna").decode("ascii").lower()
    except UnicodeError:
        kind = "host name" if name.isascii() else "international host name"
        raise HostError(f"{_shown(text)} is not a valid {kind}") from None
    labels = ascii_name.split(".")
    if len(ascii_name) > _MAX_NAME or not all(_LABEL.match(label) for label in labels):
        raise HostError(f"{_shown(text)} is not a host name")
    if labels[-1].isdigit() or _reads_as_address(ascii_name):
        # getaddrinfo would take it for an IPv4 address in a legacy form.
        raise HostError(f"{_shown(text)} reads as an IP address in a legacy form; use 1.2.3.4 form")
    return ascii_name


def _reads_as_address(name: str) -> bool:
    try:
        socket.inet_aton(name)
    except OSError:
        return False
    return True


def _wildcard_base(entry: str, base_text: str) -> str:
    if "*" in base_text:
        raise AllowedDomainsError(_bad_entry(entry))
    try:
        base = parse_host(base_text)
    except HostError as error:
        raise AllowedDomainsError(f"{_SETTING}: {_shown(entry)}: {error}{_FORMS}") from None
    if base.address is not None:
        raise AllowedDomainsError(f"{_SETTING}: {_shown(entry)}: a wildcard cannot cover IP addresses")
    if "." not in base.name:
        raise AllowedDomainsError(
            f"{_SETTING}: {_shown(entry)} covers a whole top-level domain; name the site (*.example.com)")
    return base.name


def _bad_entry(entry: str) -> str:
    text = entry.strip()
    if text == "*":
        return f'{_SETTING}: "*" would allow every host; set network = "on" for that instead'
    if "://" in text:
        return f"{_SETTING}: {_shown(entry)} is a URL; write the host name alone{_FORMS}"
    return f"{_SETTING}: {_shown(entry)} is not a host name{_FORMS}"


def _shown(text: str, limit: int = 80) -> str:
    """``text`` quoted for a message: control and non-ASCII characters escaped, long text cut."""
    shown = text.encode("ascii", "backslashreplace").decode("ascii")
    shown = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in shown)
    if len(shown) > limit:
        shown = shown[:limit] + "..."
    return f'"{shown}"'
