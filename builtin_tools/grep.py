"""grep: regex search with the ripgrep binary, and a pure-Python twin for when it is missing.

Both engines select files with the rules in :mod:`builtin_tools._files.walk` and feed one
formatter, so the model sees the same text either way. Known differences, all at the
edges: the regex dialect (Rust's vs Python's ``re``), invalid UTF-8 (rg never lets
``.`` match it), and files whose first NUL byte lies beyond rg's first 64 KiB buffer
(rg may report the matches before it, the fallback skips the whole file).

The engines live apart: ``_grep_rg`` and ``_grep_fallback``, sharing the query and result
types of ``_grep_query``; this module is the tool and the text the model reads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from loom_engine.tools.base import ToolContext, ToolError, ToolOutput

from ._files.paths import resolve_path
from ._files.rg import SearchCancelled
from ._files.safe_io import pinned_folder
from ._grep_fallback import search_with_python
from ._grep_query import FileMatches, GrepInput, Query, SearchError, SearchResult
from ._grep_rg import search_with_rg
from ._search_tool import RgSearchTool, RuledOut, check_pattern

MAX_OUTPUT_CHARS = 30_000
MAX_LINE_CHARS = 500


# --------------------------------------------------------------------------- output

def render(result: SearchResult, query: Query, display: Callable[[str], str],
           head_limit: int | None, where: str) -> str:
    """The model's text. Lines are formatted lazily: a search may find far more than
    head_limit or the character cap let through."""
    files = result.files
    if not files:
        return "\n".join([f"No matches for {query.pattern!r} in {where}.", *result.notes])
    entries: Iterator[str]
    header = ""
    if query.mode == "files_with_matches":
        total, unit = len(files), "files"
        header = f"Found {total} file{'s' if total != 1 else ''}"
        entries = (display(f.rel) for f in files)
    elif query.mode == "count":
        total, unit = len(files), "files"
        lines = sum(f.count for f in files)
        header = (f"Found {lines} matching line{'s' if lines != 1 else ''} "
                  f"in {total} file{'s' if total != 1 else ''}")
        entries = (f"{display(f.rel)}:{f.count}" for f in files)
    else:
        total, unit = sum(1 if f.binary else len(f.lines) for f in files), "lines"
        entries = _content_lines(files, display, query)
    limit = total if head_limit is None else min(head_limit, total)
    body = [header] if header else []
    size = len(header) + 1
    shown = 0
    cut = False
    for entry in entries:
        if shown >= limit:
            break
        if entry != "--":
            if size + len(entry) + 1 > MAX_OUTPUT_CHARS:
                cut = True
                break
            shown += 1
        body.append(entry)
        size += len(entry) + 1
    while body and body[-1] == "--":
        body.pop()
    rest = total - shown
    if cut:
        body.append(f"[Output cut at {MAX_OUTPUT_CHARS:,} characters; {rest} more {unit} not "
                    f"shown. Use head_limit or narrow path, glob or type.]")
    elif rest:
        body.append(f"[Showing the first {shown} of {total} {unit}; raise head_limit or narrow "
                    f"path, glob or type to see the rest.]")
    body.extend(result.notes)
    return "\n".join(body)


def _content_lines(files: list[FileMatches], display: Callable[[str], str], query: Query) -> Iterator[str]:
    has_context = bool(query.before or query.after)
    first = True
    for f in files:
        shown = display(f.rel)
        if has_context and not first:
            yield "--"
        first = False
        if f.binary:
            yield f"Binary file {shown} matches"
            continue
        previous = None
        for raw in f.lines:
            line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            digits = len(line) - len(line.lstrip("0123456789"))
            number, mark, text = int(line[:digits]), line[digits], line[digits + 1:].removesuffix("\r")
            if has_context and previous is not None and number > previous + 1:
                yield "--"
            previous = number
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + f"… [{len(text) - MAX_LINE_CHARS} more characters]"
            yield f"{shown}{mark}{number}{mark}{text}"


def _printable(path: str) -> str:
    # Undecodable file names arrive with surrogate escapes, which no transcript accepts.
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# --------------------------------------------------------------------------- tool

class GrepTool(RgSearchTool[GrepInput]):
    name = "grep"
    description = (
        "Search file contents with a regular expression (ripgrep). Skips files ignored by "
        ".gitignore, the .git folder and binary files. Default output lists matching files; "
        "use output_mode='content' for matching lines (with context/before/after lines) or "
        "'count' for per-file counts. Narrow big searches with path, glob or type, and "
        "head_limit. Prefer this over running grep or rg through bash."
    )
    input_model = GrepInput
    guidance = (
        "grep searches file contents with a regular expression (ripgrep syntax, "
        '.gitignore honoured). output_mode "files_with_matches" (default) lists paths, '
        '"content" shows path:line:text, "count" counts; narrow it with path, glob or '
        "type.")

    async def run(self, args: GrepInput, ctx: ToolContext) -> ToolOutput:
        try:
            check_pattern(args.pattern)
            if args.glob:
                check_pattern(args.glob, "glob")
            root = resolve_path(ctx, args.path)
        except ToolError as error:
            return ToolOutput(str(error), is_error=True)
        if not root.exists():
            return ToolOutput(f"Path not found: {args.path}", is_error=True)
        if not (root.is_dir() or root.is_file()):
            return ToolOutput(f"Not a file or folder: {args.path}", is_error=True)
        try:
            query = Query.from_input(args)
        except ValueError as exc:
            return ToolOutput(f"Invalid glob: {exc}", is_error=True)
        where = ctx.workspace.relative(root)
        try:
            result = None
            if self.rg is not None:
                try:
                    result = await search_with_rg(self.rg, root, query, ctx.cancel)
                except OSError:
                    self.rg = None  # the binary cannot run here: use the fallback from now on
            if result is None:
                # The walker goes by path: it can only check that no folder became a symlink so far.
                with pinned_folder(root if root.is_dir() else root.parent, where):
                    pass
                result = await _in_thread(root, query, ctx)
        except (SearchError, ToolError) as exc:
            return ToolOutput(str(exc), is_error=True)
        except SearchCancelled:
            return ToolOutput("Search aborted.", is_error=True)
        if ctx.cancel.cancelled:
            return ToolOutput("Search aborted.", is_error=True)

        searched_file = root.is_file()
        ruled_out = RuledOut(ctx, self.name)
        if ruled_out.active:
            result.files = [f for f in result.files
                            if ruled_out.keeps(root if searched_file else root / f.rel)]
            note = ruled_out.search_note()
            if note:
                result.notes.append(note)

        def display(rel: str) -> str:
            if searched_file:
                return _printable(where)
            return _printable(rel if where == "." else f"{where}/{rel}")

        return ToolOutput(render(result, query, display, args.head_limit, where))


async def _in_thread(root: Path, query: Query, ctx: ToolContext) -> SearchResult:
    stop = threading.Event()
    try:
        return await asyncio.to_thread(
            search_with_python, root, query, lambda: stop.is_set() or ctx.cancel.cancelled)
    finally:
        # Cancelling the awaiting task does not stop a thread; this flag does.
        stop.set()
