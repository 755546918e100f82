"""Per-run counters: LLM calls, tokens, cost, tool calls, retries, errors."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .usage import Usage


@dataclass
class ToolStats:
    calls: int = 0
    errors: int = 0
    total_ms: float = 0.0

    @property
    def success_rate(self) -> float:
        return 1.0 if self.calls == 0 else (self.calls - self.errors) / self.calls


@dataclass
class RunMetrics:
    llm_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    retries: int = 0
    compactions: int = 0
    compaction_tokens_saved: int = 0
    tools: dict[str, ToolStats] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)

    def record_llm_call(self, usage: Usage, cost: float) -> None:
        self.llm_calls += 1
        self.usage = self.usage + usage
        self.cost_usd += cost

    def record_tool(self, name: str, duration_ms: float, is_error: bool) -> None:
        stats = self.tools.setdefault(name, ToolStats())
        stats.calls += 1
        stats.total_ms += duration_ms
        if is_error:
            stats.errors += 1

    def merge_child(self, child: RunMetrics) -> None:
        """A sub-agent's usage and cost count in its parent's totals."""
        self.llm_calls += child.llm_calls
        self.usage = self.usage + child.usage
        self.cost_usd += child.cost_usd
        self.retries += child.retries
        for name, stats in child.tools.items():
            mine = self.tools.setdefault(name, ToolStats())
            mine.calls += stats.calls
            mine.errors += stats.errors
            mine.total_ms += stats.total_ms
        self.errors.update(child.errors)

    @property
    def tool_calls(self) -> int:
        return sum(s.calls for s in self.tools.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "llm_calls": self.llm_calls,
            "usage": self.usage.to_dict(),
            "cost_usd": round(self.cost_usd, 6),
            "retries": self.retries,
            "compactions": self.compactions,
            "tool_calls": self.tool_calls,
            "tools": {
                name: {"calls": s.calls, "errors": s.errors,
                       "success_rate": round(s.success_rate, 3),
                       "total_ms": round(s.total_ms, 1)}
                for name, s in self.tools.items()
            },
            "errors": dict(self.errors),
        }
