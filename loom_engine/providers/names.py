"""The providers Loom speaks to, and the model each uses when none is chosen.

The one place these names are written: the CLI's choices, the settings' validation and
the factory all read them here. Importing this module costs nothing at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

ProviderName = Literal["anthropic", "openai", "scripted"]
PROVIDERS: tuple[ProviderName, ...] = ("anthropic", "openai", "scripted")
DEFAULT_MODELS: Mapping[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-4o",
    "scripted": "scripted",
}
