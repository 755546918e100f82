"""grep: output modes, filters, errors; the rg engine and the Python fallback must agree."""

from __future__ import annotations

import codecs
import subprocess
from pathlib import Path

import pytest

from builtin_tools._files.rg import find_rg
from builtin_tools._grep_fallback import FILE_TYPES
from builtin_tools.grep import MAX_LINE_CHARS, GrepInput, GrepTool
from loom_engine.permissions.targets import FileAccess
from loom_engine.tools.base import ToolOutput

RG = find_rg()
needs_rg = pytest.mark.skipif(RG is None, reason="the rg binary is not installed")

APP = """\
import os

def main():
    print("Hello")
    return helper(1)

def helper(x):
    # TODO: fix
    return x + 1
"""


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture(params=["rg", "python"])
def tool(request: pytest.FixtureRequest) -> GrepTool:
    if request.param == "rg":
        if RG is None:
            pytest.skip("the rg binary is not installed")
        return GrepTool()
    return GrepTool(use_rg=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {
        ".gitignore": "ignored/\n*.log\n!keep.log\n",
        "src/app.py": APP,
        "src/util.py": 'def helper2():\n    return "hello world"\n',
        "src/web/index.ts": "export function main(): void {}\n",
        "docs/guide.md": "# Guide\nCall main() to start.\n",
        "ignored/secret.py": "def main(): pass\n",
        "debug.log": "main log\n",
        "keep.log": "main kept\n",
        ".env": "MAIN=1\n",
        ".git/main.txt": "main\n",
        "bin.dat": b"main\0\x01\x02",
        "crlf.txt": b"alpha\r\nmain line\r\nomega\r\n",
        "latin.txt": b"caf\xe9 main\n",
    })
    return tmp_path


async def grep(tool, make_ctx, call_tool, root, **arguments):  # type: ignore[no-untyped-def]
    return await run(tool, make_ctx(root), arguments)


async def run(tool: GrepTool, ctx, arguments: dict) -> ToolOutput:  # type: ignore[no-untyped-def]
    # Not the shared call_tool fixture: its `context` parameter clashes with grep's.
    return await tool.run(GrepInput.model_validate(arguments), ctx)


# --------------------------------------------------------------------------- output modes

