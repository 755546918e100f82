"""allowed_domains: which entries are read how, and which requested hosts they let through."""

from __future__ import annotations

import ipaddress

import pytest

from loom_engine.sandbox.allowed_hosts import AllowedDomainsError, AllowedHosts, Host, HostError, parse_host

ALLOWED = AllowedHosts.parse(["example.com", "*.github.com", "Bücher.de", "10.0.0.5", "[2001:db8::1]", "pypi.org."])


@pytest.mark.parametrize("host", [
    "example.com", "EXAMPLE.COM", "example.com.",  # exact, any case, trailing dot
    "api.github.com", "x.y.GitHub.com.",  # subdomains at any depth
    "xn--bcher-kva.de", "XN--BCHER-KVA.DE", "bücher.de",  # IDNA: one name, either spelling
    "pypi.org", "10.0.0.5", "[2001:db8::1]", "2001:db8:0:0::1",
])
def test_listed_hosts_are_allowed(host: str) -> None:
    assert ALLOWED.allows(parse_host(host))


@pytest.mark.parametrize("host", [
    "www.example.com",  # an exact entry covers no subdomain
    "github.com",  # a wildcard covers only subdomains, not the name itself
    "evilgithub.com", "github.com.evil.net", "example.com.evil.net",  # label-aligned suffixes only
    "bucher.de", "10.0.0.6", "[2001:db8::2]",
    "::ffff:10.0.0.5",  # the same IPv4 address in IPv6 form is a different literal: refused
    "localhost", "127.0.0.1",
])
def test_other_hosts_are_not(host: str) -> None:
    assert not ALLOWED.allows(parse_host(host))


def test_a_name_never_matches_an_address_nor_an_address_a_name() -> None:
    by_name = AllowedHosts.parse(["localhost", "*.example.com"])
    assert not by_name.allows(parse_host("127.0.0.1"))
    assert not AllowedHosts.parse(["93.184.216.34"]).allows(parse_host("example.com"))


@pytest.mark.parametrize("entry", [" example.com ", "Example.Com.", "*.Example.com"])
def test_entries_are_normalised(entry: str) -> None:
    hosts = AllowedHosts.parse([entry])
    assert hosts.names == {"example.com"} or hosts.suffixes == (".example.com",)


@pytest.mark.parametrize(("entry", "said"), [
    ("*", 'would allow every host; set network = "on"'),
    ("*.com", "covers a whole top-level domain"),
    ("*.1.2.3.4", "a wildcard cannot cover IP addresses"),
    ("foo.*.com", "is not a host name"),
    ("https://example.com", "is a URL; write the host name alone"),
    ("example.com/path", "is not a host name"),
    ("example.com:8443", "has a port"),
    ("", "is not a host name"),
    ("exa mple.com", "is not a host name"),
    ("a..b", "is not a valid host name"),
    ("2130706433", "reads as an IP address"),  # what getaddrinfo would make of it: 127.0.0.1
    ("0x7f.1", "reads as an IP address"),
    ("fe80::1%eth0", "zone index"),
    ("x" * 64 + ".com", "is not a valid host name"),
])
def test_malformed_entries_are_one_line_errors_naming_the_setting(entry: str, said: str) -> None:
    with pytest.raises(AllowedDomainsError) as raised:
        AllowedHosts.parse(["example.com", entry])
    message = str(raised.value)
    assert message.startswith("[sandbox] allowed_domains: ")
    assert said in message
    assert "\n" not in message


def test_an_error_shows_control_characters_escaped() -> None:
    with pytest.raises(AllowedDomainsError) as raised:
        AllowedHosts.parse(["evil\x1b]0;x\x07.com"])
    assert "\x1b" not in str(raised.value) and "\\x1b" in str(raised.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("Example.COM.", Host("example.com")),
    ("[::1]", Host("::1", ipaddress.ip_address("::1"))),
    ("127.0.0.1", Host("127.0.0.1", ipaddress.ip_address("127.0.0.1"))),
    ("bücher.de", Host("xn--bcher-kva.de")),
])
def test_requested_hosts_are_normalised(text: str, expected: Host) -> None:
    assert parse_host(text) == expected


@pytest.mark.parametrize("text", ["127.1", "2130706433", "0177.0.0.1", "[127.0.0.1]", "a_b..c", "x@y.com", "a%2ecom",
                                  "1.2.3.4.5"])
def test_hosts_that_could_mean_something_else_are_refused(text: str) -> None:
    with pytest.raises(HostError):
        parse_host(text)


def test_an_empty_list_allows_nothing() -> None:
    empty = AllowedHosts.parse([])
    assert not empty
    assert not empty.allows(parse_host("example.com"))
