"""Build a provider by name, reading keys and base URLs from the environment.

Nothing here imports a vendor SDK: the providers load theirs in ``prepare()`` (from a
worker thread, see :mod:`.sdk_preload`) or, failing that, on the first request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .base import Provider, ProviderError, StreamTimeouts
from .endpoints import PLACEHOLDER_KEY, base_url_problem
from .names import PROVIDERS, ReasoningEffort, WireApi
from .scripted import ScriptSource

# Where the CLI points ``--provider scripted`` when no script is passed explicitly.
SCRIPT_ENV = "LOOM_SCRIPT"


def check_base_url(url: str, source: str) -> str:
    """``url`` if it is a usable http(s) URL; a one-line config error naming ``source`` otherwise."""
    problem = base_url_problem(url, source)
    if problem:
        raise ProviderError("config", problem)
    return url.strip()


def create_provider(name: str, *, api_key: str | None = None, base_url: str | None = None,
                    script: ScriptSource | None = None, timeout: float | None = None,
                    stream_timeouts: StreamTimeouts | None = None,
                    env: Mapping[str, str] | None = None, wire_api: WireApi = "auto",
                    reasoning_effort: ReasoningEffort | None = None) -> Provider:
    """A ready provider; ``ProviderError(kind="config")`` with a one-line reason otherwise.

    ``stream_timeouts`` says when a silent stream counts as stalled (and is retried);
    ``wire_api`` and ``reasoning_effort`` are OpenAI's (``[openai]`` settings)."""
    environ = os.environ if env is None else env
    key = (name or "").strip().lower()
    if key == "anthropic":
        from .anthropic_provider import (
            API_KEY_ENV,
            BASE_URL_ENV,
            DEFAULT_BASE_URL,
            AnthropicProvider,
            is_official_anthropic,
        )

        url = _base_url(base_url, environ, BASE_URL_ENV)
        secret = api_key or environ.get(API_KEY_ENV)
        if not secret:
            # A custom endpoint (a local server, a proxy) may need no key, as for OpenAI.
            if is_official_anthropic(url):
                raise ProviderError("config", f"{API_KEY_ENV} is not set; export it (keys are read from the "
                                              f"environment only), set {BASE_URL_ENV} to a compatible server, "
                                              "or choose another provider with --provider or LOOM_PROVIDER")
            secret = PLACEHOLDER_KEY
        return AnthropicProvider(api_key=secret, base_url=url or DEFAULT_BASE_URL, timeout=timeout,
                                 stream_timeouts=stream_timeouts)
    if key == "openai":
        from .openai_provider import (
            API_KEY_ENV,
            BASE_URL_ENV,
            DEFAULT_BASE_URL,
            OpenAIProvider,
            is_official_openai,
        )

        url = _base_url(base_url, environ, BASE_URL_ENV)
        secret = api_key or environ.get(API_KEY_ENV)
        if not secret:
            if is_official_openai(url):
                raise ProviderError("config", f"{API_KEY_ENV} is not set; export it, or set {BASE_URL_ENV} "
                                              "to a local OpenAI-compatible server (Ollama, vLLM, llama.cpp, "
                                              "LM Studio)")
            secret = PLACEHOLDER_KEY
        return OpenAIProvider(api_key=secret, base_url=url or DEFAULT_BASE_URL, timeout=timeout,
                              stream_timeouts=stream_timeouts, wire_api=wire_api,
                              reasoning_effort=reasoning_effort)
    if key == "scripted":
        from .scripted import ScriptedProvider

        source = script if script is not None else environ.get(SCRIPT_ENV)
        if source is None or source == "":
            raise ProviderError("config", f"the scripted provider needs a script: a JSON file of turns "
                                          f"(set {SCRIPT_ENV}=path/to/script.json)")
        return ScriptedProvider(source)
    raise ProviderError("config", f"unknown provider {name!r} (choose {', '.join(PROVIDERS)})")


def _base_url(explicit: str | None, environ: Mapping[str, str], variable: str) -> str | None:
    if explicit:
        return check_base_url(explicit, "the base_url setting")
    from_env = environ.get(variable)
    if from_env:
        return check_base_url(from_env, variable)
    return None
