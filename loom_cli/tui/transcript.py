"""The scrolling transcript: a bounded window of mounted blocks over a full history.

Every block is described by an `Entry`, which is cheap to keep for a whole session.
Only a window of the newest entries is mounted as widgets: every mounted widget
costs layout time on every refresh, so blocks past `max_mounted` are pruned from the
top (their entries stay) and a "load more" bar brings them back on demand. A resumed
session mounts only its last entries the same way.

The view is anchored to the bottom while the user is at the bottom; scrolling up
releases the anchor, so streaming output never yanks the view back down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.message import Message as TextualMessage
from textual.widget import Widget
from textual.widgets import Static

from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from loom_engine.transcript import REFUSED_KIND

from ..wording import plural
from .hanging import Hanging
from .markdown_stream import MarkdownStream
from .permission_prompt import STOPPED_NOTE
from .tool_block import ToolBlock, ToolCallData


@dataclass(frozen=True)
class Entry:
    kind: str  # user | assistant | thinking | tool | notice
    text: str = ""
    level: str = "info"  # notices: info | warning | error
    tool: ToolCallData | None = None
    interrupted: bool = False
    display: str = ""  # user: the prompt as shown, large pastes collapsed ("" when the same as text)


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        height: auto;
        margin: 1 0 1 0;
        padding: 0 1;
        border-left: thick $accent;
        background: $boost;
        color: $text;
    }
    """

    def __init__(self, text: str, display: str = "") -> None:
        # A prompt with a large paste shows it collapsed; a click or Ctrl+O shows it all.
        super().__init__(Text(display or text), classes="user-message")
        self.text = text
        self.display_text = display or text
        self.expanded = not display

    def set_expanded(self, expanded: bool) -> None:
        if self.display_text == self.text:
            return
        self.expanded = expanded
        self.update(Text(self.text) if expanded else Text(self.display_text))

    def on_click(self, event: events.Click) -> None:
        self.set_expanded(not self.expanded)


class Notice(Static):
    DEFAULT_CSS = """
    Notice {
        height: auto;
        padding: 0 1 0 2;
        color: $text-muted;
        margin: 0 0 1 0;
    }
    Notice.warning { color: $text-warning; }
    Notice.error { color: $text-error; text-style: bold; }
    Notice.output { color: $text; }
    """

    def __init__(self, text: str, level: str = "info") -> None:
        super().__init__(Hanging(Text(text)), classes=level)
        self.text = text
        self.level = level


class ThinkingBlock(Static):
    """Thinking, dimmed and collapsed to one line; a click expands it."""

    DEFAULT_CSS = """
    ThinkingBlock {
        height: auto;
        padding: 0 1 0 2;
        color: $text-muted;
        text-style: italic;
        margin: 0 0 1 0;
    }
    """

    def __init__(self, text: str = "", *, done: bool = False) -> None:
        super().__init__("", classes="thinking")
        self._parts: list[str] = [text] if text else []
        self.expanded = False
        self.done = done
        self._dirty = False

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def on_mount(self) -> None:
        self._redraw()

    def append(self, text: str) -> None:
        self._parts.append(text)
        # The collapsed line only shows a count; repaint a few times a second at most.
        if not self._dirty:
            self._dirty = True
            self.set_timer(0.25, self._redraw)

    def finish(self) -> None:
        self.done = True
        self._redraw()

    def _redraw(self) -> None:
        self._dirty = False
        text = self.text
        if self.expanded:
            self.update(Text("✻ thinking\n" + text.strip()))
            return
        state = "thought" if self.done else "thinking…"
        self.update(Text(f"✻ {state} ({len(text.split())} words, click to expand)"))

    def on_click(self, event: events.Click) -> None:
        self.expanded = not self.expanded
        self._redraw()


class LoadMore(Static):
    DEFAULT_CSS = """
    LoadMore {
        height: 1;
        color: $text-accent;
        text-align: center;
        background: $boost;
    }
    """

    class Pressed(TextualMessage):
        pass

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Pressed())


