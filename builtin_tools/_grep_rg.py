"""grep's ripgrep engine: the query as rg arguments, and rg's output read back as results."""

from __future__ import annotations

import re
from pathlib import Path

from loom_engine.execution import CancelToken

from ._files.ignore import IgnoreChecker
from ._files.rg import RG_WALK_ARGS, rg_filter_args, rg_path, rg_paths, run_rg
from ._files.safe_io import pinned_folder
from ._grep_query import (
    FileMatches,
    Query,
    SearchError,
    SearchResult,
    carriage_return_message,
    newline_message,
    unknown_type_message,
)

# rg output beyond this is not read: the answer would be cut far earlier anyway.
MAX_RG_BYTES = 32 * 1024 * 1024


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
        raise SearchError(unknown_type_message(query.type_name or ""))
    if 'literal "\\n" is not allowed' in text:
        raise SearchError(newline_message(query.pattern))
    if 'literal "\\r" is not allowed' in text:
        raise SearchError(carriage_return_message(query.pattern))
    if "regex" in text:
        detail = next((ln.removeprefix("error:").strip() for ln in lines if ln.startswith("error:")),
                      lines[-1].removeprefix("rg: ") if lines else "invalid pattern")
        raise SearchError(f"Invalid regex {query.pattern!r}: {detail}")
    raise SearchError(f"Search failed: {lines[0].removeprefix('rg: ') if lines else 'rg exited with an error'}")
