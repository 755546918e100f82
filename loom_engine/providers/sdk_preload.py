"""Start importing a provider's SDK in a background thread, before it is needed.

`import anthropic` takes most of a second (thousands of modules). Done at the first
request it would freeze whoever waits on that loop; started early in a thread, it
overlaps with everything else start-up does. Only the standard library is imported
here, so starting the thread costs nothing.

A second import of the same module (the provider's own, when it builds its client)
waits on Python's per-module import lock until this one is done, then returns the
finished module.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping, Sequence

# What the HTTP transport loads at its first connection (anyio's sockets and streams).
_FIRST_CONNECTION = ("anyio._backends._asyncio", "anyio._core._sockets", "anyio._core._streams",
                     "anyio.streams.stapled", "anyio.streams.memory")
# The SDK each provider uses, and what its first request loads lazily besides, so that
# none of it is imported on the event loop: the Anthropic SDK also loads the OpenTelemetry
# propagators (read from the installed packages' entry points) for its first request.
# A module that is not installed is skipped.
SDK_MODULES: dict[str, tuple[str, ...]] = {
    "anthropic": ("anthropic", "opentelemetry.propagate", *_FIRST_CONNECTION),
    "openai": ("openai", *_FIRST_CONNECTION),
}


def import_sdk(provider: str) -> None:
    """Import ``provider``'s SDK now (in the calling thread); nothing for other providers."""
    for name in SDK_MODULES.get(provider, ()):
        try:
            importlib.import_module(name)
        except Exception:  # the provider's own import reports a broken install
            continue


def start_sdk_import(provider: str) -> threading.Thread | None:
    """A daemon thread importing ``provider``'s SDK; None when it has none."""
    if provider not in SDK_MODULES:
        return None
    thread = threading.Thread(target=import_sdk, args=(provider,), name=f"import-{provider}", daemon=True)
    thread.start()
    return thread


def likely_provider(args: Sequence[str], environ: Mapping[str, str] | None = None) -> str:
    """The provider a command line will most likely use, from the flag and the
    environment alone (no settings file is read: this runs before anything is loaded).

    A wrong guess only costs the time of an unused import; the provider the settings
    choose is imported when the agent is built, as always."""
    env = os.environ if environ is None else environ
    for index, arg in enumerate(args):
        if arg == "--provider" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--provider="):
            return arg.partition("=")[2]
    if env.get("LOOM_PROVIDER"):
        return env["LOOM_PROVIDER"]
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        return "openai"
    return "anthropic"