def entries_from_messages(messages: Sequence[Message]) -> list[Entry]:
    """Transcript entries for a saved conversation (resume)."""
    entries: list[Entry] = []
    results: dict[str, ToolResultPart] = {}
    displays: dict[str, Any] = {}  # the diffs the engine kept with the results
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                results[part.tool_use_id] = part
        saved = message.meta.get("displays")
        if isinstance(saved, Mapping):
            displays.update(saved)
    for message in messages:
        if message.role == "user" and message.meta.get("reminder"):
            continue  # a note for the model (files changed, a rewind), never typed by the user
        if message.role == "user":
            text = message.text
            command = message.meta.get("user_command")  # `!command`: drawn as it was run
            if isinstance(command, Mapping):
                entries.extend(user_command_entries(message.id, command))
            elif message.meta.get("interruption"):
                said = STOPPED_NOTE if message.meta.get("refused") else "interrupted by user"
                entries.append(Entry("notice", f"⏹ {said}", level="warning"))
            elif text.strip():
                # A prompt with @-attachments shows what was typed and a line per file.
                entries.append(Entry("user", str(message.meta.get("prompt", text))))
                entries.extend(attachment_entries(message.meta.get("attachments", ())))
        elif message.role == "assistant":
            for part in message.parts:
                if isinstance(part, ThinkingPart) and part.thinking.strip():
                    entries.append(Entry("thinking", part.thinking))
                elif isinstance(part, TextPart) and part.text.strip():
                    entries.append(Entry("assistant", part.text,
                                         interrupted=bool(message.meta.get("interrupted"))))
                elif isinstance(part, ToolUsePart):
                    result = results.get(part.id)
                    status = "done"
                    display = displays.get(part.id)
                    note = ""
                    if result is None:
                        status = "interrupted"
                    elif isinstance(display, Mapping) and display.get("kind") == REFUSED_KIND:
                        status, note = "denied", str(display.get("note") or "")  # the user said no
                    elif result.is_error:
                        status = "error"
                    entries.append(Entry("tool", tool=ToolCallData(
                        call_id=part.id, name=part.name, input=dict(part.input), status=status,
                        content=result.content if result else "", note=note,
                        display=display if isinstance(display, Mapping) else None)))
        elif message.role == "system" and message.meta.get("summary"):
            entries.append(Entry("notice", "earlier conversation compacted into a summary"))
    return entries


def attachment_entries(saved: Any) -> list[Entry]:
    """A saved prompt's attachments: one line each, those attached first, as they were shown."""
    items = [a for a in saved if isinstance(a, Mapping)] if isinstance(saved, list) else []
    attached = [str(a.get("label", "")) for a in items if a.get("kind") != "refused"]
    refused = [str(a.get("label", "")) for a in items if a.get("kind") == "refused"]
    return ([Entry("notice", "\n".join(attached))] if attached else []) + (
        [Entry("notice", "\n".join(refused), level="warning")] if refused else [])


def user_command_entries(call_id: str, command: Mapping[str, Any]) -> list[Entry]:
    """A saved `!command`: the prompt as typed and its bash block."""
    text = str(command.get("command", ""))
    return [Entry("user", f"!{text}"), Entry("tool", tool=ToolCallData(
        call_id=call_id, name="bash", input={"command": text}, status="error" if command.get("is_error") else "done",
        content=str(command.get("output", ""))))]


