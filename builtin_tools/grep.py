"""grep: regex search with the ripgrep binary, and a pure-Python twin for when it is missing.

Both engines select files with the rules in :mod:`builtin_tools._files.walk` and feed one
formatter, so the model sees the same text either way. Known differences, all at the
edges: the regex dialect (Rust's vs Python's ``re``), invalid UTF-8 (rg never lets
``.`` match it), and files whose first NUL byte lies beyond rg's first 64 KiB buffer
(rg may report the matches before it, the fallback skips the whole file).
"""

from __future__ import annotations

import asyncio
import bisect
import codecs
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from loom_engine.execution import CancelToken
from loom_engine.tools.base import ToolContext, ToolError, ToolOutput

from ._files import limits
from ._files.globs import PathGlob
from ._files.ignore import IgnoreChecker
from ._files.paths import resolve_path
from ._files.rg import RG_WALK_ARGS, SearchCancelled, rg_filter_args, rg_path, rg_paths, run_rg
from ._files.safe_io import pinned_folder
from ._files.walk import walk
from ._search_tool import RgSearchTool, check_pattern

OutputMode = Literal["content", "files_with_matches", "count"]

MAX_OUTPUT_CHARS = 30_000
MAX_LINE_CHARS = 500
# rg output beyond this is not read: the answer would be cut far earlier anyway.
MAX_RG_BYTES = 32 * 1024 * 1024
# rg looks for NUL bytes buffer by buffer; a NUL in its first buffer makes a file
# binary before anything in it is searched.
BINARY_SNIFF_BYTES = 64 * 1024

# ripgrep's definitions (rg --type-list, 14.1.0) of the common types, for the fallback.
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "asm": ("*.S", "*.asm", "*.s"),
    "c": ("*.[chH]", "*.[chH].in", "*.cats"),
    "clojure": ("*.clj", "*.cljc", "*.cljs", "*.cljx"),
    "cmake": ("*.cmake", "CMakeLists.txt"),
    "config": ("*.cfg", "*.conf", "*.config", "*.ini"),
    "cpp": ("*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in",
            "*.cc", "*.cc.in", "*.hh", "*.hh.in", "*.inl"),
    "cs": ("*.cs",),
    "css": ("*.css", "*.scss"),
    "csv": ("*.csv",),
    "dart": ("*.dart",),
    "docker": ("*Dockerfile*",),
    "elixir": ("*.eex", "*.ex", "*.exs", "*.heex", "*.leex", "*.livemd"),
    "erlang": ("*.erl", "*.hrl"),
    "go": ("*.go",),
    "graphql": ("*.graphql", "*.graphqls"),
    "h": ("*.h", "*.hh", "*.hpp"),
    "haskell": ("*.c2hs", "*.cpphs", "*.hs", "*.hsc", "*.lhs"),
    "html": ("*.ejs", "*.htm", "*.html"),
    "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "jinja": ("*.j2", "*.jinja", "*.jinja2"),
    "js": ("*.cjs", "*.js", "*.jsx", "*.mjs", "*.vue"),
    "json": ("*.json", "*.sarif", "composer.lock"),
    "jsonl": ("*.jsonl",),
    "julia": ("*.jl",),
    "jupyter": ("*.ipynb", "*.jpynb"),
    "kotlin": ("*.kt", "*.kts"),
    "less": ("*.less",),
    "lock": ("*.lock", "package-lock.json"),
    "log": ("*.log",),
    "lua": ("*.lua",),
    "make": ("*.mak", "*.mk", "[Gg][Nn][Uu]makefile", "[Gg][Nn][Uu]makefile.am",
             "[Gg][Nn][Uu]makefile.in", "[Mm]akefile", "[Mm]akefile.am", "[Mm]akefile.in"),
    "markdown": ("*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mdx", "*.mkd", "*.mkdn"),
    "md": ("*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mdx", "*.mkd", "*.mkdn"),
    "nix": ("*.nix",),
    "ocaml": ("*.ml", "*.mli", "*.mll", "*.mly"),
    "perl": ("*.PL", "*.perl", "*.pl", "*.plh", "*.plx", "*.pm", "*.t"),
    "php": ("*.php", "*.php3", "*.php4", "*.php5", "*.php7", "*.php8", "*.pht", "*.phtml"),
    "protobuf": ("*.proto",),
    "py": ("*.py", "*.pyi"),
    "python": ("*.py", "*.pyi"),
    "r": ("*.R", "*.Rmd", "*.Rnw", "*.r"),
    "rst": ("*.rst",),
    "ruby": ("*.gemspec", "*.rb", "*.rbw", ".irbrc", "Gemfile", "Rakefile", "config.ru"),
    "rust": ("*.rs",),
    "sass": ("*.sass", "*.scss"),
    "scala": ("*.sbt", "*.scala"),
    "sh": ("*.bash", "*.bashrc", "*.csh", "*.cshrc", "*.ksh", "*.kshrc", "*.sh", "*.tcsh",
           "*.zsh", ".bash_login", ".bash_logout", ".bash_profile", ".bashrc", ".cshrc",
           ".kshrc", ".login", ".logout", ".profile", ".tcshrc", ".zlogin", ".zlogout",
           ".zprofile", ".zshenv", ".zshrc", "bash_login", "bash_logout", "bash_profile",
           "bashrc", "profile", "zlogin", "zlogout", "zprofile", "zshenv", "zshrc"),
    "sql": ("*.psql", "*.sql"),
    "svelte": ("*.svelte",),
    "swift": ("*.swift",),
    "tex": ("*.bib", "*.cls", "*.dtx", "*.ins", "*.ltx", "*.sty", "*.tex"),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.cts", "*.mts", "*.ts", "*.tsx"),
    "typescript": ("*.cts", "*.mts", "*.ts", "*.tsx"),
    "txt": ("*.txt",),
    "vim": ("*.vim", ".gvimrc", ".vimrc", "_gvimrc", "_vimrc", "gvimrc", "vimrc"),
    "vue": ("*.vue",),
    "xml": ("*.dtd", "*.rng", "*.sch", "*.xhtml", "*.xjb", "*.xml", "*.xml.dist", "*.xsd",
            "*.xsl", "*.xslt"),
    "yaml": ("*.yaml", "*.yml"),
    "zig": ("*.zig",),
}


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


