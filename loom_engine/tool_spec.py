"""ToolSpec: a tool as a provider sees it (name, description, JSON schema).

It sits below both the tools layer and the providers, so a provider can describe
tools to its API without importing the tools layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a provider sees it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
