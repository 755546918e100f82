"""The providers Loom speaks to, and the model each uses when none is chosen.

The one place these names are written: the CLI's choices, the settings' validation and
the factory all read them here. Importing this module costs nothing at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

ProviderName = Literal["anthropic", "openai", "scripted"]
PROVIDERS: tuple[ProviderName, ...] = get_args(ProviderName)
DEFAULT_MODELS: Mapping[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-4o",
    "scripted": "scripted",
}

# ``[openai] wire_api``: which OpenAI API requests go over. "auto": the Responses API for
# OpenAI's own service, Chat Completions for any other base URL (most local servers
# speak only that).
WireApi = Literal["auto", "chat", "responses"]
WIRE_APIS: tuple[WireApi, ...] = get_args(WireApi)
# ``[openai] reasoning_effort``: how hard an OpenAI reasoning model thinks.
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
REASONING_EFFORTS: tuple[ReasoningEffort, ...] = get_args(ReasoningEffort)

# The environment variables that carry Loom's own settings and provider credentials
# (ANTHROPIC_API_KEY, OPENAI_BASE_URL, LOOM_DATA_DIR...). Programs Loom starts for
# others, such as MCP servers, do not inherit them unless their entry names them.
OWN_ENV_PREFIXES: tuple[str, ...] = ("ANTHROPIC_", "OPENAI_", "LOOM_")
