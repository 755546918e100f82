"""What a new user sees: the welcome on the very first start, and how to set up a provider
when none can be reached (no API key).

Only the names that really exist are given: the key and base-URL variables the providers
read, ``--provider`` / ``LOOM_PROVIDER`` and the ``provider`` and ``[openai] base_url``
settings of the user config file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from loom_engine.events import Error
from loom_engine.private_files import open_private, private_folder
from loom_engine.providers.endpoints import API_KEY_VARIABLES, BASE_URL_VARIABLES

# The variable each provider reads its key from.
KEY_VARIABLES: Mapping[str, str] = API_KEY_VARIABLES
OPENAI_BASE_URL = BASE_URL_VARIABLES["openai"]
# What Ollama serves by default: an example the user can paste and adjust.
LOCAL_URL_EXAMPLE = "http://localhost:11434/v1"
# Written to the data folder once the welcome was shown: later starts show one line.
WELCOME_MARKER = "welcomed"


@dataclass(frozen=True)
class MissingKey:
    """The provider in use could not start because its key variable is not set."""

    provider: str
    variable: str


def missing_key(error: BaseException, environ: Mapping[str, str]) -> MissingKey | None:
    """The missing key behind a failed agent start, or None for any other failure.

    The provider's own configuration error names its variable first; it counts only if
    that variable really is unset (a set but empty-looking key is another problem).
    """
    from loom_engine.providers.base import ProviderError  # loaded by now: the provider was being built

    cause = error.__cause__ or error
    if not isinstance(cause, ProviderError) or cause.kind != "config":
        return None
    text = str(cause)
    for provider, variable in KEY_VARIABLES.items():
        if text.startswith(variable) and not environ.get(variable):
            return MissingKey(provider, variable)
    return None


def setup_title(missing: MissingKey) -> str:
    return f"✗ No API key: {missing.variable} is not set, so no model can answer yet."


def setup_text(missing: MissingKey, config_file: Path) -> str:
    """The first-run screen: what to set, how to pick another provider, what still works.

    Short lines: it must read well at 60 columns.
    """
    config = _home_relative(config_file)
    local = ["a local OpenAI-compatible server", "(Ollama, vLLM, llama.cpp, LM Studio):",
             f"    export {OPENAI_BASE_URL}={LOCAL_URL_EXAMPLE}"]
    lines = [f"Set the key for {missing.provider}, then start loom again:",
             f"    export {missing.variable}=…", ""]
    if missing.provider == "openai":
        lines += ["Or point it at " + local[0], *local[1:], "", "Or use Anthropic:",
                  f"    export {KEY_VARIABLES['anthropic']}=…", "    loom --provider anthropic", ""]
    else:
        lines += ["Or use OpenAI:", f"    export {KEY_VARIABLES['openai']}=…", "    loom --provider openai",
                  "Or " + local[0], *local[1:], "    loom --provider openai", ""]
    lines += ["Pick the provider with --provider, LOOM_PROVIDER,",
              f"or provider = \"openai\" in {config}",
              "(base_url under [openai] there names a local server).", "",
              "The chat stays open: /help lists the commands,",
              "/model shows the model. Ctrl+D quits."]
    return "\n".join(lines)


def not_sent_line(agent_error: str) -> str:
    """Why a prompt stays in the input when no agent could start."""
    return f"✗ not sent: {agent_error} (see above) — your message stays in the prompt"


def unsent_line(error: Error) -> str:
    """Under the error line: the failed prompt was not kept, and where it went."""
    return f"↩ not sent: {_short_reason(error)} — your message is back in the prompt (Enter sends it again)"


def _short_reason(error: Error) -> str:
    reasons = {"auth": "the provider refused the API key", "permission": "the API key may not use this",
               "overloaded": "the provider is overloaded", "rate_limit": "the rate limit was reached",
               "connection": "no connection to the provider", "timeout": "the provider did not answer",
               "server": "the provider failed", "stream_broken": "the answer was cut off",
               "context_length": "the conversation is too long for the model (try /compact)",
               "not_found": "the model or endpoint was not found"}
    return reasons.get(error.kind, "the request failed")


def welcome_text(workspace: str, provider: str, model: str) -> str:
    """The first start's welcome: the three keys that matter, what answers, where help is."""
    using = " · ".join(f"{label}: {value}" for label, value in (("provider", provider), ("model", model)) if value)
    return "\n".join([
        f"Welcome to Loom · {workspace}",
        f"  {using or 'no provider yet'}",
        "  Enter        send (Shift+Enter or Ctrl+J: a new line)",
        "  Esc          interrupt the assistant",
        "  Shift+Tab    switch the permission mode",
        "  /help        the commands · Ctrl+D quits",
    ])


def first_start(data_dir: Path) -> bool:
    """True the first time Loom opens with this data folder; marks it as seen.

    A folder that cannot be written to counts as seen: the welcome is a nicety, and it
    must not come back on every start.
    """
    marker = data_dir / WELCOME_MARKER
    if marker.exists():
        return False
    try:
        private_folder(data_dir)
        open_private(marker).close()
    except OSError:
        return False
    return True


def _home_relative(path: Path) -> str:
    home = Path.home()
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)
