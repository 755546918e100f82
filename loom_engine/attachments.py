"""``@path`` in a prompt: the file's text goes to the model with the prompt.

    prompt = await expand_prompt("explain @src/app.py:10-40", source)
    agent.run(prompt)  # one user message: the text, then one block per attachment

A mention is ``@`` at the start of the prompt or after a space, then a path relative
to the workspace root, optionally ``:START-END`` (lines) or ``:START`` (from a line).
A path that does not exist stays plain text (``@bob`` in a sentence is left alone).

Nothing is read here directly: a file is read by the agent's own ``read_file`` tool
and a folder listed by its ``ls`` tool, after the same permission check the model's
call would get, and the text is redacted as a tool result would be. So a path a
rule protects, one outside the workspace, or a binary file is not attached; the
user is told why and so is the model, in one line. Only an answer of "allow" reads:
attaching never asks, since the user did not see what would be read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from .execution import CancelToken
from .messages import Message, TextPart
from .tools.base import Tool, ToolContext, ToolError, ToolSessionState
from .tools.pipeline import cap_text
from .tools.registry import ToolRegistry
from .workspace import Workspace

if TYPE_CHECKING:
    from .permissions.manager import PermissionManager

# More than this many files in one prompt is a paste of paths, not a request to read them.
MAX_ATTACHMENTS = 10
# Past this many lines (or read_file's own output budget of about 50 KB) a file is
# attached from its first line with read_file's note saying how to read on.
MAX_LINES = 2000

_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_RANGE = re.compile(r"^(.+?):(\d+)(?:-(\d+))?$")
# What often follows a path in a sentence and is not part of it: "see @a.py, then".
_TRAILING = ".,;:!?)]}'\""

AttachmentKind = Literal["file", "folder", "refused"]


@dataclass(frozen=True)
class Mention:
    """``@path`` or ``@path:START-END`` as typed."""

    raw: str  # the token without "@", as typed
    path: str  # the path part
    start: int | None = None  # 1-based first line asked for
    end: int | None = None  # last line asked for (inclusive)


@dataclass(frozen=True)
class Attachment:
    path: str  # relative to the workspace root
    kind: AttachmentKind
    content: str  # what the model reads (for "refused": why not)
    label: str  # one line for the user: "📎 src/app.py (120 lines)"
    lines: tuple[int, int] | None = None  # first and last line attached
    total_lines: int | None = None  # None when unknown (a huge file not counted)

    @property
    def attached(self) -> bool:
        return self.kind != "refused"

    def block(self) -> str:
        """The text the model gets for this attachment."""
        if self.kind == "refused":
            return f"[@{self.path} was not attached: {self.content}]"
        span = f' lines="{self.lines[0]}-{self.lines[1]}"' if self.lines else ""
        total = f' total_lines="{self.total_lines}"' if self.total_lines is not None and self.lines else ""
        kind = ' kind="folder"' if self.kind == "folder" else ""
        return f'<attached path="{self.path}"{kind}{span}{total}>\n{self.content}\n</attached>'

    def summary(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "label": self.label}


@dataclass(frozen=True)
class UserPrompt:
    """What the user typed and the attachments it named."""

    text: str
    attachments: tuple[Attachment, ...] = ()

    def notes(self) -> list[tuple[str, list[str]]]:
        """(level, lines) for the user: one "info" note listing what was attached, one
        "warning" note listing what was not; either is left out when empty."""
        notes = [("info", [a.label for a in self.attachments if a.attached]),
                 ("warning", [a.label for a in self.attachments if not a.attached])]
        return [(level, lines) for level, lines in notes if lines]

    def message(self) -> Message:
        if not self.attachments:
            return Message.user(self.text)
        # The typed text and each attachment are separate parts: a UI shows the text
        # and the labels kept in ``meta``, never the attached content.
        parts = (TextPart(self.text), *(TextPart(a.block()) for a in self.attachments))
        return Message("user", parts, meta={"prompt": self.text,
                                            "attachments": [a.summary() for a in self.attachments]})


@dataclass(frozen=True)
class AttachmentSource:
    """Where attachments are read from: the agent's tools, rules and session state."""

    workspace: Workspace
    registry: ToolRegistry
    permissions: PermissionManager | None
    state: ToolSessionState
    redact: Callable[[str], str] | None = None
    cancel: CancelToken | None = None


def find_mentions(prompt: str) -> list[Mention]:
    """Every ``@token`` of the prompt, in order, each once."""
    found: dict[str, Mention] = {}
    for match in _MENTION.finditer(prompt):
        raw = match.group(1)
        if raw not in found:
            found[raw] = _mention(raw)
    return list(found.values())


def has_mentions(prompt: str) -> bool:
    return "@" in prompt and _MENTION.search(prompt) is not None


def _mention(raw: str) -> Mention:
    ranged = _RANGE.match(raw)
    if ranged:
        start = int(ranged.group(2))
        end = int(ranged.group(3)) if ranged.group(3) else None
        return Mention(raw, ranged.group(1), max(start, 1), end)
    return Mention(raw, raw)


def _candidates(mention: Mention) -> list[Mention]:
    """The mention, then the same with sentence punctuation taken off its end."""
    out = [mention]
    raw = mention.raw
    while raw and raw[-1] in _TRAILING:
        raw = raw[:-1]
        if raw:
            out.append(_mention(raw))
    return out


