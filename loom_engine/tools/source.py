"""Tools that come and go during a session (an MCP server's), offered at turn boundaries.

The agent asks its :class:`ToolSource` for ``version`` before each request; when it
changed, the registry and the tools block are rebuilt once, so a request never sees a
tool list change in its middle, and an unchanged source keeps the block byte-identical
(the provider's prompt cache keeps hitting).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .base import Tool


class ToolSource(Protocol):
    @property
    def version(self) -> int:
        """Grows whenever ``tools()`` or ``sent_names()`` would answer differently."""
        ...

    def tools(self) -> Sequence[Tool]:
        """Every tool callable now, in a stable order."""
        ...

    async def settle(self) -> None:
        """Before a run's first request: wait (once, up to the source's own deadline)
        for tools still arriving, such as servers still connecting."""
        ...

    def sent_names(self) -> frozenset[str] | None:
        """The names whose schemas go in the tools block (None: all); the others stay
        callable once the model learned their schema (through ``tool_search``)."""
        ...
