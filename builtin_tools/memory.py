"""memory: the model's own notes, kept across sessions (and, in an agent tree, shared).

The command set is the one Anthropic's models are trained on (the ``memory_20250818``
tool): ``view``, ``create``, ``str_replace``, ``insert``, ``delete``, ``rename``, paths
under ``/memories``. Loom offers it as an ordinary function tool with that schema to
every model, plus ``scope`` (default ``global``: the project's long-term folder).

Every change reads the entry, changes its text and writes it back naming the version it
read. The version this agent last saw of each entry is kept in its tool session state:
an edit based on a view another agent (or process) has since outdated is refused with
the entry as it now is, as the edit tool refuses a file "changed on disk".

Writes need no permission (they are the model's notes in Loom's data folder, never the
user's files) but each shows in the chat as what was saved; plan mode refuses the tool
(it is not read-only), and ``[memory] enabled = false`` removes it.
"""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import BaseModel, Field

from loom_engine.memory.entries import Entry, MemoryOperationError, MemoryStore, ReadOnlyScope, Scope, StaleVersion
from loom_engine.tools.base import BaseTool, ToolContext, ToolError, ToolOutput

ROOT = "/memories"
MAX_VIEW_CHARS = 16_000
MAX_STALE_CHARS = 4_000

Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]
# Scope's values, spelled out so the schema has no $ref (some providers reject one).
ScopeName = Literal["global", "local", "shared", "inherited"]


class MemoryInput(BaseModel):
    command: Command = Field(description="view, create, str_replace, insert, delete or rename.")
    path: str | None = Field(None, description="The file or folder, e.g. /memories/MEMORY.md (all but rename).")
    view_range: list[int] | None = Field(None, description="view: [first, last] line numbers (1-based; "
                                         "last -1 for the end).")
    file_text: str | None = Field(None, description="create: the file's whole content.")
    old_str: str | None = Field(None, description="str_replace: text that occurs exactly once in the file.")
    new_str: str | None = Field(None, description="str_replace: what replaces it (\"\" to remove it).")
    insert_line: int | None = Field(None, description="insert: the line number to insert after (0: at the top).")
    insert_text: str | None = Field(None, description="insert: the text to insert.")
    old_path: str | None = Field(None, description="rename: the file to move.")
    new_path: str | None = Field(None, description="rename: where it goes (must not exist).")
    scope: ScopeName = Field("global", description=(
        "Whose memory: global (this project's, kept across sessions; the default), or in a sub-agent tree local "
        "(your own task notes), shared (seen by the whole tree), inherited (from your parent, read-only)."))


def store_path(path: str | None, *, what: str = "path") -> str:
    """``/memories/a/b.md`` -> ``a/b.md`` ("" for the root); a path elsewhere is refused."""
    if path is None:
        raise ToolError(f"{what} is required for this command")
    cleaned = path.strip()
    if cleaned in (ROOT, ROOT + "/", "/", ""):
        return ""
    if not cleaned.startswith(ROOT + "/"):
        raise ToolError(f"{cleaned}: memory paths start with {ROOT}/ (e.g. {ROOT}/MEMORY.md)")
    return cleaned[len(ROOT) + 1:].rstrip("/")


def shown(path: str) -> str:
    return f"{ROOT}/{path}" if path else ROOT


def numbered(text: str, first: int = 1) -> str:
    return "\n".join(f"{number:6d}\t{line}" for number, line in enumerate(text.splitlines(), first))


