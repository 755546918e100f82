"""Issue 19: the search tools obey the rules for reading the files they find.

With `read(./secrets/**)` denied, grep, glob and ls checked only the folder they were
given: `grep tok- .` printed `secrets/token.txt:1:tok-...`, glob and ls listed the
denied names. Now a file a deny or ask rule covers for reading is left out of every
result (a search cannot stop to ask per file), and the result says that rules left
paths out without naming them. The rules come from the real settings loader, both
`.loom/settings.toml` and Claude Code's `.claude/settings.json`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from builtin_tools.glob import GlobTool
from builtin_tools.grep import GrepTool
from builtin_tools.ls import LsTool
from builtin_tools.read_file import ReadFileTool
from loom_cli.settings import load_settings
from loom_engine.attachments import AttachmentSource, expand_prompt
from loom_engine.execution import CancelToken
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.tools.base import Tool, ToolContext, ToolOutput, ToolSessionState
from loom_engine.tools.registry import ToolRegistry
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

TOKEN = "tok-SECRET123"
SEARCH_NOTE = "[Files that permission rules deny reading, or ask about first, are left out of this search.]"


def _note(count: int) -> str:
    paths = "1 path" if count == 1 else f"{count} paths"
    return f"[{paths} left out: permission rules deny reading them or ask first, and a search cannot ask.]"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _rules(repo: Path, source: str, behavior: str) -> None:
    """A rule for reading ./secrets/**, written where ``source`` keeps its rules."""
    if source == "loom":
        _write(repo / ".loom" / "settings.toml", f'[permissions]\n{behavior} = ["read(./secrets/**)"]\n')
    else:
        _write(repo / ".claude" / "settings.json",
               json.dumps({"permissions": {behavior: ["Read(./secrets/**)"]}}))


@pytest.fixture
def repo(workspace: Path) -> Path:
    _write(workspace / "secrets" / "token.txt", TOKEN + "\n")
    _write(workspace / "secrets" / "deeper" / "key.txt", "tok-DEEPER\n")
    _write(workspace / "notes.txt", "tok-public\n")
    return workspace


def _manager(repo: Path, tmp_path: Path) -> PermissionManager:
    """The rules as the application loads them (the project's deny and ask rules need no trust)."""
    loaded = load_settings(repo, tmp_path / "config" / "config.toml", trusted=False)
    return PermissionManager(Workspace.at(repo), mode="bypass",
                             layers=[RuleLayer(r.source, r.allow, r.deny, r.ask) for r in loaded.rules])


def _ctx(repo: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=Workspace.at(repo), cancel=CancelToken(), state=ToolSessionState(),
                       read_rules=_manager(repo, tmp_path))


async def _call(tool: Tool[Any], ctx: ToolContext, **arguments: Any) -> ToolOutput:
    return await tool.run(tool.input_model.model_validate(arguments), ctx)


def _hides_secrets(text: str) -> None:
    assert TOKEN not in text and "tok-DEEPER" not in text
    assert "token.txt" not in text and "key.txt" not in text and "deeper" not in text


SOURCES = ["loom", "claude"]
ENGINES = {"rg": GrepTool, "python": lambda: GrepTool(use_rg=False)}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("behavior", ["deny", "ask"])
@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
async def test_grep_leaves_out_files_a_rule_covers(repo: Path, tmp_path: Path, source: str, behavior: str,
                                                   engine: str, mode: str) -> None:
    _rules(repo, source, behavior)
    out = await _call(ENGINES[engine](), _ctx(repo, tmp_path), pattern="tok-", path=".", output_mode=mode)
    assert not out.is_error, out.content
    _hides_secrets(out.content)
    assert "notes.txt" in out.content  # what no rule covers is still found
    assert out.content.splitlines()[-1] == SEARCH_NOTE


@pytest.mark.parametrize("engine", list(ENGINES))
async def test_grep_inside_the_covered_folder_finds_nothing(repo: Path, tmp_path: Path, engine: str) -> None:
    """Searching the folder itself: the folder is not covered by `secrets/**`, its files are."""
    _rules(repo, "claude", "deny")
    out = await _call(ENGINES[engine](), _ctx(repo, tmp_path), pattern="tok-", path="secrets",
                      output_mode="content")
    _hides_secrets(out.content)
    assert out.content == f"No matches for 'tok-' in secrets.\n{SEARCH_NOTE}"


async def test_grep_says_nothing_when_no_rule_limits_reading(repo: Path, tmp_path: Path) -> None:
    out = await _call(GrepTool(), _ctx(repo, tmp_path), pattern="tok-", path=".", output_mode="files_with_matches")
    assert out.content.splitlines() == ["Found 3 files", "notes.txt", "secrets/deeper/key.txt", "secrets/token.txt"]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("behavior", ["deny", "ask"])
@pytest.mark.parametrize("use_rg", [True, False], ids=["rg", "walker"])
async def test_glob_leaves_out_names_a_rule_covers(repo: Path, tmp_path: Path, source: str, behavior: str,
                                                   use_rg: bool) -> None:
    _rules(repo, source, behavior)
    out = await _call(GlobTool(use_rg=use_rg), _ctx(repo, tmp_path), pattern="**/*.txt")
    _hides_secrets(out.content)
    assert out.content.splitlines() == ["notes.txt", _note(2)]
    only = await _call(GlobTool(use_rg=use_rg), _ctx(repo, tmp_path), pattern="*.txt", path="secrets")
    assert only.content.splitlines() == ["No files match '*.txt' in secrets.", _note(2)]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("behavior", ["deny", "ask"])
