"""The status bar (model, mode, context, tokens, cost, cache) and the activity line."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rich.text import Text
from textual.widgets import Static

from loom_engine.sandbox.status import SandboxStatus
from loom_engine.usage import Usage

MODE_STYLES = {
    "default": "bold",
    "accept-edits": "bold green",
    "plan": "bold cyan",
    "bypass": "bold white on red",
}


def human_tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


@dataclass(frozen=True)
class StatusInfo:
    model: str = ""
    mode: str = ""
    context_used: int = 0
    context_window: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    note: str = ""
    mcp: str = ""  # the MCP servers in a few words ("2 MCP servers · 1 failed"); "" when none
    sandbox: SandboxStatus | None = None  # the session's sandbox; None: not known (yet)
    # Tokens the request on its way is estimated to send, shown (as ↑~) until the
    # provider's first usage report: a long first request would read ↑0 for a minute.
    sending_estimate: int = 0

    @property
    def context_percent(self) -> float:
        return 100.0 * self.context_used / self.context_window if self.context_window else 0.0

    @property
    def cache_hit_rate(self) -> float:
        prompt = self.usage.prompt_tokens
        return self.usage.cache_read_input_tokens / prompt if prompt else 0.0

    def with_usage(self, usage: Usage, cost_usd: float) -> StatusInfo:
        return replace(self, usage=self.usage + usage, cost_usd=self.cost_usd + cost_usd, sending_estimate=0)


# What a narrow bar gives up first, in order: the key hint, the cache rate, the token
# counts, "sandboxed" (the usual state), the model's vendor prefix ("claude-"), the MCP
# state, and last a sandbox that is off or missing (/sandbox says more). The model, the
# mode, the context and the cost always stay.
_DROP_ORDER = ("hint", "cache", "tokens", "sandbox", "vendor", "mcp", "no-sandbox")


def sandbox_badge(status: SandboxStatus) -> tuple[str, str, str]:
    """(drop key, words, style) of the sandbox's state in the bar."""
    if status.active:
        return "sandbox", "sandboxed", ""
    if status.mode == "off":
        return "no-sandbox", "sandbox off", "yellow"
    return "no-sandbox", "no sandbox", "bold red" if status.refuses_commands else "yellow"


def status_text(info: StatusInfo, width: int | None = None) -> Text:
    """The bar's text; with ``width``, parts are given up (see ``_DROP_ORDER``) until it
    fits, so the cost is never the part a narrow terminal cuts off."""
    dropped: set[str] = set()
    text = Text()
    for name in (None, *_DROP_ORDER):
        if name is not None:
            dropped.add(name)
        text = Text(no_wrap=True, overflow="ellipsis")
        for key, piece in _status_parts(info, short_model="vendor" in dropped):
            if key not in dropped:
                text.append_text(piece)
        if width is None or text.cell_len <= width:
            break
    return text


def _status_parts(info: StatusInfo, *, short_model: bool = False) -> list[tuple[str, Text]]:
    parts: list[tuple[str, Text]] = []
    if info.note:
        parts.append(("note", Text.assemble((info.note, "italic"), "  ")))
    if not info.model:
        return parts
    mode = info.mode or "…"
    model = info.model.removeprefix("claude-") if short_model else info.model
    parts.append(("model", Text.assemble((model, "bold"), " · ",
                                         (f" {mode} " if mode == "bypass" else mode, MODE_STYLES.get(mode, "bold")))))
    parts.append(("hint", Text(" (shift+tab)", style="dim")))
    if info.sandbox is not None:
        key, words, style = sandbox_badge(info.sandbox)
        parts.append((key, Text.assemble(" · ", (words, style))))
    if info.mcp:
        parts.append(("mcp", Text.assemble(" · ", (info.mcp, "red" if "failed" in info.mcp else ""))))
    if info.context_window:
        pct = info.context_percent
        style = "red" if pct >= 85 else "yellow" if pct >= 60 else ""
        parts.append(("context", Text.assemble(" · ctx ", (f"{pct:.0f}%", style))))
    usage = info.usage
    sent = (f"~{human_tokens(info.sending_estimate)}" if info.sending_estimate and not usage.prompt_tokens
            else human_tokens(usage.prompt_tokens))
    parts.append(("tokens", Text(f" · ↑{sent} ↓{human_tokens(usage.output_tokens)}")))
    parts.append(("cost", Text(f" · ${info.cost_usd:.4f}" if info.cost_usd < 1 else f" · ${info.cost_usd:.2f}")))
    if usage.prompt_tokens:
        parts.append(("cache", Text(f" · cache {info.cache_hit_rate * 100:.0f}%")))
    return parts


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
    }
    """

    def __init__(self, info: StatusInfo | None = None, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.info = info or StatusInfo()

    def on_mount(self) -> None:
        self._render_info()

    def on_resize(self) -> None:
        self._render_info()

    def set_info(self, info: StatusInfo) -> None:
        if info != self.info:
            self.info = info
            self._render_info()

    def _render_info(self) -> None:
        width = self.content_size.width  # 0 before the first layout: no fitting yet
        self.update(status_text(self.info, width or None))

    def change(self, **changes: Any) -> None:
        """Some fields of what is shown (the others stay)."""
        self.set_info(replace(self.info, **changes))


class ActivityLine(Static):
    """One line above the prompt: what is running, how long, what is queued, hints.

    A hint ("copied", "press Ctrl+C again to quit") stays for its few seconds whatever
    the app shows meanwhile.
    """

    DEFAULT_CSS = """
    ActivityLine {
        height: 1;
        padding: 0 1;
        color: $text-accent;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.message = ""
        self._hint = ""
        self._hint_until = 0.0

    def show(self, message: str) -> None:
        if self._hint and time.monotonic() < self._hint_until:
            message = self._hint
        if message != self.message:
            self.message = message
            self.update(Text(message, no_wrap=True, overflow="ellipsis"))

    def show_hint(self, text: str, seconds: float = 2.0) -> None:
        self._hint = text
        self._hint_until = time.monotonic() + seconds
        self.show(text)


class RunClock:
    """How long the run has been working, as the activity line shows it.

    The clock stands still while a permission question waits for the user: the time
    someone takes to answer is not the tool (or the model) being slow.
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self._started = now()
        self._paused_at: float | None = None
        self._paused_for = 0.0

    def start(self) -> None:
        self._started = self.now()
        self._paused_at = None
        self._paused_for = 0.0

    def pause(self) -> None:
        if self._paused_at is None:
            self._paused_at = self.now()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._paused_for += self.now() - self._paused_at
            self._paused_at = None

    @property
    def elapsed(self) -> float:
        until = self._paused_at if self._paused_at is not None else self.now()
        return until - self._started - self._paused_for