async def test_files_with_matches_is_the_default(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main")
    assert not out.is_error
    # Not: debug.log and ignored/ (.gitignore), bin.dat (binary), .git/, .env (case).
    assert out.content.splitlines() == [
        "Found 6 files", "crlf.txt", "docs/guide.md", "keep.log", "latin.txt", "src/app.py",
        "src/web/index.ts",
    ]


async def test_content_mode_shows_path_line_and_text(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern=r"def \w+", glob="*.py",
                     output_mode="content")
    assert out.content.splitlines() == [
        "src/app.py:3:def main():",
        "src/app.py:7:def helper(x):",
        "src/util.py:1:def helper2():",
    ]


async def test_context_lines_and_group_separators(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="TODO|import", path="src/app.py",
                     output_mode="content", context=1)
    assert out.content.splitlines() == [
        "src/app.py:1:import os",
        "src/app.py-2-",
        "--",
        "src/app.py-7-def helper(x):",
        "src/app.py:8:    # TODO: fix",
        "src/app.py-9-    return x + 1",
    ]


async def test_before_and_after_override_context(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="TODO", output_mode="content",
                     context=5, before=1, after=0)
    assert out.content.splitlines() == [
        "src/app.py-7-def helper(x):",
        "src/app.py:8:    # TODO: fix",
    ]


async def test_separators_between_files_with_context(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="helper", type="py",
                     output_mode="content", after=1)
    assert out.content.splitlines() == [
        "src/app.py:5:    return helper(1)",
        "src/app.py-6-",
        "src/app.py:7:def helper(x):",
        "src/app.py-8-    # TODO: fix",
        "--",
        "src/util.py:1:def helper2():",
        'src/util.py-2-    return "hello world"',
    ]


async def test_count_mode_counts_matching_lines(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="helper", output_mode="count")
    assert out.content.splitlines() == [
        "Found 3 matching lines in 2 files", "src/app.py:2", "src/util.py:1"]


async def test_case_insensitive(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="hello", case_insensitive=True)
    assert out.content.splitlines() == ["Found 2 files", "src/app.py", "src/util.py"]
    out = await grep(tool, make_ctx, call_tool, repo, pattern="hello")
    assert out.content.splitlines() == ["Found 1 file", "src/util.py"]


async def test_multiline_matches_span_lines(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern=r"def main\(\):\n\s+print",
                     multiline=True, output_mode="content")
    assert out.content.splitlines() == ["src/app.py:3:def main():", 'src/app.py:4:    print("Hello")']
    out = await grep(tool, make_ctx, call_tool, repo, pattern=r"helper.*?TODO", multiline=True,
                     output_mode="count")
    assert out.content.splitlines() == ["Found 4 matching lines in 1 file", "src/app.py:4"]


# --------------------------------------------------------------------------- filters

async def test_glob_and_type_filters(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", type="ts")
    assert out.content.splitlines() == ["Found 1 file", "src/web/index.ts"]
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", glob="src/**")
    assert out.content.splitlines() == ["Found 2 files", "src/app.py", "src/web/index.ts"]
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", glob="*.{md,ts}")
    assert out.content.splitlines() == ["Found 2 files", "docs/guide.md", "src/web/index.ts"]
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", glob="!*.txt")
    assert out.content.splitlines() == [
        "Found 4 files", "docs/guide.md", "keep.log", "src/app.py", "src/web/index.ts"]
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", type="py", glob="web/*")
    assert out.content == "No matches for 'main' in .."


async def test_a_glob_filter_never_brings_back_ignored_files(tool, make_ctx, call_tool, repo):
    # rg's own --glob would list debug.log (ignored by `*.log`) and ignored/secret.py.
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", glob="*.log")
    assert out.content.splitlines() == ["Found 1 file", "keep.log"]
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", glob="*.py",
                     output_mode="content")
    assert out.content == "src/app.py:3:def main():"


async def test_a_subfolder_search_reports_workspace_relative_paths(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", path="src",
                     output_mode="content")
    assert out.content.splitlines() == [
        "src/app.py:3:def main():", "src/web/index.ts:1:export function main(): void {}"]


async def test_explicit_paths_are_searched_even_when_ignored(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", path="ignored/secret.py",
                     output_mode="content")
    assert out.content == "ignored/secret.py:1:def main(): pass"
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", path="ignored")
    assert out.content.splitlines() == ["Found 1 file", "ignored/secret.py"]


async def test_binary_files_are_skipped_unless_named(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", path="bin.dat",
                     output_mode="content")
    assert out.content == "Binary file bin.dat matches"
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", path="bin.dat")
    assert out.content.splitlines() == ["Found 1 file", "bin.dat"]


async def test_crlf_and_invalid_utf8_lines_display_cleanly(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", glob="*.txt",
                     output_mode="content")
    assert out.content.splitlines() == ["crlf.txt:2:main line", "latin.txt:1:caf\ufffd main"]


async def test_line_end_anchor_works_on_crlf_files(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main line$", output_mode="content")
    assert out.content == "crlf.txt:2:main line"
    out = await grep(tool, make_ctx, call_tool, repo, pattern="line\\r")
    assert out.is_error and "carriage return" in out.content and "\n" not in out.content


async def test_byte_order_marks_are_decoded(tool, make_ctx, call_tool, tmp_path):
    write_tree(tmp_path, {
        "u8.txt": codecs.BOM_UTF8 + b"hello bom\n",
        "u16.txt": "hello sixteen\n".encode("utf-16"),
    })
    out = await grep(tool, make_ctx, call_tool, tmp_path, pattern="^hello", output_mode="content")
    assert out.content.splitlines() == ["u16.txt:1:hello sixteen", "u8.txt:1:hello bom"]


async def test_pattern_starting_with_a_dash(tool, make_ctx, call_tool, tmp_path):
    write_tree(tmp_path, {"a.txt": "x --verbose y\n"})
    out = await grep(tool, make_ctx, call_tool, tmp_path, pattern="--verbose", output_mode="content")
    assert out.content == "a.txt:1:x --verbose y"


async def test_symlinks_are_not_followed_unless_named(tool, make_ctx, call_tool, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("needle\n")
    ws = tmp_path_factory.mktemp("ws")
    (ws / "own.txt").write_text("needle\n")
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside)
    out = await grep(tool, make_ctx, call_tool, ws, pattern="needle")
    assert out.content.splitlines() == ["Found 1 file", "own.txt"]
    # Named explicitly, a link is resolved like any path (the permission check sees that).
    out = await grep(tool, make_ctx, call_tool, ws, pattern="needle", path="link.txt")
    assert out.content.splitlines() == ["Found 1 file", str(outside / "secret.txt")]


async def test_an_unusable_rg_binary_falls_back_to_python(make_ctx, repo, tmp_path_factory):
    broken = tmp_path_factory.mktemp("bin") / "rg"
    broken.write_bytes(b"\x7fELF not really")
    broken.chmod(0o755)
    tool = GrepTool(str(broken))
    out = await run(tool, make_ctx(repo), {"pattern": "helper", "output_mode": "count"})
    assert out.content.splitlines()[0] == "Found 3 matching lines in 2 files"
    assert tool.rg is None


# --------------------------------------------------------------------------- limits

async def test_head_limit_keeps_the_first_entries_with_a_note(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", head_limit=2)
    lines = out.content.splitlines()
    assert lines[:3] == ["Found 6 files", "crlf.txt", "docs/guide.md"]
    assert lines[3] == ("[Showing the first 2 of 6 files; raise head_limit or narrow path, glob "
                        "or type to see the rest.]")
    out = await grep(tool, make_ctx, call_tool, repo, pattern="e", path="src/app.py",
                     output_mode="content", head_limit=1)
    assert out.content.splitlines()[0] == "src/app.py:3:def main():"
    assert "first 1 of" in out.content


async def test_long_lines_are_cut(tool, make_ctx, call_tool, tmp_path):
    write_tree(tmp_path, {"min.js": "x" * 2000 + "needle\n"})
    out = await grep(tool, make_ctx, call_tool, tmp_path, pattern="needle", output_mode="content")
    assert out.content == "min.js:1:" + "x" * MAX_LINE_CHARS + "… [1506 more characters]"


async def test_huge_output_is_cut_with_a_note(tool, make_ctx, call_tool, tmp_path):
    write_tree(tmp_path, {"big.txt": "match this line please\n" * 5000})
    out = await grep(tool, make_ctx, call_tool, tmp_path, pattern="match", output_mode="content")
    assert len(out.content) < 31_000
    assert out.content.splitlines()[0] == "big.txt:1:match this line please"
    assert "[Output cut at 30,000 characters;" in out.content.splitlines()[-1]


@needs_rg
async def test_runaway_rg_output_is_stopped_with_a_note(make_ctx, call_tool, tmp_path, monkeypatch):
    monkeypatch.setattr("builtin_tools._grep_rg.MAX_RG_BYTES", 20_000)
    write_tree(tmp_path, {f"f{i:02d}.txt": "match this line please\n" * 200 for i in range(20)})
    out = await grep(GrepTool(), make_ctx, call_tool, tmp_path, pattern="match", output_mode="content")
    lines = out.content.splitlines()
    assert lines[-1].startswith("The search produced too much output and was stopped early")
    # Only whole lines of the files rg had printed are shown, none cut mid-way.
    assert all(line.endswith(":match this line please") for line in lines[:-1])


# --------------------------------------------------------------------------- errors

async def test_no_match_is_not_an_error(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="zebra", path="src")
    assert not out.is_error
    assert out.content == "No matches for 'zebra' in src."


async def test_invalid_regex_is_a_one_line_error(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="foo(")
    assert out.is_error
    assert out.content.startswith("Invalid regex 'foo(': ")
    assert "\n" not in out.content


async def test_line_break_needs_multiline(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main\\n")
    assert out.is_error and "set multiline=true" in out.content and "\n" not in out.content


async def test_unknown_type_is_an_error(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="main", type="klingon")
    assert out.is_error
    assert out.content.startswith("Unknown file type 'klingon'.")


async def test_missing_path_is_an_error(tool, make_ctx, call_tool, repo):
    out = await grep(tool, make_ctx, call_tool, repo, pattern="x", path="nope")
    assert out.is_error and out.content == "Path not found: nope"


async def test_aborted_search(tool, make_ctx, call_tool, repo):
    ctx = make_ctx(repo)
    ctx.cancel.cancel()
    out = await call_tool(tool, ctx, pattern="main")
    assert out.is_error and out.content == "Search aborted."


def test_arguments_are_validated():
    with pytest.raises(ValueError):
        GrepInput(pattern="x", output_mode="lines")
    with pytest.raises(ValueError):
        GrepInput(pattern="x", head_limit=0)
    with pytest.raises(ValueError):
        GrepInput(pattern="x", context=-1)


# --------------------------------------------------------------------------- engines agree

CORPUS = {
    ".gitignore": "*.log\n!keep.log\nbuild/\ndocs/*.md\n!docs/README.md\n",
    "src/.gitignore": "!x.log\ngenerated/\n",
    "src/main.py": APP,
    "src/x.log": "error: main failed\nwarning: retry\n",
    "src/generated/out.py": "def main(): ...\n",
    "src/pkg/__init__.py": "from .core import main\n__all__ = ['main']\n",
    "src/pkg/core.py": "def main(argv=None):\n    '''Run.'''\n    return 0\n\n\nclass Main:\n    pass\n",
    "src/web/app.ts": "export const main = () => 1;\nfunction helper() { return main(); }\n",
    "src/web/app.tsx": "export default function Main() { return <div/>; }\n",
    "build/out.js": "main()\n",
    "docs/README.md": "# Main\nSee main.\n",
    "docs/other.md": "main\n",
    "docs/sub/deep.md": "main again\nand again\n",
    "Makefile": "all:\n\tpython -m main\n",
    "keep.log": "MAIN\nmain\n",
    "a.log": "main\n",
    ".hidden/conf.yml": "main: true\n",
    "notes.txt": "line one\nline two main\n\nline four\nmain five\nsix\nseven\neight main\n",
    "bin.dat": b"main\0binary",
    "crlf.txt": b"main\r\nnot\r\nmain again\r\n",
    "latin1.txt": b"\xe9t\xe9 main\n",
    "empty.txt": "",
}

QUERIES = [
    {"pattern": "main"},
    {"pattern": "main", "output_mode": "content"},
    {"pattern": "main", "output_mode": "count"},
    {"pattern": "main", "output_mode": "content", "context": 2},
    {"pattern": "main", "output_mode": "content", "before": 1, "after": 3},
    {"pattern": "MAIN", "case_insensitive": True, "output_mode": "content"},
    {"pattern": r"^\s*def \w+\(", "output_mode": "content"},
    {"pattern": r"main\(\)", "type": "py"},
    {"pattern": "main", "type": "ts", "output_mode": "content"},
    {"pattern": "main", "type": "make", "output_mode": "content"},
    {"pattern": "main", "glob": "*.{ts,tsx}", "output_mode": "count"},
    {"pattern": "main", "glob": "src/**/*.py", "output_mode": "content"},
    {"pattern": "main", "glob": "!*.py"},
    {"pattern": "main", "path": "src"},
    {"pattern": "main", "path": "docs", "output_mode": "content"},
    {"pattern": "main", "path": "build", "output_mode": "content"},
    {"pattern": "main", "path": "notes.txt", "output_mode": "content", "context": 1},
    {"pattern": "main", "path": "bin.dat", "output_mode": "count"},
    {"pattern": r"def main\(.*\):\n\s+'''", "multiline": True, "output_mode": "content"},
    {"pattern": r"main.*?five", "multiline": True, "output_mode": "count"},
    {"pattern": r"class \w+:\n\s+pass", "multiline": True},
    {"pattern": "main$", "output_mode": "content"},
    {"pattern": "", "path": "notes.txt", "output_mode": "count"},
    {"pattern": "main", "output_mode": "content", "head_limit": 5},
    {"pattern": r"\bmain\b", "output_mode": "count", "head_limit": 3},
]


@needs_rg
@pytest.mark.parametrize("query", QUERIES, ids=[str(i) for i in range(len(QUERIES))])
async def test_rg_and_fallback_give_identical_answers(make_ctx, call_tool, tmp_path, query):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, CORPUS)
    fast = await run(GrepTool(), make_ctx(tmp_path), query)
    slow = await run(GrepTool(use_rg=False), make_ctx(tmp_path), query)
    assert fast == slow
    assert not fast.is_error


