"""The model client: one agent's requests to its model, and what they cost.

It builds each request from the transcript (the system prompt and tools block are
fixed for the session, so the provider's prompt cache keeps hitting), streams it with
retries, prices the usage and tracks how full the context window is.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .config import AgentConfig
from .events import UsageUpdated
from .execution import CancelToken
from .messages import Message
from .providers.base import Provider, ProviderEvent, ProviderRequest
from .tool_spec import ToolSpec
from .usage import Usage
from .usage_wait import UsageLimitWaiter

if TYPE_CHECKING:  # loaded on first use: they are not needed to start
    from .context.tokens import ContextTracker, TokenCounter
    from .metrics import RunMetrics
    from .providers.breaker import CircuitBreaker
    from .providers.retry import RetryNotice, RetryPolicy
    from .providers.server_window import ServerWindows, WindowFact

# The least ``max_tokens`` a request asks for, however full the window looks.
_MIN_OUTPUT_TOKENS = 1024


class ModelClient:
    def __init__(self, provider: Provider, config: AgentConfig, *, system: str,
                 tools: Sequence[ToolSpec], retry_policy: RetryPolicy | None = None,
                 server_windows: ServerWindows | None = None,
                 breaker: CircuitBreaker | None = None,
                 usage_limits: UsageLimitWaiter | None = None,
                 cache_key: Callable[[], str | None] | None = None) -> None:
        self.provider = provider
        # The session's id (asked at each request: /clear starts another session).
        self._cache_key = cache_key
        self.config = config
        self.system = system
        self.tools = tuple(tools)
        self.retry_policy = retry_policy
        # What a custom server says its window is (probed, or named by an overflow error).
        self.server_windows = server_windows
        if server_windows is not None and not config.context_window:
            server_windows.ensure(config.model)  # a sub-agent's own model is asked about too
        # The provider endpoint's breaker (shared with the agents using the same endpoint).
        self.breaker = breaker
        # Whether (and how long) a request that hit a usage limit waits for its reset.
        self.usage_limits = usage_limits or UsageLimitWaiter()
        self._tracker = self._make_tracker()

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def counter(self) -> TokenCounter:
        return self._tracker.counter

    def set_model(self, model: str) -> None:
        self.config = replace(self.config, model=model)
        self.forget_usage()
        if self.server_windows is not None and not self.config.context_window:
            self.server_windows.ensure(model)

    def set_tools(self, tools: Sequence[ToolSpec]) -> None:
        """A new tools block from the next request on (MCP tools joined or left; called
        only at a turn boundary, so a request never changes mid-turn)."""
        self.tools = tuple(tools)
        tracker = self._tracker
        tracker.fixed_tokens = tracker.counter.count_text(self.system) + tracker.counter.count_tools(self.tools)

    def forget_usage(self) -> None:
        """Start counting the context afresh (a cleared conversation, a new model)."""
        self._tracker = self._make_tracker()

    def build_request(self, messages: Sequence[Message]) -> ProviderRequest:
        return ProviderRequest(model=self.config.model, system=self.system, messages=tuple(messages),
                               tools=self.tools, max_tokens=self.output_budget(messages),
                               thinking_budget=self.config.thinking_budget,
                               cache_key=self._cache_key() if self._cache_key is not None else None)

    def output_budget(self, messages: Sequence[Message]) -> int:
        """The request's ``max_tokens``: the setting, lowered to the room the window leaves
        after the prompt. A server with a small window (a local model's 8k) refuses a request
        whose prompt plus ``max_tokens`` exceeds it (vLLM, Anthropic) or cuts the answer at
        the window (llama.cpp). The prompt is an estimate, so a tenth is kept spare; below
        the floor the request goes anyway and an overflow error starts a compaction."""
        wanted = self.config.max_tokens
        room = self.context_window - self._tracker.tokens_in_use(messages) * 11 // 10
        return min(wanted, max(room, _MIN_OUTPUT_TOKENS))

    def stream(self, request: ProviderRequest, cancel: CancelToken
               ) -> AsyncIterator[ProviderEvent | RetryNotice]:
        from .providers.retry import RetryPolicy, stream_with_retries

        self._tracker.before_request(request.messages)
        return self._learning_window(
            stream_with_retries(self.provider, request, self.retry_policy or RetryPolicy(), cancel,
                                breaker=self.breaker))

    async def _learning_window(self, events: AsyncIterator[ProviderEvent | RetryNotice]
                               ) -> AsyncIterator[ProviderEvent | RetryNotice]:
        """``events``, learning the window a context-overflow error names (llama.cpp's
        ``n_ctx``): the next threshold check and the status bar use it."""
        from .providers.base import ProviderError

        try:
            async for item in events:
                yield item
        except ProviderError as error:
            if error.kind == "context_length" and error.context_window:
                if self.server_windows is None:
                    from .providers.server_window import ServerWindows

                    self.server_windows = ServerWindows(None)
                self.server_windows.learn(self.config.model, error.context_window,
                                          "the server's context-overflow error")
            raise
        finally:
            if isinstance(events, AsyncGenerator):  # close the HTTP stream now, not at collection
                await events.aclose()

    def cost_of(self, usage: Usage) -> float:
        from .providers.models import cost_usd

        return cost_usd(self.config.model, usage)

    def observe_usage(self, usage: Usage) -> None:
        self._tracker.observe(usage)

    def record(self, usage: Usage, metrics: RunMetrics, messages: Sequence[Message], *, measured: bool,
               stamp: Mapping[str, Any]) -> UsageUpdated:
        """Price ``usage`` and count it in ``metrics``; the event that tells. ``measured``:
        the provider reported it, so the context tracker learns from it (an estimate is
        only counted); ``messages``: the conversation, for how full the window is now."""
        cost = self.cost_of(usage)
        metrics.record_llm_call(usage, cost)
        if measured:
            self.observe_usage(usage)
        used, window = self.context_usage(messages)
        return UsageUpdated(usage=usage, total=metrics.usage, cost_usd=cost, total_cost_usd=metrics.cost_usd,
                            context_tokens=used, context_window=window, **stamp)

    def after_compaction(self) -> None:
        self._tracker.reset_after_compaction()

    def context_usage(self, messages: Sequence[Message]) -> tuple[int, int]:
        """(tokens the next request would use, the model's context window)."""
        return self._tracker.tokens_in_use(messages), self.context_window

    @property
    def context_window(self) -> int:
        return self.window.tokens

    @property
    def window(self) -> WindowFact:
        """The context window in use and where it came from (the setting wins)."""
        from .providers.server_window import choose_window

        return choose_window(self.config.model, self.config.context_window, self.server_windows)

    async def aclose(self) -> None:
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()

    def _make_tracker(self) -> ContextTracker:
        from .context.tokens import ContextTracker, TokenCounter

        return ContextTracker(TokenCounter(self.config.model), system=self.system, tools=self.tools)
