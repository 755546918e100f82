"""What a provider's base URL must look like: the one rule, cheap to import (no SDK, no
provider), so that start-up can refuse a malformed ``ANTHROPIC_BASE_URL`` before the
chat opens."""

from __future__ import annotations

from urllib.parse import urlsplit

# The environment names the user's endpoint for each provider; it beats every file.
BASE_URL_VARIABLES = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


def base_url_problem(url: str, source: str) -> str | None:
    """Why ``url`` (from ``source``, named in the line) is not a usable http(s) URL, or None."""
    shape = f"invalid base URL {url!r} from {source}: it must look like http://host:port or https://host/path"
    try:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return shape
    except ValueError:  # "http://[::1": an unclosed IPv6 bracket
        return shape
    try:
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        return f"invalid base URL {url!r} from {source}: bad port"
    return None