class Transcript(VerticalScroll):
    DEFAULT_CSS = """
    Transcript {
        height: 1fr;
        scrollbar-size-vertical: 1;
        /* Reserve the scrollbar column from the start: a scrollbar appearing later
           would change the width and re-wrap every block. */
        scrollbar-gutter: stable;
        padding: 0 0 0 0;
    }
    Transcript > MarkdownStream {
        margin: 0 0 1 0;
    }
    """

    def __init__(self, *, max_mounted: int = 150, load_step: int = 40, max_fps: float = 10.0,
                 id: str | None = None) -> None:
        super().__init__(id=id, can_focus=False)
        self.max_mounted = max_mounted
        self.max_fps = max_fps  # how often a streaming answer repaints
        self.load_step = load_step
        self.entries: list[Entry] = []
        self._widgets: dict[int, Widget] = {}  # entry index -> mounted widget
        self._first_mounted = 0
        self._load_more: LoadMore | None = None
        self.expand_tools = False
        self._loading = False

    def on_mount(self) -> None:
        self.anchor()

    # --- adding blocks ---------------------------------------------------------------

    def _add(self, entry: Entry, widget: Widget) -> Widget:
        index = len(self.entries)
        self.entries.append(entry)
        self._widgets[index] = widget
        self.mount(widget)
        self._prune()
        return widget

    def add_user(self, text: str, display: str = "") -> UserMessage:
        display = display if display != text else ""
        widget = UserMessage(text, display)
        self._add(Entry("user", text, display=display), widget)
        return widget

    def start_assistant(self) -> MarkdownStream:
        # Created empty: a Markdown created with text and then appended to breaks fences.
        widget = MarkdownStream(classes="assistant", max_fps=self.max_fps)
        self._add(Entry("assistant"), widget)
        return widget

    def start_thinking(self) -> ThinkingBlock:
        widget = ThinkingBlock()
        self._add(Entry("thinking"), widget)
        return widget

    def add_tool(self, data: ToolCallData) -> ToolBlock:
        widget = ToolBlock(data, expanded=self.expand_tools)
        self._add(Entry("tool", tool=data), widget)
        return widget

    def add_notice(self, text: str, level: str = "info") -> Notice:
        widget = Notice(text, level)
        self._add(Entry("notice", text, level=level), widget)
        return widget

    def follow(self) -> None:
        """Jump to the bottom and stay there (a new prompt was sent)."""
        self.anchor()

    # --- history ---------------------------------------------------------------------

    def _widget_for(self, entry: Entry) -> Widget:
        if entry.kind == "user":
            return UserMessage(entry.text, entry.display)
        if entry.kind == "assistant":
            return MarkdownStream(entry.text, classes="assistant")
        if entry.kind == "thinking":
            return ThinkingBlock(entry.text, done=True)
        if entry.kind == "tool" and entry.tool is not None:
            return ToolBlock(entry.tool, expanded=self.expand_tools)
        return Notice(entry.text, entry.level)

    def _snapshot(self, widget: Widget, entry: Entry) -> Entry:
        """The entry for a widget's current state, so it can be rebuilt after pruning."""
        if isinstance(widget, MarkdownStream):
            return Entry("assistant", widget.source, interrupted=entry.interrupted)
        if isinstance(widget, ThinkingBlock):
            return Entry("thinking", widget.text)
        if isinstance(widget, ToolBlock):
            return Entry("tool", tool=widget.data)
        return entry

    def mark_interrupted(self, widget: Widget) -> None:
        # The transcript keeps which entry each mounted widget shows (at most
        # max_mounted of them); it never writes into the widget itself.
        index = next((i for i, mounted in self._widgets.items() if mounted is widget), None)
        if index is not None and 0 <= index < len(self.entries):
            entry = self.entries[index]
            self.entries[index] = Entry(entry.kind, entry.text, entry.level, entry.tool, True, entry.display)

    async def load_history(self, entries: Iterable[Entry], window: int) -> None:
        """Replace the transcript with a saved conversation, mounting only its tail."""
        await self.clear()
        self.entries = list(entries)
        start = max(0, len(self.entries) - window)
        widgets = []
        for index in range(start, len(self.entries)):
            widget = self._widget_for(self.entries[index])
            self._widgets[index] = widget
            widgets.append(widget)
        self._first_mounted = start
        if widgets:
            await self.mount_all(widgets)
        self._update_load_more()
        self.anchor()

    async def clear(self) -> None:
        await self.remove_children()
        self.entries = []
        self._widgets.clear()
        self._first_mounted = 0
        self._load_more = None

    @property
    def mounted_count(self) -> int:
        return len(self._widgets)

    @property
    def hidden_count(self) -> int:
        return self._first_mounted

    def _update_load_more(self) -> None:
        if self._first_mounted > 0:
            label = (f"▲ {plural(self._first_mounted, 'earlier entry', 'earlier entries')} · "
                     "click or scroll up to show them")
            if self._load_more is None:
                self._load_more = LoadMore(label)
                first = self._widgets.get(self._first_mounted)
                if first is not None and first.parent is self:
                    self.mount(self._load_more, before=first)
                else:
                    self.mount(self._load_more)
            else:
                self._load_more.update(label)
        elif self._load_more is not None:
            self._load_more.remove()
            self._load_more = None

    def _prune(self) -> None:
        excess = len(self._widgets) - self.max_mounted
        # Prune in steps, and only while following the bottom: removing blocks above a
        # reader who scrolled up would move what they are reading.
        if excess <= 0 or (self._anchor_released and self._anchored):
            return
        step = excess + max(1, self.max_mounted // 5)
        removed: list[Widget] = []
        index = self._first_mounted
        while len(removed) < step and index < len(self.entries) - 1:
            widget = self._widgets.get(index)
            if widget is None:
                index += 1
                continue
            if isinstance(widget, ToolBlock) and widget.running:
                break
            if isinstance(widget, MarkdownStream) and not widget.finished:
                break
            self.entries[index] = self._snapshot(widget, self.entries[index])
            del self._widgets[index]
            removed.append(widget)
            index += 1
        if not removed:
            return
        self._first_mounted = index
        self.remove_children(removed)
        self._update_load_more()

    async def load_more(self) -> int:
        """Mount up to `load_step` older entries above the first mounted one."""
        if self._first_mounted == 0:
            return 0
        start = max(0, self._first_mounted - self.load_step)
        first = self._widgets.get(self._first_mounted)
        widgets: list[Widget] = []
        for index in range(start, self._first_mounted):
            widget = self._widget_for(self.entries[index])
            self._widgets[index] = widget
            widgets.append(widget)
        count = len(widgets)
        old_height = self.virtual_size.height
        old_y = self.scroll_y
        self._first_mounted = start
        if first is not None and first.parent is self:
            await self.mount_all(widgets, before=first)
        else:
            await self.mount_all(widgets)
        self._update_load_more()

        def keep_position() -> None:
            # Keep the text the user was reading where it was.
            self.scroll_to(y=old_y + (self.virtual_size.height - old_height), animate=False,
                           immediate=True)

        self.call_after_refresh(keep_position)
        return count

    async def on_load_more_pressed(self, message: LoadMore.Pressed) -> None:
        await self.load_more()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Reaching the top by scrolling brings back older blocks, as the bar promises.
        if new_value <= 0 < old_value and self._first_mounted > 0 and not self._loading:
            self._loading = True
            self.call_later(self._load_more_from_scroll)

    async def _load_more_from_scroll(self) -> None:
        try:
            await self.load_more()
        finally:
            self._loading = False

    def widgets(self) -> list[Widget]:
        return [self._widgets[i] for i in sorted(self._widgets)]

    def tool_blocks(self) -> list[ToolBlock]:
        return [w for w in self.query(ToolBlock)]

    def scroll_pages(self, pages: int) -> None:
        """A page up (pages < 0) or down, at once."""
        if pages < 0:
            self.scroll_page_up(animate=False)
        else:
            self.scroll_page_down(animate=False)

    def set_expand_tools(self, expanded: bool) -> None:
        self.expand_tools = expanded
        for block in self.query(ToolBlock):
            block.set_expanded(expanded)
        for message in self.query(UserMessage):
            message.set_expanded(expanded)
