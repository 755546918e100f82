"""What a provider's base URL must look like: the one rule, cheap to import (no SDK, no
provider), so that start-up can refuse a malformed ``ANTHROPIC_BASE_URL`` before the
chat opens."""

from __future__ import annotations

from urllib.parse import urlsplit

# The environment names the user's endpoint for each provider; it beats every file.
BASE_URL_VARIABLES = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
# Where each provider's key is read from.
API_KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
# The vendors' own services (a host of the domain or under it): they need a real key, and
# the model table knows their models.
VENDOR_DOMAINS = {"anthropic": "anthropic.com", "openai": "openai.com"}
# Sent as the key to a custom endpoint when none is configured: local servers (llama.cpp,
# Ollama, vLLM...) ignore it, and the SDKs refuse to run without one.
PLACEHOLDER_KEY = "loom-local-no-key"


def is_vendor_url(base_url: str | None, vendor: str) -> bool:
    """Whether ``base_url`` is ``vendor``'s own service (a host of its domain or under it);
    no URL means the SDK's default, which is."""
    if not base_url:
        return True
    domain = VENDOR_DOMAINS[vendor]
    host = (urlsplit(base_url).hostname or "").lower()
    return host == domain or host.endswith("." + domain)


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
