"""ls: the tree layout, what it hides, and the cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools.ls import MAX_ENTRIES, LsInput, LsTool, render_tree
from loom_engine.permissions.targets import FileAccess


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    write_tree(tmp_path, {
        ".gitignore": "*.pyc\nbuild/\n!keep.pyc\n",
        "README.md": "", "src/app.py": "", "src/app.pyc": "", "src/keep.pyc": "",
        "src/util/__init__.py": "", "build/out.o": "", "docs/guide.md": "",
    })
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to("src")
    return tmp_path


async def test_tree_lists_folders_first_and_hides_ignored_entries(make_ctx, call_tool, repo):
    out = await call_tool(LsTool(), make_ctx(repo))
    assert not out.is_error
    assert out.content.splitlines() == [
        "./",
        "  docs/",
        "    guide.md",
        "  empty/",
        "  src/",
        "    util/",
        "      __init__.py",
        "    app.py",
        "    keep.pyc",
        "  .gitignore",
        "  link -> src",
        "  README.md",
    ]


async def test_ignore_patterns_hide_more(make_ctx, call_tool, repo):
    out = await call_tool(LsTool(), make_ctx(repo), ignore=["docs", "*.md", "util/"])
    assert out.content.splitlines() == [
        "./", "  empty/", "  src/", "    app.py", "    keep.pyc", "  .gitignore", "  link -> src"]


async def test_subfolder_header_is_workspace_relative(make_ctx, call_tool, repo):
    out = await call_tool(LsTool(), make_ctx(repo), path="src/util")
    assert out.content.splitlines() == ["src/util/", "  __init__.py"]


async def test_ignored_folder_can_be_listed_explicitly(make_ctx, call_tool, repo):
    out = await call_tool(LsTool(), make_ctx(repo), path="build")
    assert out.content.splitlines() == ["build/", "  out.o"]


async def test_empty_folder(make_ctx, call_tool, repo):
    out = await call_tool(LsTool(), make_ctx(repo), path="empty")
    assert out.content == "empty/\n(empty folder)"


async def test_cap_cuts_the_deepest_level_first_with_notes(make_ctx, call_tool, tmp_path):
    write_tree(tmp_path, {f"d{i:02d}/f{j:02d}.txt": "" for i in range(30) for j in range(50)})
    out = await call_tool(LsTool(), make_ctx(tmp_path))
    lines = out.content.splitlines()
    # All 30 folders, then children in order until 1,000 entries: d00..d18 whole, d19 in part.
    assert sum(1 for line in lines if line.startswith("  d")) == 30
    entries = [line for line in lines[1:] if not line.lstrip().startswith(("…", "["))]
    assert len(entries) == MAX_ENTRIES
    d19 = lines.index("  d19/")
    assert lines[d19 + 20] == "    f19.txt"
    assert lines[d19 + 21] == "    … 30 more"
    assert lines[lines.index("  d29/") + 1] == "    … 50 more"
    assert lines[-1] == ("[Showing 1000 of 1530 entries; deeper levels were cut. List a "
                         "subfolder or add ignore patterns to see more.]")


def test_counting_stops_on_huge_folders(tmp_path):
    write_tree(tmp_path, {f"f{i:02d}.txt": "" for i in range(30)})
    text = render_tree(tmp_path, "./", None, max_entries=5, max_scanned=12)
    assert text.splitlines()[-1].startswith("[Showing 5 of 12+ entries;")


@pytest.mark.parametrize(("path", "message"), [
    ("missing", "Path not found: missing"),
    ("README.md", "Not a folder: README.md"),
])
async def test_bad_paths_are_clear_errors(make_ctx, call_tool, repo, path, message):
    out = await call_tool(LsTool(), make_ctx(repo), path=path)
    assert out.is_error and out.content.startswith(message)


def test_tool_contract(ctx):
    tool = LsTool()
    assert tool.name == "ls" and tool.is_read_only and tool.is_concurrency_safe
    assert tool.permission_target(LsInput(path="src"), ctx) == \
        FileAccess(paths=(str(ctx.workspace.root / "src"),), write=False)
    assert LsInput().ignore == [] and LsInput().path == "."
    schema = LsInput.model_json_schema()
    assert set(schema["properties"]) == {"path", "ignore"}
    assert all(p.get("description") for p in schema["properties"].values())
