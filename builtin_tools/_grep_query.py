"""What grep's two engines share: the model's input, the validated query, the results, and
the errors the model can fix (a bad regex or file type), worded the same by both engines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from ._files.globs import PathGlob

OutputMode = Literal["content", "files_with_matches", "count"]


class GrepInput(BaseModel):
    pattern: str = Field(description=(
        "Regular expression (ripgrep/Rust syntax). Escape regex characters to match them "
        "literally, e.g. `def foo\\(` or `interface\\{\\}`."))
    path: str = Field(".", description=(
        "File or folder to search, absolute or relative to the workspace root."))
    glob: str | None = Field(None, description=(
        "Only search files matching this glob: `*.py` or `*.{ts,tsx}` match the file name at "
        "any depth, `src/**/*.rs` matches the path under `path`; a leading `!` excludes."))
    type: str | None = Field(None, description=(
        "Only search files of this ripgrep type, e.g. py, js, ts, rust, go, java, md, yaml."))
    output_mode: OutputMode = Field("files_with_matches", description=(
        "files_with_matches: paths of matching files; content: matching lines as "
        "path:line:text (context lines as path-line-text); count: path:matching-line count."))
    case_insensitive: bool = Field(False, description="Ignore case.")
    context: int = Field(0, ge=0, le=100, description=(
        "Lines of context around each match (content mode)."))
    before: int = Field(0, ge=0, le=100, description=(
        "Lines of context before each match (content mode); overrides context."))
    after: int = Field(0, ge=0, le=100, description=(
        "Lines of context after each match (content mode); overrides context."))
    multiline: bool = Field(False, description=(
        "Let matches span lines: `.` also matches newlines and `\\n` can be used."))
    head_limit: int | None = Field(None, ge=1, description=(
        "Return only the first N files, count lines or content lines."))


@dataclass(frozen=True)
class Query:
    """A validated search, the same for both engines."""

    pattern: str
    mode: OutputMode
    ignore_case: bool = False
    before: int = 0
    after: int = 0
    multiline: bool = False
    glob: PathGlob | None = None
    type_name: str | None = None

    @classmethod
    def from_input(cls, args: GrepInput) -> Query:
        glob = PathGlob.compile(args.glob) if args.glob and args.glob.strip() else None
        return cls(
            pattern=args.pattern,
            mode=args.output_mode,
            ignore_case=args.case_insensitive,
            # An explicit before/after wins over context, even an explicit 0.
            before=args.before if "before" in args.model_fields_set else args.context,
            after=args.after if "after" in args.model_fields_set else args.context,
            multiline=args.multiline,
            glob=glob,
            type_name=args.type.strip() if args.type and args.type.strip() else None,
        )


@dataclass(slots=True)
class FileMatches:
    rel: str  # relative to the searched folder; the file name when a file was searched
    count: int = 0  # matching lines (count mode; content mode need not fill it)
    # Content mode: "<number>:<text>" for a matching line, "<number>-<text>" for a
    # context line, as rg prints them. rg's stay bytes: most are never shown.
    lines: list[str] | list[bytes] = field(default_factory=list)
    binary: bool = False


@dataclass
class SearchResult:
    files: list[FileMatches]
    notes: list[str] = field(default_factory=list)


class SearchError(Exception):
    """A problem with the query the model can fix (bad regex, unknown type)."""


def unknown_type_message(name: str) -> str:
    return (f"Unknown file type {name!r}. Use a ripgrep type name such as "
            f"py, js, ts, rust, go, java, c, cpp, md, json, yaml, sh — or the glob argument.")


def carriage_return_message(pattern: str) -> str:
    return (f"Invalid regex {pattern!r}: it contains a carriage return, which a line-by-line "
            f"search never sees (lines end before \\r\\n); set multiline=true to match it.")


def newline_message(pattern: str) -> str:
    return (f"Invalid regex {pattern!r}: it contains a line break, which a line-by-line "
            f"search never matches; set multiline=true to match across lines.")
