"""glob: pattern semantics, .gitignore, newest-first order, the cap; rg and fallback alike."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builtin_tools._files.rg import find_rg
from builtin_tools.glob import MAX_RESULTS, GlobInput, GlobTool
from loom_engine.permissions.targets import FileAccess

RG = find_rg()


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def set_mtimes(root: Path, rels: list[str]) -> None:
    """Oldest first: each later file is one minute newer."""
    for i, rel in enumerate(rels):
        stamp = 1_700_000_000 + 60 * i
        os.utime(root / rel, (stamp, stamp))


@pytest.fixture(params=["rg", "python"])
def tool(request: pytest.FixtureRequest) -> GlobTool:
    if request.param == "rg":
        if RG is None:
            pytest.skip("the rg binary is not installed")
        return GlobTool()
    return GlobTool(use_rg=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    files = ["a.py", "src/b.py", "src/deep/c.py", "src/d.txt", "build/gen.py", "docs/x.md",
             "keep.log", "skip.log", ".github/ci.yml", "tests/test_a.py"]
    write_tree(tmp_path, {rel: "x\n" for rel in files})
    write_tree(tmp_path, {".gitignore": "build/\n*.log\n!keep.log\n", "src/.gitignore": "deep/\n"})
    set_mtimes(tmp_path, [*files, ".gitignore", "src/.gitignore"])
    (tmp_path / ".git" / "config").write_text("[core]\n")
    return tmp_path


async def test_recursive_pattern_lists_newest_first_and_honours_gitignore(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="**/*.py")
    assert not out.is_error
    # src/deep is ignored by src/.gitignore, build/ by the root one; newest first.
    assert out.content.splitlines() == ["tests/test_a.py", "src/b.py", "a.py"]


async def test_pattern_without_slash_matches_file_names_at_any_depth(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="*.py")
    assert out.content.splitlines() == ["tests/test_a.py", "src/b.py", "a.py"]
    out = await call_tool(tool, make_ctx(repo), pattern="*.{log,yml}")
    assert out.content.splitlines() == [".github/ci.yml", "keep.log"]


async def test_pattern_with_slash_is_anchored_to_the_path(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="src/*")
    assert out.content.splitlines() == ["src/.gitignore", "src/d.txt", "src/b.py"]
    out = await call_tool(tool, make_ctx(repo), pattern="/a.py")
    assert out.content.splitlines() == ["a.py"]


async def test_paths_are_relative_to_the_workspace_root_when_searching_a_subfolder(
        tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="*", path="src")
    assert out.content.splitlines() == ["src/.gitignore", "src/d.txt", "src/b.py"]


async def test_ignored_files_stay_hidden_whatever_the_pattern(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="*.log")
    assert out.content.splitlines() == ["keep.log"]
    write_tree(repo, {"ignored.py/inner.py": "", ".gitignore": "build/\n*.log\n!keep.log\nignored.py/\n"})
    out = await call_tool(tool, make_ctx(repo), pattern="**/*.py")
    assert "ignored.py/inner.py" not in out.content.splitlines()


async def test_git_folder_is_never_listed(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="**/*")
    lines = out.content.splitlines()
    assert not any(line.startswith(".git/") for line in lines)
    assert ".github/ci.yml" in lines  # other hidden folders are listed


async def test_explicit_path_inside_an_ignored_folder_is_listed(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="*.py", path="build")
    assert out.content.splitlines() == ["build/gen.py"]


async def test_symlinks_are_not_followed(tool, make_ctx, call_tool, tmp_path):
    write_tree(tmp_path, {"real/a.py": "", "outside/b.py": ""})
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "ws" / "real.py").symlink_to(tmp_path / "real" / "a.py")
    (tmp_path / "ws" / "own.py").write_text("")
    out = await call_tool(tool, make_ctx(tmp_path / "ws"), pattern="**/*.py")
    assert out.content.splitlines() == ["own.py"]


async def test_cap_keeps_the_newest_and_says_how_many_more(tool, make_ctx, call_tool, tmp_path):
    rels = [f"f{i:03d}.txt" for i in range(MAX_RESULTS + 37)]
    write_tree(tmp_path, {rel: "" for rel in rels})
    set_mtimes(tmp_path, rels)
    out = await call_tool(tool, make_ctx(tmp_path), pattern="*.txt")
    lines = out.content.splitlines()
    assert len(lines) == MAX_RESULTS + 1
    assert lines[0] == rels[-1] and lines[MAX_RESULTS - 1] == rels[37]
    assert "Showing the 200 newest of 237" in lines[-1] and "37 more" in lines[-1]


async def test_equal_mtimes_sort_by_path(tool, make_ctx, call_tool, tmp_path):
    write_tree(tmp_path, {"b.txt": "", "a.txt": "", "c/a.txt": ""})
    for rel in ("b.txt", "a.txt", "c/a.txt"):
        os.utime(tmp_path / rel, (1_700_000_000, 1_700_000_000))
    out = await call_tool(tool, make_ctx(tmp_path), pattern="**/*.txt")
    assert out.content.splitlines() == ["a.txt", "b.txt", "c/a.txt"]


async def test_absolute_pattern_becomes_folder_and_rest(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern=f"{repo}/src/*.py")
    assert out.content.splitlines() == ["src/b.py"]


async def test_no_match_is_not_an_error(tool, make_ctx, call_tool, repo):
    out = await call_tool(tool, make_ctx(repo), pattern="**/*.rs")
    assert not out.is_error
    assert out.content == "No files match '**/*.rs' in .."


@pytest.mark.parametrize(("arguments", "message"), [
    ({"pattern": "*.py", "path": "missing"}, "Path not found: missing"),
    ({"pattern": "*.py", "path": "a.py"}, "Not a folder: a.py"),
    ({"pattern": "  "}, "The pattern is empty"),
])
async def test_bad_arguments_are_clear_errors(tool, make_ctx, call_tool, repo, arguments, message):
    out = await call_tool(tool, make_ctx(repo), **arguments)
    assert out.is_error
    assert out.content.startswith(message)
    assert "\n" not in out.content


async def test_aborted_search_reports_it(tool, make_ctx, call_tool, repo):
    ctx = make_ctx(repo)
    ctx.cancel.cancel()
    out = await call_tool(tool, ctx, pattern="**/*")
    assert out.is_error
    assert out.content == "Search aborted."


@pytest.mark.skipif(RG is None, reason="the rg binary is not installed")
@pytest.mark.parametrize("pattern", ["**/*", "*.py", "src/**", "**/deep/*", "*.{md,yml}", "[ab]*", "!*.py"])
@pytest.mark.parametrize("path", [".", "src", "build"])
async def test_rg_and_fallback_give_identical_answers(make_ctx, call_tool, repo, pattern, path):
    fast = await call_tool(GlobTool(), make_ctx(repo), pattern=pattern, path=path)
    slow = await call_tool(GlobTool(use_rg=False), make_ctx(repo), pattern=pattern, path=path)
    assert fast == slow


async def test_an_unusable_rg_binary_falls_back_to_the_walker(make_ctx, call_tool, repo, tmp_path_factory):
    broken = tmp_path_factory.mktemp("bin") / "rg"
    broken.write_bytes(b"\x7fELF not really")
    broken.chmod(0o755)
    tool = GlobTool(str(broken))
    out = await call_tool(tool, make_ctx(repo), pattern="*.py")
    assert out.content.splitlines() == ["tests/test_a.py", "src/b.py", "a.py"]
    assert tool.rg is None


def test_tool_contract(ctx):
    tool = GlobTool(use_rg=False)
    assert tool.name == "glob" and tool.is_read_only and tool.is_concurrency_safe
    args = GlobInput(pattern="*.py", path="src")
    # Resolved once for the call: the folder checked is the folder searched.
    assert tool.permission_target(args, ctx) == FileAccess(paths=(str(ctx.workspace.root / "src"),), write=False)
    schema = GlobInput.model_json_schema()
    assert set(schema["properties"]) == {"pattern", "path"}
    assert schema["required"] == ["pattern"]
    assert all(p.get("description") for p in schema["properties"].values())
