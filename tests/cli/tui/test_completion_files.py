"""@-completion lists exactly the files glob lists: one walker, one set of ignore rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builtin_tools._files.rg import find_rg
from builtin_tools.glob import GlobTool
from loom_cli.tui.completion import list_workspace_files
from loom_engine.execution import CancelToken
from loom_engine.tools.base import ToolContext, ToolSessionState
from loom_engine.workspace import Workspace


def write(root: Path, rels: list[str]) -> None:
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def git_repository(root: Path) -> None:
    """A repository whose .gitignore hides out/; venv/ and node_modules/ are not ignored
    (the old walker's hard-coded list dropped them) and scratch/ is excluded only by
    .git/info/exclude, which glob does not read (git ls-files did)."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    write(root, ["src/app.py", "out/gen.py", "venv/lib/site.py", "node_modules/pkg/index.js",
                 ".github/ci.yml", "scratch/notes.txt"])
    (root / ".gitignore").write_text("out/\n")
    (root / ".git" / "info" / "exclude").write_text("scratch/\n")


def plain_folder(root: Path) -> None:
    """Not a repository: glob applies no .gitignore here, and lists __pycache__ and .venv."""
    write(root, ["src/app.py", "out/gen.py", ".venv/bin/tool.py", "src/__pycache__/app.pyc"])
    (root / ".gitignore").write_text("out/\n")


async def glob_everything(root: Path, use_rg: bool) -> list[str]:
    tool = GlobTool(use_rg=use_rg)
    ctx = ToolContext(workspace=Workspace.at(root), cancel=CancelToken(), state=ToolSessionState())
    out = await tool.run(tool.input_model.model_validate({"pattern": "**/*"}), ctx)
    assert not out.is_error, out.content
    return sorted(out.content.splitlines())


@pytest.mark.parametrize("engine", ["rg", "python"])
@pytest.mark.parametrize("tree", [git_repository, plain_folder])
async def test_at_completion_and_glob_list_the_same_files(tmp_path: Path, tree, engine: str) -> None:
    if engine == "rg" and find_rg() is None:
        pytest.skip("the rg binary is not installed")
    tree(tmp_path)
    listed = list_workspace_files(tmp_path)
    assert listed == await glob_everything(tmp_path, use_rg=engine == "rg")
    assert "src/app.py" in listed and ".gitignore" in listed


def test_at_completion_skips_the_gitignored_folder_but_not_the_unignored_ones(tmp_path: Path) -> None:
    git_repository(tmp_path)
    assert list_workspace_files(tmp_path) == [
        ".github/ci.yml", ".gitignore", "node_modules/pkg/index.js", "scratch/notes.txt", "src/app.py",
        "venv/lib/site.py"]


def test_at_completion_stops_at_the_file_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import loom_cli.tui.completion as completion

    (tmp_path / ".git").mkdir()
    write(tmp_path, [f"d{i}/f{j}.txt" for i in range(5) for j in range(10)])
    monkeypatch.setattr(completion, "MAX_FILES", 7)
    assert len(list_workspace_files(tmp_path)) == 7


def test_starting_the_ui_does_not_import_the_file_tools() -> None:
    # The walker is imported in the listing thread: the TUI's start-up stays as light as before.
    code = ("import sys; import loom_cli.tui.app; "
            "print([m for m in ('builtin_tools', 'pydantic', 'pathspec') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[3])
    assert result.stdout.strip() == "[]"