class MemoryTool(BaseTool[MemoryInput]):
    name = "memory"
    description = (
        "Your persistent memory for this project, kept across sessions: a folder of text files under "
        f"{ROOT}. Commands: view (a folder listing, or a file with line numbers; view_range [a, b]), create "
        "(path, file_text), str_replace (path, old_str, new_str), insert (path, insert_line, insert_text), "
        f"delete (path), rename (old_path, new_path). {ROOT}/MEMORY.md is the index: its first 200 lines are "
        "shown at the start of every session, so keep it short and point to topic files. Save what will help "
        "later (the user's preferences, how the project is built and tested, decisions and why); never secrets.")
    input_model = MemoryInput
    guidance = (
        f"memory keeps notes across sessions in {ROOT} (this project's). When the user says \"remember …\", or you "
        f"learn something a later session needs, save it: one line in {ROOT}/MEMORY.md, or a topic file linked "
        "from it. View a topic file before relying on it; update notes that became wrong rather than adding more.")

    def reads_only(self, args: MemoryInput) -> bool:
        return args.command == "view"  # so plan mode can read the notes it plans with

    async def run(self, args: MemoryInput, ctx: ToolContext) -> ToolOutput:
        scope = Scope(args.scope)
        store = _store(scope, ctx)
        try:
            return _Session(store, ctx).run(args)
        except StaleVersion as stale:
            return ToolOutput(_stale_text(stale, scope), is_error=True)
        except ReadOnlyScope as error:
            return ToolOutput(str(error) or f"the {scope.value} scope is read-only here", is_error=True)
        except MemoryOperationError as error:
            return ToolOutput(str(error), is_error=True)


def _store(scope: Scope, ctx: ToolContext) -> MemoryStore:
    stores = ctx.memory_scopes or {}
    store = stores.get(scope)
    if store is None:
        have = ", ".join(sorted(s.value for s in stores)) or "none"
        raise ToolError(f"no {scope.value} memory here (scopes available: {have})")
    return store


def _stale_text(stale: StaleVersion, scope: Scope) -> str:
    current = stale.current
    if current is None:
        return f"{stale}"
    text = current.content
    if len(text) > MAX_STALE_CHARS:
        text = text[:MAX_STALE_CHARS] + f"\n… ({len(current.content) - MAX_STALE_CHARS:,} more characters)"
    return f"{stale}. It now holds ({scope.value} {shown(current.path)}):\n{numbered(text)}"