# --------------------------------------------------------------------------- rg engine

async def search_with_rg(rg: str, root: Path, query: Query, cancel: CancelToken) -> SearchResult:
    explicit_file = root.is_file()
    cwd, target = (root.parent, root.name) if explicit_file else (root, ".")
    args = [*RG_WALK_ARGS, "--color", "never", "--null", "--with-filename"]
    if query.ignore_case:
        args.append("--ignore-case")
    if query.multiline:
        args += ["--multiline", "--multiline-dotall"]
    else:
        # Lines end before "\r\n" too, so `foo$` finds foo on CRLF files. (In multiline
        # mode rg would also change what `$` means mid-text; Python's re cannot follow.)
        args.append("--crlf")
    recheck_ignored = False
    glob_is_exact = False  # rg's narrowing selects exactly the glob's files
    if not explicit_file:
        if query.type_name:
            args += ["--type", query.type_name]
        elif query.glob is not None:
            narrowing = rg_filter_args(query.glob)
            recheck_ignored, glob_is_exact = narrowing.recheck_ignored, narrowing.exact
            args += narrowing.args
    # Matching lines in multiline mode are counted from content output: rg's own
    # --count counts multi-line match blocks, not lines.
    mode = "content" if query.mode == "count" and query.multiline else query.mode
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count":
        args.append("--count")
    else:
        args.append("--line-number")
        if query.mode == "content" and query.before:
            args += ["--before-context", str(query.before)]
        if query.mode == "content" and query.after:
            args += ["--after-context", str(query.after)]
    args += ["--regexp", query.pattern, "--", target]

    # rg starts in the very folder that was checked, even if its path changed since.
    with pinned_folder(cwd, str(cwd)) as (start, fds):
        run = await run_rg(rg, args, start, cancel, max_bytes=MAX_RG_BYTES, pass_fds=fds)
    if run.returncode == 2 and not run.stdout:
        _raise_rg_error(run.stderr, query)

    stdout = run.stdout
    if run.truncated:  # drop the record rg was writing when it was stopped
        stdout = stdout[:stdout.rfind(b"\0" if mode == "files_with_matches" else b"\n") + 1]
    if mode == "files_with_matches":
        files = [FileMatches(rel) for rel in rg_paths(stdout)]
    elif mode == "count":
        files = []
        for line in stdout.split(b"\n"):
            path, sep, num = line.partition(b"\0")
            if sep and num.strip().isdigit():
                files.append(FileMatches(rg_path(path), count=int(num)))
    else:
        files = _parse_rg_lines(stdout, count_only=query.mode == "count")

    if query.glob is not None and not explicit_file and not glob_is_exact:
        files = [f for f in files if query.glob.matches(f.rel)]
    files = [f for f in files if f.count or f.lines or f.binary or query.mode == "files_with_matches"]
    files.sort(key=_by_rel)
    if recheck_ignored:
        verdicts = IgnoreChecker(root).visible_many([f.rel for f in files])
        files = [f for f, visible in zip(files, verdicts, strict=False) if visible]
    result = SearchResult(files)
    if run.truncated:
        result.notes.append("The search produced too much output and was stopped early; "
                            "results are incomplete. Use a more specific pattern, path, glob or type.")
    elif run.returncode == 2 and run.stderr.strip():
        first = run.stderr.strip().splitlines()[0].removeprefix("rg: ")
        result.notes.append(f"Some files could not be searched ({first}).")
    return result