async def test_ls_leaves_out_names_a_rule_covers(repo: Path, tmp_path: Path, source: str, behavior: str) -> None:
    _rules(repo, source, behavior)
    os.symlink("secrets/token.txt", repo / "shortcut")  # a link would show the name it points to
    out = await _call(LsTool(), _ctx(repo, tmp_path), path=".")
    _hides_secrets(out.content)
    assert "  secrets/" in out.content.splitlines()  # the folder itself is not covered, its content is
    assert "  notes.txt" in out.content.splitlines()
    assert "shortcut" not in out.content
    assert out.content.splitlines()[-1] == _note(3)  # token.txt, deeper/ (not entered), the link


async def test_a_folder_attachment_leaves_out_what_a_rule_covers(repo: Path, tmp_path: Path) -> None:
    """`@secrets/` in a prompt lists the folder through ls: the names in it stay out."""
    _rules(repo, "loom", "deny")
    registry = ToolRegistry([LsTool(), ReadFileTool()])
    source = AttachmentSource(workspace=Workspace.at(repo), registry=registry,
                              permissions=_manager(repo, tmp_path), state=ToolSessionState())
    prompt = await expand_prompt("what is in @secrets/ ?", source)
    [attachment] = prompt.attachments
    _hides_secrets(attachment.content)
    assert _note(2) in attachment.content
    assert attachment.label == "📎 secrets/ (folder, 0 entries)"  # the note is no entry


def test_the_manager_answers_for_rules_only(repo: Path, tmp_path: Path) -> None:
    """Only deny and ask rules withhold a path; the mode's default answers do not (a path
    outside the workspace asks by default, yet a search the user allowed there lists it)."""
    _rules(repo, "loom", "deny")
    manager = _manager(repo, tmp_path)
    withheld = manager.withheld_reads("grep")
    assert withheld is not None and manager.withheld_reads("ls") is not None
    assert withheld(repo / "secrets" / "token.txt")
    assert not withheld(repo / "notes.txt")
    assert not withheld(tmp_path / "elsewhere.txt")


def test_no_rule_for_reading_means_nothing_to_check(repo: Path, tmp_path: Path) -> None:
    _write(repo / ".loom" / "settings.toml", '[permissions]\ndeny = ["edit(./secrets/**)"]\n')
    assert _manager(repo, tmp_path).withheld_reads("grep") is None


def test_loom_run_grep_leaves_the_denied_file_out(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """The repro, end to end: `Read(./secrets/**)` denied in .claude/settings.json, bypass mode."""
    _rules(repo, "claude", "deny")
    fake_llm.enqueue(Reply.tool("grep", {"pattern": "tok-", "path": ".", "output_mode": "content"}),
                     Reply.text("done"))
    done = loom(["run", "find the tokens", "--permission-mode", "bypass"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    result = json.dumps(fake_llm.requests[-1].messages[-1])
    _hides_secrets(result)
    assert "notes.txt:1:tok-public" in result
    assert json.dumps(SEARCH_NOTE)[1:-1] in result
