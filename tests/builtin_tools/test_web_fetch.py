"""web_fetch against a local web server: conversion, windows, redirects, errors, limits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from builtin_tools import default_tools
from builtin_tools.web_fetch import MAX_BYTES, WebFetchInput, WebFetchTool, html_to_markdown
from loom_engine.permissions.targets import UrlFetch
from tests.doubles.fake_web import SLOW_PATH, HeldRequests, local_site

PAGE = """<!doctype html>
<html><head><title>Widget API</title><style>body { color: red }</style>
<script>var tracking = "do not show";</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<main>
<h1>Widget API</h1>
<p>Call <code>make_widget(size)</code> to build one. See <a href="/docs/sizes">sizes</a>.</p>
<ul><li>small</li><li>large</li></ul>
<pre><code>widget = make_widget(3)
</code></pre>
<img src="/logo.png" alt="logo">
</main>
<footer>Copyright nobody</footer>
</body></html>
"""


@pytest.fixture
def site() -> Iterator[str]:
    html = {"Content-Type": "text/html; charset=utf-8"}
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {
        "/page": (200, html, PAGE.encode()),
        "/notes.txt": (200, {"Content-Type": "text/plain; charset=latin-1"}, "café notes\n".encode("latin-1")),
        "/data.json": (200, {"Content-Type": "application/json"}, b'{"answer": 42}'),
        "/long.txt": (200, {"Content-Type": "text/plain"}, ("0123456789" * 500).encode()),
        "/logo.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + b"\0" * 100),
        "/moved": (301, {"Location": "/page"}, b""),
        "/loop": (302, {"Location": "/loop"}, b""),
        "/huge": (200, {"Content-Type": "text/plain"}, b"x" * (MAX_BYTES + 10)),
    }
    with local_site(routes) as base:
        port = base.rsplit(":", 1)[1]
        routes["/elsewhere"] = (302, {"Location": f"http://localhost:{port}/page"}, b"")
        yield base


TOOL = WebFetchTool()


async def test_html_becomes_markdown_without_page_chrome(site, ctx, call_tool):
    out = await call_tool(TOOL, ctx, url=f"{site}/page")
    assert not out.is_error
    header, _, body = out.content.partition("\n\n")
    assert header.startswith(f"{site}/page · 200 · text/html · ")
    assert body.startswith("# Widget API")
    assert "`make_widget(size)`" in body
    assert f"[sizes]({site}/docs/sizes)" in body  # links made absolute
    assert "- small\n- large" in body
    assert "widget = make_widget(3)" in body
    for chrome in ("tracking", "color: red", "Copyright", "About", "logo.png"):
        assert chrome not in body


async def test_text_and_json_come_back_as_they_are(site, ctx, call_tool):
    notes = await call_tool(TOOL, ctx, url=f"{site}/notes.txt")
    assert notes.content.endswith("\n\ncafé notes\n")  # decoded with the declared charset
    data = await call_tool(TOOL, ctx, url=f"{site}/data.json")
    assert data.content.endswith('\n\n{"answer": 42}')


async def test_long_pages_come_in_windows(site, ctx, call_tool):
    first = await call_tool(TOOL, ctx, url=f"{site}/long.txt", limit=1000)
    assert "· 5,000 characters" in first.content
    assert first.content.endswith("[4,000 more characters; call web_fetch again with offset=1000 to read on.]")
    last = await call_tool(TOOL, ctx, url=f"{site}/long.txt", offset=4500, limit=1000)
    assert "[from character 4,500]" in last.content and "more characters" not in last.content
    assert last.content.endswith("0123456789" * 50)
    past = await call_tool(TOOL, ctx, url=f"{site}/long.txt", offset=9000)
    assert "past the end" in past.content


async def test_same_host_redirects_are_followed_and_other_hosts_are_named(site, ctx, call_tool):
    moved = await call_tool(TOOL, ctx, url=f"{site}/moved")
    assert not moved.is_error and moved.content.startswith(f"{site}/page · 200")
    port = site.rsplit(":", 1)[1]
    elsewhere = await call_tool(TOOL, ctx, url=f"{site}/elsewhere")
    assert elsewhere.is_error
    assert elsewhere.content == (f"{site}/elsewhere redirects to another host: http://localhost:{port}/page. "
                                 f"Call web_fetch with that URL to follow it.")
    loop = await call_tool(TOOL, ctx, url=f"{site}/loop")
    assert loop.is_error and "more than 5 redirects" in loop.content


@pytest.mark.parametrize(("path", "message"), [
    ("/missing", "answered 404 (text/plain): no such page"),
    ("/logo.png", "is not text (image/png, 108 bytes); web_fetch reads pages and text only."),
])
async def test_http_errors_and_binary_content_are_clear_errors(site, ctx, call_tool, path, message):
    out = await call_tool(TOOL, ctx, url=f"{site}{path}")
    assert out.is_error and out.content == f"{site}{path} {message}"


@pytest.mark.parametrize(("url", "message"), [
    ("ftp://example.com/x", "only http:// and https:// URLs can be fetched"),
    ("file:///etc/passwd", "only http:// and https:// URLs can be fetched"),
    ("http://", "it names no host"),
    ("http://[::1", "Invalid URL"),
])
async def test_bad_urls_are_refused_before_any_request(ctx, call_tool, url, message):
    out = await call_tool(TOOL, ctx, url=url)
    assert out.is_error and message in out.content and "\n" not in out.content


async def test_unreachable_host_is_a_one_line_error(ctx, call_tool, unused_tcp_port):
    out = await call_tool(TOOL, ctx, url=f"http://127.0.0.1:{unused_tcp_port}/")
    assert out.is_error and out.content.startswith(f"Fetching http://127.0.0.1:{unused_tcp_port}/ failed")
    assert "\n" not in out.content


async def test_downloads_stop_at_the_size_cap(site, ctx, call_tool):
    out = await call_tool(TOOL, ctx, url=f"{site}/huge", limit=1000)
    assert "(only the first 5 MB were read)" in out.content.splitlines()[0]
    assert f"· {MAX_BYTES:,} characters" in out.content.splitlines()[0]


async def test_a_cancelled_call_stops_at_once(ctx):
    held = HeldRequests()
    with local_site({}, held) as base:
        task = asyncio.ensure_future(TOOL.run(WebFetchInput(url=f"{base}{SLOW_PATH}"), ctx))
        assert await asyncio.to_thread(held.arrived.wait, 30), "the request never reached the server"
        task.cancel()
        # The server holds its answer until the site closes: the call can only end here by
        # stopping at the cancel, not by reading the answer. The wait is a bound, not a timing.
        done, _ = await asyncio.wait({task}, timeout=30)
        assert task in done and task.cancelled()
        assert not held.release.is_set()


def test_the_permission_target_is_the_url_and_the_preview_shows_it(ctx):
    args = WebFetchInput(url=" https://docs.python.org/3/ ")
    assert TOOL.permission_target(args, ctx) == UrlFetch("https://docs.python.org/3/")


def test_contract():
    assert TOOL.is_read_only and TOOL.is_concurrency_safe
    assert list(WebFetchInput.model_json_schema()["properties"]) == ["url", "offset", "limit"]
    assert "web_fetch" in [t.name for t in default_tools()]


def test_markdown_prefers_main_content_and_keeps_the_title():
    text = html_to_markdown("<html><head><title>T</title></head><body><p>Intro</p>"
                            "<article><h2>Body</h2><p>Text</p></article></body></html>")
    assert text == "# T\n\n## Body\n\nText"
