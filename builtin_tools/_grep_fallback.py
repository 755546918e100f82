"""grep's pure-Python engine, for when ripgrep is missing: ripgrep's file types, its regex
dialect translated to Python's ``re``, and a search over the files ``walk`` selects.
"""

from __future__ import annotations

import bisect
import codecs
import re
from collections.abc import Callable
from pathlib import Path

from ._files import limits
from ._files.globs import PathGlob
from ._files.walk import walk
from ._grep_query import (
    FileMatches,
    Query,
    SearchError,
    SearchResult,
    carriage_return_message,
    newline_message,
    unknown_type_message,
)

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


def compile_python_regex(query: Query) -> re.Pattern[str]:
    """The query's pattern in Python's dialect (a few Rust spellings translated)."""
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", query.pattern)
    pattern = re.sub(r"(?<!\\)((?:\\\\)*)\\z", r"\1\\Z", pattern)
    if not query.multiline and ("\n" in pattern or re.search(r"(?<!\\)(?:\\\\)*\\n", pattern)):
        raise SearchError(newline_message(query.pattern))
    if not query.multiline and ("\r" in pattern or re.search(r"(?<!\\)(?:\\\\)*\\r", pattern)):
        raise SearchError(carriage_return_message(query.pattern))
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
        raise SearchError(unknown_type_message(name))
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
