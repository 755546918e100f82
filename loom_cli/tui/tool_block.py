"""One compact block per tool call: name, key argument, spinner, output, diff.

A block is two widgets at most: the `ToolView` strip widget that paints header, live
output, result and diff, and (for `task` only) a container for the sub-agent's own
blocks. The spinner repaints only the header line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.timer import Timer

from loom_engine.skills.wrapper import unwrap

from ..wording import plural
from .diff_view import diff_palette, parse_unified_diff, render_diff
from .output_size import lines_above, output_size, real_line_count, shown_of_total, what_the_model_saw
from .strip_view import StripView, render_rich

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_KEY_ARGS = ("command", "path", "file_path", "pattern", "url", "description", "name", "query", "skill")
COLLAPSED_OUTPUT_LINES = 4
COLLAPSED_DIFF_ROWS = 40
# While a command runs, its last few lines show (a test runner's progress, a build's
# current step); the rest is counted, not shown, so the block keeps its height.
LIVE_OUTPUT_LINES = 5
EXPANDED_OUTPUT_LINES = 2000


def key_argument(name: str, tool_input: Mapping[str, Any]) -> str:
    """The one argument that tells the user what a call does."""
    if name == "todo_write":
        todos = tool_input.get("todos")
        return plural(len(todos), "item") if isinstance(todos, list) else ""
    if name == "task" and isinstance(tool_input.get("subagent_type"), str) and tool_input["subagent_type"]:
        # A custom agent: which one runs matters as much as what it was asked.
        return f"{tool_input['subagent_type']}: {tool_input.get('description') or ''}".rstrip(": ")
    if name == "memory":  # the command and the file: "create /memories/MEMORY.md"
        where = tool_input.get("path") or " → ".join(str(tool_input.get(k) or "") for k in ("old_path", "new_path"))
        return f"{tool_input.get('command') or ''} {where}".strip()
    if name == "apply_patch":
        patch = str(tool_input.get("patch") or tool_input.get("input") or "")
        paths = [line.split(":", 1)[1].strip() for line in patch.splitlines()
                 if line.startswith(("*** Update File:", "*** Add File:", "*** Delete File:"))]
        if not paths:
            paths = [line[6:].strip() for line in patch.splitlines() if line.startswith("+++ b/")]
        return ", ".join(paths)
    for key in _KEY_ARGS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            if key == "pattern" and isinstance(tool_input.get("path"), str):
                return f"{value}  in {tool_input['path']}"
            return value
    for value in tool_input.values():
        if isinstance(value, str) and value:
            return value
    return json.dumps(dict(tool_input), ensure_ascii=False)[:200] if tool_input else ""


def shown_content(data: ToolCallData) -> str:
    """What the block shows of a result: a loaded skill's text without the tag it reaches
    the model in (the header names the skill already)."""
    return unwrap(data.content) if data.name == "skill" else data.content


def _one_line(text: str, limit: int = 160) -> str:
    # Runs of spaces (a test runner's padded progress line) would fill the header.
    first = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


# Narrower than this, a cut output's header says only "cut" and the block's body says
# what the model saw (the header line would lose it to the ellipsis).
CUT_NOTE_IN_HEADER_WIDTH = 100
# A finished call's time shows from here on: sub-second timings are noise next to the
# result, slow calls are worth knowing.
SHOW_DURATION_FROM_MS = 1000
# Output rows are indented under the header; a row too long for the line wraps to the
# same indent.
OUTPUT_INDENT = 4


def fit_header(room: int, arg: str, summary: str) -> tuple[str, str]:
    """The argument and the result summary, cut (with an ellipsis) to share ``room``
    cells of the header line: both whole when they fit, else each keeps what it needs up
    to half the line and the other takes the rest."""
    arg_need = len(arg) + 2 if arg else 0  # "  arg"
    summary_need = len(summary) + 4 if summary else 0  # "  · summary"
    if arg_need + summary_need <= room:
        return arg, summary
    half = room // 2
    if arg_need <= half:
        arg_room, summary_room = arg_need, room - arg_need
    elif summary_need <= half:
        arg_room, summary_room = room - summary_need, summary_need
    else:
        arg_room, summary_room = room - half, half
    return _cut(arg, arg_room - 2), _cut(summary, summary_room - 4)


def _cut(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    return text[:room - 1].rstrip() + "…" if room >= 2 else ""


@dataclass(frozen=True)
class ToolCallData:
    """Everything needed to draw (or redraw after pruning) one tool call."""

    call_id: str
    name: str
    input: Mapping[str, Any]
    status: str = "running"  # running | waiting | done | error | denied | interrupted
    content: str = ""
    duration_ms: float = 0.0
    display: Mapping[str, Any] | None = None
    # The last lines a running call printed (one progress event is one line), and how
    # many it printed in all.
    live: tuple[str, ...] = ()
    live_count: int = 0
    # When the call started (time.monotonic()), for the elapsed time while it runs.
    started: float | None = None
    note: str = ""
    depth: int = 0
    hook_ms: float = 0.0  # the time its hooks took (PreToolUse, PostToolUse...), shown once any ran
    children: tuple[Any, ...] = field(default_factory=tuple)


class ToolView(StripView):
    """Header, live output, result preview and diff of one call."""

    DEFAULT_CSS = """
    ToolView {
        height: auto;
        padding: 0 1 0 1;
    }
    """

    def __init__(self, data: ToolCallData, *, expanded: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(classes="tool-view")
        self.data = data
        self.expanded = expanded
        self.frame = 0
        self.clock = clock
        # A task whose sub-agent's steps (and report, its last text) show below: the
        # result would repeat the report, so the block shows the steps alone.
        self.steps_shown = False

    # --- drawing ----------------------------------------------------------------------

    def _header(self, width: int = 0) -> Text:
        lead, arg, summary, times = self._header_layout(width)
        text = lead
        if arg:
            text.append(f"  {arg}", style="dim")
        if summary:
            text.append(f"  · {summary}", style="red" if self.data.status == "error" else "dim")
        text.append_text(times)
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def _header_layout(self, width: int) -> tuple[Text, str, str, Text]:
        """Icon and name, the argument and the summary as they fit, and the times: the
        first and the last always stay on the line."""
        data = self.data
        icons = {"running": (SPINNER[self.frame % len(SPINNER)], "cyan"), "waiting": ("?", "yellow"),
                 "done": ("✓", "green"), "error": ("✗", "red"), "denied": ("⊘", "yellow"),
                 "interrupted": ("⏹", "yellow")}
        icon, colour = icons.get(data.status, ("•", "white"))
        lead = Text()
        lead.append(f"{icon} ", style=f"bold {colour}")
        lead.append(data.name, style="bold")
        times = Text()
        if data.status not in ("running", "waiting") and data.duration_ms >= SHOW_DURATION_FROM_MS:
            times.append(f"  {data.duration_ms / 1000:.1f}s", style="dim")
        elif data.status == "running" and data.started is not None:
            elapsed = int(self.clock() - data.started)
            if elapsed >= 1:
                times.append(f"  {elapsed}s", style="dim")
        if data.hook_ms > 0:  # what the user's hooks added to the call
            times.append("  hook <0.1s" if data.hook_ms < 50 else f"  hook {data.hook_ms / 1000:.1f}s", style="dim")
        arg = key_argument(data.name, data.input)
        arg = arg.splitlines()[0] if arg.strip() else arg
        summary = self._summary(width)
        if width <= 0:
            return lead, _cut(arg, 200), summary, times
        arg, summary = fit_header(width - lead.cell_len - times.cell_len, arg, summary)
        return lead, arg, summary, times

    def _summary(self, width: int = 0) -> str:
        data = self.data
        if data.status == "waiting":
            return "awaiting your approval"
        if data.status == "running" or (data.name == "todo_write" and data.status == "done"):
            return ""
        if self.steps_shown and data.status == "done":
            return ""
        if data.status == "denied":
            return "refused, not run" + (f": {data.note}" if data.note else "")
        if data.status == "interrupted":
            return "interrupted"
        if data.status == "error":
            return _one_line(data.content) or "failed"
        if data.display and data.display.get("kind") == "diff":
            parsed = parse_unified_diff(str(data.display.get("diff", "")))
            counts = f"+{parsed.added} -{parsed.removed}"
            said = data.display.get("summary")  # a memory write: "saved to memory: PATH"
            if not isinstance(said, str):
                return counts
            said = said.split(":")[0]  # "saved to memory"; narrow: "saved", the path keeps its room
            return f"{said.split()[0] if 0 < width < CUT_NOTE_IN_HEADER_WIDTH else said}  {counts}"
        total = real_line_count(data.display)
        if total == 0:
            return "no output"
        if total == 1 and not (data.display or {}).get("truncated"):
            return _one_line(data.content, 80)
        if total is not None:
            return output_size(data.display, short=0 < width < CUT_NOTE_IN_HEADER_WIDTH)
        content = shown_content(data)
        lines = content.count("\n") + 1 if content.strip() else 0
        if data.name == "read_file":
            return plural(lines, "line")
        return _one_line(content, 80) if lines == 1 else (plural(lines, "line") if lines else "")

    def _body(self, width: int) -> list[Strip]:
        data = self.data
        strips: list[Strip] = []
        if data.live and (data.status == "running" or (data.status == "interrupted" and not data.content)):
            strips.extend(render_rich(self, self._live_tail(), width))
        diff = data.display.get("diff") if data.display and data.display.get("kind") == "diff" else None
        if diff and data.status in ("done", "waiting"):
            palette = diff_palette(self.app.current_theme.dark)
            rows = None if self.expanded else COLLAPSED_DIFF_ROWS
            body = render_diff(parse_unified_diff(str(diff)), max(10, width - 4), self.app.console,
                               palette, rows)
            pad = Strip(Text("    ").render(self.app.console))
            strips.extend(Strip.join([pad, line]) for line in body)
            return strips
        if self.steps_shown and data.status == "done":
            return strips
        content = shown_content(data)
        if data.status in ("done", "error", "interrupted") and content.strip() and data.name != "todo_write":
            if not self.expanded and "\n" not in content.strip() and (
                    data.status == "error" or self._summary() == content.strip()):
                return strips  # the header already shows the one-line result (a click shows it whole)
            lines = content.rstrip("\n").splitlines()
            if data.name == "read_file" and not self.expanded:
                return strips
            cut = bool(data.display and data.display.get("truncated"))
            # Expanded, a cut output shows all of the copy the model saw (bounded by the
            # cut), its note in the middle saying what is missing.
            limit = (len(lines) if cut else EXPANDED_OUTPUT_LINES) if self.expanded else COLLAPSED_OUTPUT_LINES
            shown = lines[:limit]
            text = Text("\n".join(shown), style="red" if data.status == "error" else "dim")
            if len(shown) < len(lines):
                total = real_line_count(data.display)
                if total is None or total <= len(shown):  # only the exit code and notes are hidden
                    total = len(lines)
                action = "click to collapse" if self.expanded else "click to expand"
                text.append(f"\n{shown_of_total(len(shown), total)} ({action})", style="italic dim")
            if cut and data.display and width < CUT_NOTE_IN_HEADER_WIDTH:
                text.append(f"\n{what_the_model_saw(data.display)} lines", style="italic dim")
            strips.extend(self._indented(text, width))
        return strips

    def _indented(self, text: Text, width: int) -> list[Strip]:
        """``text`` under the header: the first row after "⎿", every other row (a wrapped
        one too) at the same indent."""
        console = self.app.console
        first = Strip(Text("  ⎿ ".ljust(OUTPUT_INDENT), style=text.style).render(console))
        pad = Strip(Text(" " * OUTPUT_INDENT).render(console))
        rows = render_rich(self, text, max(1, width - OUTPUT_INDENT))
        return [Strip.join([first if i == 0 else pad, row]) for i, row in enumerate(rows)]

    def _live_tail(self) -> Text:
        """The last lines printed so far, one row each, under a count of those above."""
        data = self.data
        text = Text(style="dim")
        rows: list[tuple[str, str]] = []
        above = data.live_count - len(data.live)
        if above > 0:
            rows.append((lines_above(above), "italic dim"))
        rows.extend((line, "dim") for line in data.live)
        for i, (row, style) in enumerate(rows):
            # A row is one line of output: cut it rather than wrap, so the tail keeps its height.
            prefix = "  ⎿ " if i == 0 else "    "
            text.append(("\n" if i else "") + prefix)
            text.append(row, style=style)
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def build_lines(self, width: int) -> list[Strip]:
        header = render_rich(self, self._header(width), width)[:1]
        return header + self._body(width)

    def update_data(self, data: ToolCallData) -> None:
        self.data = data
        self.invalidate()

    def tick(self) -> None:
        """Advance the spinner: only the header line is redrawn."""
        self.frame += 1
        width = self.content_size.width
        if self._lines and width == self._lines_width:
            self._lines[0] = render_rich(self, self._header(width), width)[0]
            self.refresh(Region(0, 0, width, 1))

    def on_click(self, event: events.Click) -> None:
        if self.data.status in ("running", "waiting"):
            return
        self.expanded = not self.expanded
        self.invalidate()


class ToolBlock(Vertical):
    """A tool call in the transcript; `task` blocks hold their sub-agent's blocks."""

    DEFAULT_CSS = """
    ToolBlock {
        height: auto;
        margin: 0 0 1 0;
    }
    ToolBlock > .subagent {
        height: auto;
        padding: 0 0 0 4;
    }
    """

    def __init__(self, data: ToolCallData, *, expanded: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(classes="tool-block")
        self.view = ToolView(data, expanded=expanded, clock=clock)
        self.children_box: Vertical | None = None
        self._live_timer: Timer | None = None
        self._live_dirty = False

    def compose(self) -> ComposeResult:
        yield self.view

    @property
    def data(self) -> ToolCallData:
        return self.view.data

    @property
    def call_id(self) -> str:
        return self.view.data.call_id

    @property
    def running(self) -> bool:
        return self.view.data.status in ("running", "waiting")

    def subagent_box(self) -> Vertical:
        """The container the sub-agent's blocks go into (created on first use)."""
        if self.children_box is None:
            self.children_box = Vertical(classes="subagent")
            self.mount(self.children_box)
            self.view.steps_shown = True
            self.view.invalidate()
        return self.children_box

    def set_status(self, status: str, **changes: Any) -> None:
        if status == "running" and self.view.data.status == "waiting":
            # Approved: the call starts now, whatever time the question stood open.
            changes.setdefault("started", self.view.clock())
        self.view.update_data(replace(self.view.data, status=status, **changes))

    def add_live_output(self, line: str) -> None:
        """One line the running call printed (a progress event is one line, without its
        newline); repaint at most ten times a second."""
        data = self.view.data
        if "\r" in line:
            # A progress bar redraws its line after each carriage return: the terminal
            # would show the last drawing, so does the block.
            line = next((part for part in reversed(line.split("\r")) if part), "")
        live = (*data.live, line[:1000])[-LIVE_OUTPUT_LINES:]
        self.view.data = replace(data, live=live, live_count=data.live_count + 1)
        if self._live_timer is None:
            self._live_timer = self.set_timer(0.1, self._flush_live)

    def _flush_live(self) -> None:
        self._live_timer = None
        self.view.invalidate()

    def finish(self, *, content: str, is_error: bool, duration_ms: float,
               display: Mapping[str, Any] | None, interrupted: bool = False) -> None:
        data = self.view.data
        if data.status == "denied":
            status = "denied"
        elif interrupted:
            status = "interrupted"
        else:
            status = "error" if is_error else "done"
        if self._live_timer is not None:
            self._live_timer.stop()
            self._live_timer = None
        # An interrupted call keeps what it printed so far; a finished one shows its result.
        live = data.live if status == "interrupted" else ()
        self.view.update_data(replace(data, status=status, content=content, duration_ms=duration_ms,
                                      display=display, live=live))

    def tick(self) -> None:
        if self.running:
            self.view.tick()

    def set_expanded(self, expanded: bool) -> None:
        if self.view.expanded != expanded:
            self.view.expanded = expanded
            self.view.invalidate()
