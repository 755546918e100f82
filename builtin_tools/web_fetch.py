"""web_fetch: a web page as Markdown, read in windows.

HTML is converted with markdownify (scripts, styles and page chrome dropped); text,
JSON and XML come back as they are; anything else is refused with its type and size.
A redirect to another host is not followed: the model is told the new URL, and
fetching it is a new call that the permission rules see (they allow hosts, not URLs).
The HTTP libraries are imported on first use, so they cost nothing at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, Field

from loom_engine.permissions.targets import PermissionTarget, UrlFetch
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput

DEFAULT_LIMIT = 20_000
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
TIMEOUT_S = 30.0
USER_AGENT = "Loom (a terminal coding assistant)"

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript",
               "application/x-yaml", "application/yaml", "application/toml")
# Parts of a page that are never its content.
_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "footer", "form")


class WebFetchInput(BaseModel):
    url: str = Field(description="The http:// or https:// URL to fetch.")
    offset: int = Field(0, ge=0, description=(
        "Character of the converted page to start from, to read on after a cut."))
    limit: int = Field(DEFAULT_LIMIT, ge=1_000, le=100_000, description=(
        "How many characters of the converted page to return."))


@dataclass(frozen=True)
class Page:
    url: str  # after same-host redirects
    status: int
    content_type: str
    body: bytes
    truncated: bool  # the body passed MAX_BYTES and the rest was not read
    charset: str | None


class FetchError(Exception):
    """A failure the model can read: bad URL, network error, redirect elsewhere."""


class WebFetchTool(BaseTool[WebFetchInput]):
    name = "web_fetch"
    description = (
        "Fetch a web page over http(s) and return it as Markdown (HTML converted; text, JSON "
        "and XML as they are). Long pages come in windows of `limit` characters: call again "
        "with `offset` to read on. A redirect to another host is not followed; the result "
        "names the new URL. Use it for documentation, issues or references the user points "
        "to; each new host needs the user's permission."
    )
    input_model = WebFetchInput
    is_concurrency_safe = True
    is_read_only = True
    guidance = (
        "web_fetch reads a web page as Markdown: documentation, an issue or a changelog "
        "the user points to or that the task needs. Long pages come in windows; read on "
        "with offset only when the part you need is further down. Each new host asks the "
        "user, so fetch only what helps, and never put secrets or private code in a URL.")

    def permission_target(self, args: WebFetchInput, ctx: ToolContext) -> PermissionTarget | None:
        return UrlFetch(args.url.strip())

    async def preview(self, args: WebFetchInput, ctx: ToolContext) -> dict[str, Any] | None:
        return {"kind": "url", "url": args.url.strip()}

    async def run(self, args: WebFetchInput, ctx: ToolContext) -> ToolOutput:
        url = args.url.strip()
        try:
            _check_url(url)
            page = await fetch(url)
        except FetchError as error:
            return ToolOutput(str(error), is_error=True)
        kind = page.content_type or "unknown type"
        if page.status >= 400:
            snippet = _one_line(_decode(page)[:300])
            return ToolOutput(f"{page.url} answered {page.status} ({kind})" + (f": {snippet}" if snippet else ""),
                              is_error=True)
        if _is_html(page):
            text = html_to_markdown(_decode(page), page.url)
        elif page.content_type.startswith(_TEXT_TYPES) or (not page.content_type and _looks_textual(page.body)):
            text = _decode(page)
        else:
            return ToolOutput(f"{page.url} is not text ({kind}, {len(page.body):,} bytes"
                              f"{' or more' if page.truncated else ''}); web_fetch reads pages and text only.",
                              is_error=True)
        return ToolOutput(_window(page, kind, text, args.offset, args.limit))


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as error:
        raise FetchError(f"Invalid URL {url!r}: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise FetchError(f"Invalid URL {url!r}: only http:// and https:// URLs can be fetched.")
    if not host:
        raise FetchError(f"Invalid URL {url!r}: it names no host.")


def _same_site(a: str, b: str) -> bool:
    """An http -> https upgrade on the same host counts as the same site."""
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.hostname or "").lower() == (pb.hostname or "").lower() and (
        pa.port == pb.port or (pa.scheme, pb.scheme) == ("http", "https"))


async def fetch(url: str) -> Page:
    import httpx

    headers = {"User-Agent": USER_AGENT, "Accept": "text/html, text/markdown, text/plain, */*;q=0.5"}
    try:
        async with httpx.AsyncClient(follow_redirects=False, timeout=TIMEOUT_S, headers=headers) as client:
            for _ in range(MAX_REDIRECTS + 1):
                async with client.stream("GET", url) as response:
                    if response.is_redirect and "location" in response.headers:
                        target = urljoin(url, response.headers["location"])
                        if not _same_site(url, target):
                            raise FetchError(
                                f"{url} redirects to another host: {target}. Call web_fetch with that URL "
                                f"to follow it.")
                        url = target
                        continue
                    body, truncated = await _read_capped(response)
                    content_type = response.headers.get("content-type", "")
                    return Page(str(response.url), response.status_code,
                                content_type.split(";")[0].strip().lower(), body, truncated,
                                response.charset_encoding)
    except httpx.TimeoutException:
        raise FetchError(f"Fetching {url} timed out after {TIMEOUT_S:g} s.") from None
    except httpx.HTTPError as error:
        raise FetchError(f"Fetching {url} failed: {_one_line(str(error)) or type(error).__name__}.") from None
    raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects.")


async def _read_capped(response: Any) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BYTES:
            return b"".join(chunks)[:MAX_BYTES], True
    return b"".join(chunks), False


def _is_html(page: Page) -> bool:
    if page.content_type in ("text/html", "application/xhtml+xml"):
        return True
    head = page.body[:512].lstrip().lower()
    return not page.content_type and head.startswith((b"<!doctype html", b"<html"))


def _looks_textual(body: bytes) -> bool:
    return b"\0" not in body[:8192]


def _decode(page: Page) -> str:
    for encoding in (page.charset, "utf-8"):
        if encoding:
            try:
                return page.body.decode(encoding, "replace")
            except LookupError:
                continue
    return page.body.decode("utf-8", "replace")


def html_to_markdown(html: str, base_url: str = "") -> str:
    """The readable content of an HTML page as Markdown: the <main> or <article> when
    there is one, links made absolute, runs of blank lines folded."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(list(_DROPPED_TAGS)):
        tag.decompose()
    if base_url:
        for link in soup.find_all("a", href=True):
            link["href"] = urljoin(base_url, str(link["href"]))
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    root = soup.find("main") or soup.find("article") or soup.body or soup
    text = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"]).convert_soup(root)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if title and not text.startswith("# "):
        text = f"# {title}\n\n{text}"
    return text


def _window(page: Page, kind: str, text: str, offset: int, limit: int) -> str:
    total = len(text)
    header = f"{page.url} · {page.status} · {kind} · {total:,} characters"
    if page.truncated:
        header += f" (only the first {MAX_BYTES // (1024 * 1024)} MB were read)"
    if offset >= total and total:
        return f"{header}\n\nThe offset {offset:,} is past the end ({total:,} characters)."
    part = text[offset:offset + limit]
    lines = [header]
    if offset:
        lines.append(f"[from character {offset:,}]")
    lines += ["", part or "(empty page)"]
    rest = total - offset - len(part)
    if rest > 0:
        lines += ["", f"[{rest:,} more characters; call web_fetch again with offset={offset + len(part)} "
                      f"to read on.]"]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())