@needs_rg
def test_fallback_type_table_matches_ripgrep():
    assert RG is not None
    listing = subprocess.run([RG, "--no-config", "--type-list"], capture_output=True, text=True,
                             check=True).stdout
    rg_types = {}
    for line in listing.splitlines():
        name, _, globs = line.partition(": ")
        rg_types[name] = tuple(g.strip() for g in globs.split(","))
    for name, globs in FILE_TYPES.items():
        assert rg_types.get(name) == globs, name


def test_tool_contract(ctx):
    tool = GrepTool(use_rg=False)
    assert tool.name == "grep" and tool.is_read_only and tool.is_concurrency_safe
    args = GrepInput(pattern="x", path="src")
    # Resolved once for the call: the folder checked is the folder searched.
    assert tool.permission_target(args, ctx) == FileAccess(paths=(str(ctx.workspace.root / "src"),), write=False)
    schema = GrepInput.model_json_schema()
    assert list(schema["properties"]) == [
        "pattern", "path", "glob", "type", "output_mode", "case_insensitive", "context",
        "before", "after", "multiline", "head_limit"]
    assert all(p.get("description") for p in schema["properties"].values())
    assert GrepTool().rg == RG


@needs_rg
async def test_a_users_ripgrep_config_does_not_change_results(make_ctx, call_tool, repo,
                                                             tmp_path_factory, monkeypatch):
    config = tmp_path_factory.mktemp("cfg") / "ripgreprc"
    config.write_text("--ignore-case\n--no-ignore\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    out = await call_tool(GrepTool(), make_ctx(repo), pattern="hello")
    assert out.content.splitlines() == ["Found 1 file", "src/util.py"]
