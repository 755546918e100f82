"""Which server to ask for its context window, and the line that says what was found."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from loom_engine.providers.endpoints import API_KEY_VARIABLES, BASE_URL_VARIABLES

if TYPE_CHECKING:
    from loom_engine.providers.server_window import ServerWindows

    from .settings import Settings


def server_windows(provider_name: str, base_url: str | None, model: str,
                   setting: int | None) -> ServerWindows | None:
    """For a custom base URL (``base_url``, else the provider's environment variable),
    the server's own word on its window, asked now in a background thread (not when the
    ``context_window`` setting decides anyway); None for the official APIs."""
    from loom_engine.providers.server_window import ServerWindows, probe_target

    variable = BASE_URL_VARIABLES.get(provider_name)
    if variable is None:
        return None
    root = probe_target(base_url or os.environ.get(variable))
    if root is None:
        return None
    # The key the requests carry: a server started with one (vLLM --api-key) wants it here too.
    key = os.environ.get(API_KEY_VARIABLES[provider_name])
    headers = ({"x-api-key": key} if provider_name == "anthropic" else {"Authorization": f"Bearer {key}"}) \
        if key else {}
    windows = ServerWindows(root, headers=headers)
    if not setting:
        windows.ensure(model)
    return windows


def window_line(settings: Settings, provider_name: str) -> str:
    """`loom config`'s line: the window the default model gets, and where it comes from
    (asks a custom server, waiting for its answer)."""
    from loom_engine.providers.names import DEFAULT_MODELS
    from loom_engine.providers.server_window import PROBE_TIMEOUT_S, choose_window

    model = settings.model or DEFAULT_MODELS.get(provider_name, "")
    base_url = None
    if provider_name == "anthropic":
        base_url = settings.anthropic.base_url
    elif provider_name == "openai":
        base_url = settings.openai.base_url
    windows = server_windows(provider_name, base_url, model, settings.context_window)
    if windows is not None:
        windows.wait(model, PROBE_TIMEOUT_S + 1)
    fact = choose_window(model, settings.context_window, windows)
    return f"context window: {fact.tokens} tokens for {model or '(no model)'} ({fact.source})"
