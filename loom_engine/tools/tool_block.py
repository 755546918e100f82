"""An agent's tools: the ones it can call and the tools block sent with each request.

The tools given come first, in their order, then the tool source's (sorted by the
source); a configuration that names its tools keeps only those. Tools the source
defers are callable but left out of the block. The block changes only when the
source's version does, and only when asked (at a turn boundary), so the provider's
prompt cache keeps hitting between requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..tool_spec import ToolSpec
from .base import Tool, tool_spec
from .registry import ToolRegistry
from .source import ToolSource


class ToolBlock:
    def __init__(self, tools: Sequence[Tool[Any]], source: ToolSource | None, names: Sequence[str] | None) -> None:
        self._tools = tuple(tools)
        self._source = source
        self._names = names
        self._version = source.version if source is not None else 0
        self.registry, self.specs = self._build()

    def refresh(self) -> bool:
        """Rebuild if the tool source changed since the last build; whether it did."""
        source = self._source
        if source is None or source.version == self._version:
            return False
        self._version = source.version
        self.registry, self.specs = self._build()
        return True

    def _build(self) -> tuple[ToolRegistry, tuple[ToolSpec, ...]]:
        source = self._source
        extra = tuple(source.tools()) if source is not None else ()
        every = ToolRegistry((*self._tools, *extra))
        registry = every if self._names is None else every.restricted(self._names)
        sent = source.sent_names() if source is not None else None
        deferred = {t.name for t in extra} - (sent if sent is not None else {t.name for t in extra})
        return registry, tuple(tool_spec(t) for t in registry if t.name not in deferred)