class _Session:
    """One call's work on one store, remembering what the agent saw."""

    def __init__(self, store: MemoryStore, ctx: ToolContext) -> None:
        self.store = store
        self.seen = ctx.state.memory_seen
        self.prefix = f"{store.scope.value}:"

    def run(self, args: MemoryInput) -> ToolOutput:
        if args.command == "view":
            return self.view(store_path(args.path), args.view_range)
        if args.command == "rename":
            return self.rename(store_path(args.old_path, what="old_path"), store_path(args.new_path, what="new_path"))
        path = store_path(args.path)
        if not path:
            raise ToolError(f"{args.command} needs a file under {ROOT}/, not the folder itself")
        if args.command == "create":
            if args.file_text is None:
                raise ToolError("file_text is required for create")
            return self.create(path, args.file_text)
        if args.command == "delete":
            entry = self.read(path)
            self.store.delete(path, expected=entry.version)
            self.seen.pop(self.prefix + path, None)
            return ToolOutput(f"Deleted {shown(path)} from memory.",
                              display=_display("deleted", path, entry.content, ""))
        entry = self.read(path)
        if args.command == "str_replace":
            if args.old_str is None:
                raise ToolError("old_str is required for str_replace")
            count = entry.content.count(args.old_str) if args.old_str else 0
            if count != 1:
                raise ToolError(f"old_str {'was not found' if count == 0 else f'occurs {count} times'} in "
                                f"{shown(path)}; give text that occurs exactly once")
            text = entry.content.replace(args.old_str, args.new_str or "", 1)
        else:
            if args.insert_line is None or args.insert_text is None:
                raise ToolError("insert_line and insert_text are required for insert")
            lines = entry.content.splitlines(keepends=True)
            if not 0 <= args.insert_line <= len(lines):
                raise ToolError(f"insert_line {args.insert_line} is outside 0..{len(lines)} of {shown(path)}")
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            added = args.insert_text if args.insert_text.endswith("\n") else args.insert_text + "\n"
            text = "".join(lines[:args.insert_line]) + added + "".join(lines[args.insert_line:])
        return self.write(path, entry, text)

    def read(self, path: str) -> Entry:
        """The entry as it is, refused when the agent saw an older version of it."""
        entry = self.store.get(path)
        if entry is None:
            raise ToolError(f"{shown(path)} does not exist in memory (view {ROOT} to see what does)")
        seen = self.seen.get(self.prefix + path)
        if seen is not None and seen != entry.version:
            self.seen[self.prefix + path] = entry.version
            raise StaleVersion(path, entry)
        return entry

    def view(self, path: str, view_range: list[int] | None) -> ToolOutput:
        entry = self.store.get(path) if path else None
        if entry is None:
            entries = self.store.list(path)
            if not entries and path:
                raise ToolError(f"{shown(path)} does not exist in memory (view {ROOT} to see what does)")
            lines = [f"{shown(path)} ({len(entries)} file{'s' if len(entries) != 1 else ''}):"]
            lines += [f"{len(e.content.encode()):>8,} B  {shown(e.path)}" for e in entries]
            if not entries:
                lines.append("(empty: nothing saved yet)")
            return ToolOutput("\n".join(lines))
        self.seen[self.prefix + path] = entry.version
        text = entry.content
        first = 1
        if view_range is not None:
            all_lines = text.splitlines()
            if len(view_range) != 2 or view_range[0] < 1 or (view_range[1] != -1 and view_range[1] < view_range[0]):
                raise ToolError("view_range is [first, last]: 1-based, last -1 for the end")
            first = view_range[0]
            last = len(all_lines) if view_range[1] == -1 else view_range[1]
            text = "\n".join(all_lines[first - 1:last])
        if len(text) > MAX_VIEW_CHARS:
            text = text[:MAX_VIEW_CHARS] + "\n… (cut: use view_range for the rest)"
        return ToolOutput(f"{shown(path)}:\n{numbered(text, first)}" if text else f"{shown(path)} is empty.")

    def create(self, path: str, text: str) -> ToolOutput:
        current = self.store.get(path)
        if current is not None:
            seen = self.seen.get(self.prefix + path)
            if seen != current.version:
                self.seen[self.prefix + path] = current.version
                if seen is None:
                    raise ToolError(f"{shown(path)} already exists; view it first, then change it with str_replace "
                                    "or insert (or create it again to replace it whole)")
                raise StaleVersion(path, current)
        return self.write(path, current, text)

    def write(self, path: str, before: Entry | None, text: str) -> ToolOutput:
        saved = self.store.put(path, text, expected=before.version if before is not None else None)
        self.seen[self.prefix + path] = saved.version
        old = before.content if before is not None else ""
        verb = "created" if before is None else "updated"
        redacted = " (secrets removed)" if saved.content != text else ""
        return ToolOutput(f"Saved to memory: {shown(path)} {verb}{redacted}.",
                          display=_display(verb, path, old, saved.content))

    def rename(self, old: str, new: str) -> ToolOutput:
        if not old or not new:
            raise ToolError("rename moves a file: old_path and new_path name files under /memories/")
        entry = self.read(old)
        moved = self.store.rename(old, new, expected=entry.version)
        self.seen.pop(self.prefix + old, None)
        self.seen[self.prefix + new] = moved.version
        return ToolOutput(f"Renamed {shown(old)} to {shown(new)} in memory.",
                          display={"kind": "memory", "summary": f"memory: renamed {shown(old)} to {shown(new)}"})


def _display(verb: str, path: str, old: str, new: str) -> dict[str, str]:
    """A diff the chat shows (the new lines), with a one-line summary for other front ends."""
    label = f"memory:{shown(path)}"
    diff = "".join(difflib.unified_diff(_lines(old), _lines(new),
                                        fromfile="/dev/null" if verb == "created" else label,
                                        tofile=label if verb != "deleted" else "/dev/null"))
    what = "saved to memory" if verb != "deleted" else "deleted from memory"
    return {"kind": "diff", "path": shown(path), "diff": diff, "summary": f"{what}: {shown(path)}"}


def _lines(text: str) -> list[str]:
    return [line + "\n" for line in text.splitlines()]