async def expand_prompt(prompt: str, source: AttachmentSource) -> UserPrompt:
    """The prompt with every mentioned file or folder that exists attached."""
    attachments: list[Attachment] = []
    seen: set[tuple[str, int | None, int | None]] = set()
    skipped = 0
    for mention in find_mentions(prompt):
        found = _existing(mention, source.workspace)
        if found is None:
            continue  # not a path: stays plain text
        mention, resolved = found
        key = (str(resolved), mention.start, mention.end)
        if key in seen:
            continue
        seen.add(key)
        if len(attachments) >= MAX_ATTACHMENTS:
            skipped += 1
            continue
        attachments.append(await _attach(mention, resolved, source))
    if skipped:
        attachments.append(Attachment(
            path=f"({skipped} more)", kind="refused",
            content=f"only the first {MAX_ATTACHMENTS} mentioned paths are attached",
            label=f"{skipped} more mentioned paths not attached (at most {MAX_ATTACHMENTS} per message)"))
    return UserPrompt(prompt, tuple(attachments))


def _existing(mention: Mention, workspace: Workspace) -> tuple[Mention, Path] | None:
    for candidate in _candidates(mention):
        if "\0" in candidate.path:
            return None
        try:
            resolved = workspace.resolve(candidate.path)
            if resolved.exists():
                return candidate, resolved
        except (OSError, ValueError):
            continue
    return None


async def _attach(mention: Mention, resolved: Path, source: AttachmentSource) -> Attachment:
    workspace = source.workspace
    shown = workspace.relative(resolved)
    folder = resolved.is_dir()
    if folder:
        shown = shown.rstrip("/") + "/"
    tool = source.registry.get("ls" if folder else "read_file")
    if not workspace.contains(resolved):
        return _refused(mention.path, "it is outside the workspace")  # as typed: recognisable
    if tool is None:
        return _refused(shown, f"this agent has no {'ls' if folder else 'read_file'} tool to read it with")
    args: dict[str, Any] = {"path": str(resolved)}
    if not folder:
        start = mention.start or 1
        last = mention.end if mention.end is not None and mention.end >= start else start + MAX_LINES - 1
        args.update(offset=start, limit=min(last - start + 1, MAX_LINES))
    ctx = ToolContext(workspace=workspace, cancel=source.cancel or CancelToken(), state=source.state,
                      call_id="attachment", read_rules=source.permissions)
    why_not = _permission(tool, args, ctx, source.permissions)
    if why_not:
        return _refused(shown, why_not)
    try:
        output = await tool.run(tool.input_model.model_validate(args), ctx)
    except (ToolError, OSError, ValidationError) as error:
        return _refused(shown, str(error))
    if output.is_error:
        return _refused(shown, _first_line(output.content, shown))
    content = source.redact(output.content) if source.redact is not None else output.content
    content = cap_text(content)
    if folder:
        # The listing's first line names the folder; its notes are in parentheses or brackets.
        rows = [row for row in content.splitlines()[1:] if row.strip() and not row.startswith(("(", "["))]
        count = "1 entry" if len(rows) == 1 else f"{len(rows)} entries"
        return Attachment(shown, "folder", content, f"📎 {shown} (folder, {count})")
    return _file(shown, content, ranged=mention.start is not None)


def _permission(tool: Tool[Any], args: Mapping[str, Any], ctx: ToolContext,
                permissions: PermissionManager | None) -> str | None:
    """Why the read may not happen without asking, or None when it is allowed."""
    if permissions is None:
        return None
    try:
        target = tool.permission_target(tool.input_model.model_validate(dict(args)), ctx)
        decision = permissions.check(tool.name, target, is_read_only=True, cwd=ctx.cwd)
    except (ToolError, ValidationError, ValueError, OSError) as error:
        return str(error)
    if decision.behavior == "allow":
        return None
    if decision.behavior == "ask":
        return f"reading it needs approval ({decision.reason})"
    return decision.reason


def _file(shown: str, content: str, *, ranged: bool) -> Attachment:
    body, _, note = content.partition("\n\n(")
    rows = body.split("\n")
    first, last = _row_number(rows[0]), _row_number(rows[-1])
    if first is None or last is None:  # "x is empty (0 lines)."
        return Attachment(shown, "file", content, f"📎 {shown} (empty)", None, 0)
    total_match = re.search(r"Showing lines \d+-\d+ of (\d+)", note)
    total = int(total_match.group(1)) if total_match else (None if "More lines follow" in note else last)
    if first == 1 and total == last:
        label = f"📎 {shown} ({_lines(last)})"
    elif ranged:
        of = f" of {total}" if total is not None else ""
        label = f"📎 {shown} (lines {first}-{last}{of})"
    else:
        of = f" of {total}" if total is not None else ""
        label = f"📎 {shown} (first {last} lines{of}; attach more with @{shown}:{last + 1}-{last + MAX_LINES})"
    return Attachment(shown, "file", content, label, (first, last), total)


def _row_number(row: str) -> int | None:
    number, tab, _ = row.partition("\t")
    return int(number) if tab and number.strip().isdigit() else None


def _lines(count: int) -> str:
    return "1 line" if count == 1 else f"{count} lines"


def _refused(shown: str, reason: str) -> Attachment:
    return Attachment(shown, "refused", reason, f"@{shown} not attached: {reason}")


def _first_line(text: str, shown: str) -> str:
    """The tool's error as a reason: "logo.png is a PNG image; read_file only reads text
    files." becomes "it is a PNG image" (the label names the file already)."""
    line = text.strip().splitlines()[0] if text.strip() else "it could not be read"
    # read_file's advice to the model ("read_file only reads text files") is not for the user.
    line = line.split("; read_file")[0].rstrip(".")
    return "it " + line[len(shown) + 1:] if line.startswith(shown + " is ") else line