# Lines without a NUL: rg's notes about binary files, "path: <note>".
_RG_NOTE = re.compile(rb"^([^\x00\n]*?): ((?:binary file matches|WARNING: stopped searching binary file)[^\n]*)$",
                      re.MULTILINE)


def _by_rel(f: FileMatches) -> str:
    return f.rel


def _parse_rg_lines(stdout: bytes, count_only: bool) -> list[FileMatches]:
    """Files and their lines from `rg --null --line-number` output, where each line is
    path NUL number (':' match | '-' context) text. Only the path is split off here:
    a search may print far more lines than will be shown."""
    by_path: dict[bytes, list[bytes]] = {}
    current_path: bytes | None = None
    current: list[bytes] = []
    for line in stdout.split(b"\n"):
        path, sep, rest = line.partition(b"\0")
        if not sep:
            continue  # a note about a binary file (below), or the end of the output
        if path != current_path:  # rg prints a file's lines together
            current_path = path
            current = by_path.setdefault(path, [])
        current.append(rest)
    files = {
        path: FileMatches(rg_path(path), count=len(lines)) if count_only
        else FileMatches(rg_path(path), lines=lines)
        for path, lines in by_path.items()
    }
    if b"binary file" in stdout:
        # An explicit binary file is reported as "binary file matches"; a walked one rg
        # stopped reading at a NUL is dropped (skipped, as in the fallback, rather than
        # shown with part of its matches).
        for m in _RG_NOTE.finditer(stdout):
            raw_path, note = m.groups()
            if note.startswith(b"binary file matches"):
                entry = files.setdefault(raw_path, FileMatches(rg_path(raw_path)))
                entry.binary = True
                entry.count = max(entry.count, 1)
            else:
                files.pop(raw_path, None)
    return list(files.values())


def _raise_rg_error(stderr: str, query: Query) -> None:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    text = " ".join(lines)
    if "unrecognized file type" in text:
        raise SearchError(_unknown_type_message(query.type_name or ""))
    if 'literal "\\n" is not allowed' in text:
        raise SearchError(_newline_message(query.pattern))
    if 'literal "\\r" is not allowed' in text:
        raise SearchError(_carriage_return_message(query.pattern))
    if "regex" in text:
        detail = next((ln.removeprefix("error:").strip() for ln in lines if ln.startswith("error:")),
                      lines[-1].removeprefix("rg: ") if lines else "invalid pattern")
        raise SearchError(f"Invalid regex {query.pattern!r}: {detail}")
    raise SearchError(f"Search failed: {lines[0].removeprefix('rg: ') if lines else 'rg exited with an error'}")


def _unknown_type_message(name: str) -> str:
    return (f"Unknown file type {name!r}. Use a ripgrep type name such as "
            f"py, js, ts, rust, go, java, c, cpp, md, json, yaml, sh — or the glob argument.")


def _carriage_return_message(pattern: str) -> str:
    return (f"Invalid regex {pattern!r}: it contains a carriage return, which a line-by-line "
            f"search never sees (lines end before \\r\\n); set multiline=true to match it.")


def _newline_message(pattern: str) -> str:
    return (f"Invalid regex {pattern!r}: it contains a line break, which a line-by-line "
            f"search never matches; set multiline=true to match across lines.")


# --------------------------------------------------------------------------- fallback engine

def compile_python_regex(query: Query) -> re.Pattern[str]:
    """The query's pattern in Python's dialect (a few Rust spellings translated)."""
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", query.pattern)
    pattern = re.sub(r"(?<!\\)((?:\\\\)*)\\z", r"\1\\Z", pattern)
    if not query.multiline and ("\n" in pattern or re.search(r"(?<!\\)(?:\\\\)*\\n", pattern)):
        raise SearchError(_newline_message(query.pattern))
    if not query.multiline and ("\r" in pattern or re.search(r"(?<!\\)(?:\\\\)*\\r", pattern)):
        raise SearchError(_carriage_return_message(query.pattern))
    flags = re.MULTILINE
    if query.ignore_case:
        flags |= re.IGNORECASE
    if query.multiline:
        flags |= re.DOTALL
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise SearchError(f"Invalid regex {query.pattern!r}: {exc}") from None
    except (OverflowError, RecursionError):
        raise SearchError(f"Invalid regex {query.pattern!r}: too large") from None


