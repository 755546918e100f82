"""Fetching URLs: rules by host, every mode asks but bypass, what "always allow" saves."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_engine.permissions.rules import parse_rule
from loom_engine.permissions.targets import UrlFetch
from tests.engine.permissions.conftest import Env


def fetch(pm, url: str):  # type: ignore[no-untyped-def]
    return pm.check("web_fetch", UrlFetch(url), is_read_only=True)


def test_domain_rules_parse_and_match_hosts() -> None:
    exact = parse_rule("web_fetch(domain:Docs.Python.org)")
    assert exact.domain == "docs.python.org"
    assert exact.matches_host("docs.python.org")
    assert not exact.matches_host("python.org") and not exact.matches_host("evil-docs.python.org.x")
    wild = parse_rule("web_fetch(domain:*.python.org)")
    assert wild.matches_host("docs.python.org") and wild.matches_host("a.b.python.org")
    assert not wild.matches_host("python.org") and not wild.matches_host("evilpython.org")
    assert parse_rule("web_fetch").matches_host("anything.example")


@pytest.mark.parametrize("text", ["web_fetch(https://x.org/)", "web_fetch(domain:)", "web_fetch(domain:a b)",
                                  "web_fetch(host:x.org)", "web_fetch(domain:x.org/path)"])
def test_bad_domain_rules_say_how_to_write_them(text: str) -> None:
    with pytest.raises(ValueError, match=r"write web_fetch\(domain:example.com\)"):
        parse_rule(text)


@pytest.mark.parametrize("mode", ["default", "accept-edits", "plan"])
def test_every_mode_but_bypass_asks_and_offers_the_host_rule(env: Env, mode: str) -> None:
    decision = fetch(env.manager(mode), "https://Docs.Python.org:443/3/library/os.html?q=1")
    assert decision.behavior == "ask"
    assert decision.reason == "fetching from docs.python.org needs approval"
    assert decision.suggested_rules == ("web_fetch(domain:docs.python.org)",)
    assert decision.hint == "--allow 'web_fetch(domain:docs.python.org)'"


def test_bypass_allows_but_deny_rules_still_hold(env: Env) -> None:
    assert fetch(env.manager("bypass"), "https://example.com/").behavior == "allow"
    denied = fetch(env.manager("bypass", deny=("web_fetch(domain:*.internal)",)), "http://db.internal/")
    assert denied.behavior == "deny" and "web_fetch(domain:*.internal)" in denied.reason


def test_deny_beats_ask_beats_allow(env: Env) -> None:
    pm = env.manager(allow=("web_fetch",), ask=("web_fetch(domain:*.corp.example)",),
                     deny=("web_fetch(domain:secret.corp.example)",))
    assert fetch(pm, "https://github.com/").behavior == "allow"
    assert fetch(pm, "https://wiki.corp.example/").behavior == "ask"
    assert fetch(pm, "https://secret.corp.example/").behavior == "deny"


def test_an_always_allow_answer_covers_the_host_from_then_on(env: Env) -> None:
    pm = env.manager()
    first = fetch(pm, "https://docs.python.org/3/")
    pm.allow_for_session(first.suggested_rules)
    assert fetch(pm, "https://docs.python.org/3/library/").behavior == "allow"
    assert fetch(pm, "https://pypi.org/").behavior == "ask"


def test_a_url_without_a_host_asks_without_a_rule(env: Env) -> None:
    decision = fetch(env.manager(allow=("web_fetch(domain:x.org)",)), "mailto:someone")
    assert decision.behavior == "ask" and decision.suggested_rules == ()


@pytest.mark.parametrize(("url", "rule"), [
    ("http://bücher.de/katalog", "web_fetch(domain:xn--bcher-kva.de)"),
    ("http://[::1]:8080/", "web_fetch(domain:::1)"),
    ("http://my_host.local/", "web_fetch(domain:my_host.local)"),
    ("http://EXAMPLE.com./", "web_fetch(domain:example.com)"),
    ("http://user:secret@host.com/", "web_fetch(domain:host.com)"),
])
def test_every_suggested_rule_reads_back_and_allows_the_url(env: Env, url: str, rule: str) -> None:
    pm = env.manager()
    decision = fetch(pm, url)
    assert decision.suggested_rules == (rule,)
    parse_rule(rule)
    pm.allow_for_session(decision.suggested_rules)
    assert fetch(pm, url).behavior == "allow"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(url=st.one_of(
    st.text(max_size=40),
    st.builds(lambda host, rest: f"https://{host}/{rest}", st.text(min_size=1, max_size=20), st.text(max_size=10))))
def test_any_url_gets_an_answer_whose_suggestions_parse(env: Env, url: str) -> None:
    decision = fetch(env.manager(), url)
    assert decision.behavior in ("ask", "deny", "allow") and "\n" not in decision.reason
    for rule in decision.suggested_rules:
        parse_rule(rule)