def _type_matcher(name: str) -> Callable[[str], bool]:
    globs = FILE_TYPES.get(name)
    if globs is None:
        raise SearchError(_unknown_type_message(name))
    compiled = [PathGlob.compile(g) for g in globs]
    return lambda rel: any(g.matches(rel) for g in compiled)


def decode_text(data: bytes) -> tuple[str, bool]:
    """File bytes as text (BOM-aware, invalid UTF-8 replaced) and whether they are binary."""
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "replace"), False
    if data.startswith(codecs.BOM_UTF16_LE):
        return data[2:].decode("utf-16-le", "replace"), False
    if data.startswith(codecs.BOM_UTF16_BE):
        return data[2:].decode("utf-16-be", "replace"), False
    return data.decode("utf-8", "replace"), b"\0" in data


def search_with_python(
    root: Path, query: Query, cancelled: Callable[[], bool] = lambda: False,
) -> SearchResult:
    rx = compile_python_regex(query)
    explicit_file = root.is_file()
    if explicit_file:
        candidates = [(root.name, root)]
    else:
        keep_type = _type_matcher(query.type_name) if query.type_name else None
        rels = sorted(e.rel for e in walk(root, cancelled=cancelled))
        candidates = [
            (rel, root / rel) for rel in rels
            if (keep_type is None or keep_type(rel))
            and (query.glob is None or query.glob.matches(rel))
        ]
    # A pattern anchored to the whole input cannot be pre-checked on the whole file.
    whole_file_precheck = not query.multiline and not re.search(r"\\[AZz]", query.pattern)
    files: list[FileMatches] = []
    too_big = 0
    for rel, path in candidates:
        if cancelled():
            break
        try:
            # This engine holds a whole file in memory; rg streams, so only it takes huge ones.
            if path.stat().st_size > limits.PYTHON_GREP_MAX_BYTES:
                too_big += 1
                continue
            data = path.read_bytes()
        except OSError:
            continue
        text, binary = decode_text(data)
        if binary and not explicit_file:
            continue
        if whole_file_precheck:
            plain = text.replace("\r\n", "\n") if "\r" in text else text
            if rx.search(plain) is None:
                continue
        found = _search_text(text, rx, query, rel)
        if found is None:
            continue
        if binary:
            found.binary, found.lines = True, []
        files.append(found)
    notes = [f"{too_big} file{'s' if too_big != 1 else ''} over {limits.PYTHON_GREP_MAX_BYTES // 2**20} MB "
             "not searched (without ripgrep installed, grep reads whole files into memory); search them "
             "with bash, e.g. grep -n PATTERN FILE."] if too_big else []
    return SearchResult(files, notes)


def _search_text(text: str, rx: re.Pattern[str], query: Query, rel: str) -> FileMatches | None:
    lines = text.split("\n") if text else []
    if text.endswith("\n"):
        lines.pop()
    matched: set[int] = set()
    if query.multiline:
        starts: list[int] | None = None
        for m in rx.finditer(text):
            if starts is None:
                starts = [0, *(nl.end() for nl in re.finditer("\n", text))]
            first = bisect.bisect_right(starts, m.start()) - 1
            last = bisect.bisect_right(starts, max(m.start(), m.end() - 1)) - 1
            # An empty match after the final newline is on no line at all.
            matched.update(i for i in range(first, last + 1) if i < len(lines))
            if matched and query.mode == "files_with_matches":
                break
    else:
        for i, line in enumerate(lines):
            if rx.search(line.removesuffix("\r")) is not None:
                matched.add(i)
                if query.mode == "files_with_matches":
                    break
    if not matched:
        return None
    result = FileMatches(rel, count=len(matched))
    if query.mode == "content":
        shown: dict[int, bool] = {}
        for i in sorted(matched):
            for j in range(max(0, i - query.before), min(len(lines), i + query.after + 1)):
                shown.setdefault(j, False)
            shown[i] = True
        result.lines = [f"{j + 1}{':' if shown[j] else '-'}{lines[j]}" for j in sorted(shown)]
    return result


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
