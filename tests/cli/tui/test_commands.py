"""Slash commands, completion and prompt history."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from loom_cli.slash_commands import ParsedCommand, parse_command
from loom_cli.tui.completion import list_workspace_files, match_files
from loom_cli.tui.markdown_stream import MarkdownStream
from loom_cli.tui.prompt_input import PromptHistory, history_file
from loom_cli.tui.session_picker import SessionPicker
from loom_cli.tui.transcript import Notice, UserMessage
from loom_engine.messages import Message
from loom_engine.skills.catalog import Skill, SkillCatalog
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def outputs(app) -> list[str]:
    return [n.text for n in app.transcript.query(Notice)]


async def started(pilot, app) -> None:
    await wait_for(pilot, lambda: app.agent is not None)


def test_parse_command() -> None:
    assert parse_command("/model claude-opus-4-1") == ParsedCommand("model", "claude-opus-4-1")
    assert parse_command("  /compact keep the API decisions ") == ParsedCommand("compact", "keep the API decisions")
    assert parse_command("/usr/bin/env is broken") is None  # a path is a prompt
    assert parse_command("hello /help") is None
    assert parse_command("/") is None


async def test_help_lists_commands_and_keys(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await started(pilot, app)
        await send(pilot, "/help")
        await pilot.pause()
        text = outputs(app)[-1]
        for name in ("/help", "/clear", "/compact", "/model", "/cost", "/skills", "/resume", "/mode",
                     "/permissions", "/exit", "Shift+Tab", "Esc"):
            assert name in text
        assert "/permissions" in screen_text(app)


async def test_clear_starts_a_new_session(harness: Harness) -> None:
    harness.script = [{"text": "First answer."}, {"text": "After clear."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "hello")
        await wait_idle(pilot, app)
        first_agent = harness.agent
        assert len(first_agent.messages) == 2
        await send(pilot, "/clear")
        await wait_for(pilot, lambda: len(harness.agents) == 2 and app.agent is harness.agents[1])
        await pilot.pause()
        assert not list(app.transcript.query(UserMessage)) and not list(app.transcript.query(MarkdownStream))
        assert "new session started" in outputs(app)
        assert app.agent.messages == ()


async def test_clear_during_a_run_waits_for_its_turn_to_close_not_for_a_timeout(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    # The close timeout is made longer than the wait below: the new session can only
    # arrive in time by the run's end being awaited, not waited out (no clock is read).
    monkeypatch.setattr("loom_cli.tui.app.RUN_CLOSE_TIMEOUT_S", 3600.0)
    harness.gated = True  # the answer streams until the test lets it end: /clear lands mid-run
    harness.script = [{"text": "streaming"}, {"text": "after"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "go")
        await wait_for(pilot, lambda: bool(app.transcript.query(MarkdownStream)))
        await send(pilot, "/clear")
        await wait_for(pilot, lambda: len(harness.agents) == 2 and app.agent is harness.agents[1], timeout=60)
        first = harness.agents[0]
        assert [m.role for m in first.messages][:2] == ["user", "assistant"]
        assert first.messages[1].meta.get("interrupted")  # the old session closed its turn
        assert "new session started" in outputs(app)

async def test_compact_with_focus(harness: Harness) -> None:
    summary = "\n".join(f"## {name}\nnotes" for name in (
        "Background", "Key decisions", "Tool usage", "User intent", "Results", "Errors and fixes",
        "Open issues", "Next steps"))
    answers = [{"text": f"Answer {i}: " + "details about the API design " * 60} for i in range(4)]
    harness.script = [*answers, {"text": summary}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        for i in range(4):
            app.prompt.load_text(f"question {i} " + "about the API " * 40)
            await pilot.press("enter")
            await wait_idle(pilot, app)
        before = len(harness.agent.messages)
        await send(pilot, "/compact keep the API decisions")
        await wait_idle(pilot, app)
        texts = outputs(app)
        assert "compacting the conversation… (focus: keep the API decisions)" in texts
        assert any(t.startswith("context compacted: summarised the earlier conversation") for t in texts), texts
        assert len(harness.agent.messages) < before
        request = harness.providers[-1].last_request
        assert "keep the API decisions" in request.system + str([m.to_dict() for m in request.messages])


async def test_model_shows_and_switches(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "/model")
        await pilot.pause()
        assert "Switch model (now claude-sonnet-4-5)" in screen_text(app)  # the picker
        await pilot.press("escape")
        await pilot.pause()
        await send(pilot, "/model claude-opus-4-1")
        await pilot.pause()
        assert harness.agent.config.model == "claude-opus-4-1"
        assert outputs(app)[-1] == "model switched to claude-opus-4-1"
        assert "claude-opus-4-1 · default" in screen_text(app)


async def test_cost_reports_tokens_and_cost(harness: Harness) -> None:
    harness.script = [{"text": "ok", "usage": {"input_tokens": 2000, "output_tokens": 500,
                                              "cache_read_input_tokens": 6000}}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "hi")
        await wait_idle(pilot, app)
        await send(pilot, "/cost")
        await pilot.pause()
        text = outputs(app)[-1]
        assert text.startswith("Session cost: $")
        assert "input 2.0k · cache read 6.0k" in text and "output 500" in text
        assert "hit rate 75%" in text and "LLM calls 1" in text
        assert app.status.cost_usd > 0


def two_skills() -> SkillCatalog:
    # No source: the line then ends with the description (a source adds "  [project]").
    return SkillCatalog([Skill("release-notes", "Write release notes from git log", Path("r/SKILL.md"), ""),
                         Skill("pdf", "Read and fill PDF forms", Path("p/SKILL.md"), "")])


async def test_skills_lists_the_catalog(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "/skills")
        await pilot.pause()
        assert outputs(app)[-1].startswith("No skills found")
        harness.agent.parts = replace(harness.agent.parts, skills=two_skills())
        await send(pilot, "/skills")
        await pilot.pause()
        text = outputs(app)[-1]
        assert text.splitlines() == ["Skills (2):", "  pdf  Read and fill PDF forms",
                                     "  release-notes  Write release notes from git log"]


@dataclass(frozen=True)
class FakeSession:
    id: str
    first_prompt: str
    prompts: int
    updated: float


async def test_resume_picks_a_session_and_shows_its_history(harness: Harness) -> None:
    harness.sessions = [FakeSession("20250101-120000-abc123", "fix the login bug", 2, 1_735_732_800.0)]
    harness.messages = (Message.user("fix the login bug"), Message.assistant_text("Fixed it in auth.py.")) \
        if hasattr(Message, "assistant_text") else (Message.user("fix the login bug"),
                                                    _assistant("Fixed it in auth.py."))
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "/resume")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker))
        assert "fix the login bug" in screen_text(app) and "20250101-120000-abc123" in screen_text(app)
        assert "2 prompts" in screen_text(app)  # the word /clear and the resumed notice use
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(harness.agents) == 2 and app.agent is harness.agents[1])
        await pilot.pause()
        assert [u.text for u in app.transcript.query(UserMessage)] == ["fix the login bug"]
        assert [m.source for m in app.transcript.query(MarkdownStream)] == ["Fixed it in auth.py."]
        assert app.agent.messages == harness.messages


def _assistant(text: str) -> Message:
    from loom_engine.messages import TextPart

    return Message.assistant(TextPart(text))


async def test_resume_without_sessions_says_so(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "/resume")
        await pilot.pause()
        assert outputs(app)[-1] == "no earlier sessions in this workspace"


async def test_mode_shows_sets_and_rejects(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "/mode")
        await pilot.pause()
        assert outputs(app)[-1].startswith("permission mode: default")
        await send(pilot, "/mode plan")
        await pilot.pause()
        assert harness.agent.permissions.mode == "plan"
        assert "plan (shift+tab)" in screen_text(app)
        await send(pilot, "/mode yolo")
        await pilot.pause()
        assert outputs(app)[-1].startswith("unknown mode 'yolo'")
        assert harness.agent.permissions.mode == "plan"


async def test_permissions_shows_effective_rules(harness: Harness, repo: Path) -> None:
    (repo / ".loom").mkdir()
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        harness.agent.permissions.allow_for_session(["bash(git diff:*)"])
        await send(pilot, "/permissions")
        await pilot.pause()
        # An interactive list by layer (tests/cli/tui/test_permissions_screen.py).
        text = screen_text(app)
        assert "Permissions · mode: default" in text
        assert "this session (your answers)" in text and "allow bash(git diff:*)" in text


async def test_exit_quits(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        await send(pilot, "/exit")
        await pilot.pause()
    assert app.return_value == 0


async def test_unknown_command(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        app.prompt.load_text("/frobnicate now")
        await pilot.press("enter")
        await pilot.pause()
        assert outputs(app)[-1] == "unknown command /frobnicate — /help lists them"
        app.prompt.load_text("/modle")
        await pilot.press("enter")
        await pilot.pause()
        assert outputs(app)[-1] == "unknown command /modle (did you mean /mode or /model?) — /help lists them"
        assert app.agent.messages == ()  # none of them went to the model


async def test_a_path_at_the_start_of_a_prompt_is_sent_to_the_model(harness: Harness) -> None:
    harness.script = [{"text": "Reinstall it."}, {"text": "Clean it."}]
    app = harness.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        for text in ("/usr/bin/foo is broken", "/tmp is full"):
            app.prompt.load_text(text)
            await pilot.press("enter")
            await wait_idle(pilot, app)
        assert [m.text for m in app.agent.messages if m.role == "user"] == ["/usr/bin/foo is broken", "/tmp is full"]
        assert not any("unknown command" in line for line in outputs(app))


# --- completion ------------------------------------------------------------------------


async def test_slash_completion(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await pilot.press("/", "c")
        menu = app.query_one("#completion")
        assert [c.label for c in menu.candidates] == ["/clear", "/compact", "/continue", "/cost"]
        await pilot.press("backspace", *"mode")
        assert [c.label for c in menu.candidates] == ["/mode", "/model"]
        await pilot.press("backspace", "backspace", "backspace", "backspace", "c")
        await pilot.press("down", "tab")
        assert app.prompt.text == "/compact "
        assert not menu.is_open


async def test_at_file_completion_is_gitignore_aware(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await wait_for(pilot, lambda: app._files is not None)
        assert "build/out.txt" not in app._files and "debug.log" not in app._files
        assert {"README.md", "src/app.py", "src/util.py", ".gitignore"} <= set(app._files)
        await pilot.press(*"look at @")
        menu = app.query_one("#completion")
        labels = [c.label for c in menu.candidates]
        assert "src/app.py" in labels and not any("build" in label or ".log" in label for label in labels)
        await pilot.press(*"src/ap")
        assert [c.label for c in menu.candidates] == ["src/app.py"]
        await pilot.press("tab")
        assert app.prompt.text == "look at @src/app.py "
        await pilot.press(*"please")
        assert app.prompt.text == "look at @src/app.py please"
        assert not menu.is_open


def test_file_listing_honours_gitignore_without_running_git(tmp_path: Path) -> None:
    # A .git folder, no `git`: .gitignore applies inside a repository, as for glob
    # (outside one, neither glob nor @ applies it: tests/tui/test_completion_files.py).
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "pkg" / "gen").mkdir()
    (tmp_path / "pkg" / "gen" / "x.py").write_text("")
    (tmp_path / "pkg" / ".gitignore").write_text("gen/\n")
    (tmp_path / "notes.tmp").write_text("")
    (tmp_path / ".gitignore").write_text("*.tmp\n")
    assert list_workspace_files(tmp_path) == [".gitignore", "pkg/.gitignore", "pkg/mod.py"]


def test_file_ranking() -> None:
    files = ["docs/app-guide.md", "src/app.py", "tests/test_app.py", "apple.txt"]
    assert [c.label for c in match_files(files, "app")] == ["apple.txt", "src/app.py", "docs/app-guide.md",
                                                              "tests/test_app.py"]
    assert next(c.label for c in match_files(files, "sap")) == "src/app.py"
    assert match_files(files, "zzz") == []


# --- history ---------------------------------------------------------------------------


async def test_history_up_down_and_persisted(harness: Harness) -> None:
    harness.script = [{"text": "a"}, {"text": "b"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "first prompt")
        await wait_idle(pilot, app)
        await send(pilot, "second prompt")
        await wait_idle(pilot, app)
        await pilot.press(*"draft")
        await pilot.press("up")
        assert app.prompt.text == "second prompt"
        await pilot.press("up")
        assert app.prompt.text == "first prompt"
        await pilot.press("up")
        assert app.prompt.text == "first prompt"
        await pilot.press("down")
        assert app.prompt.text == "second prompt"
        await pilot.press("down")
        assert app.prompt.text == "draft"
    path = history_file(harness.data_dir, harness.workspace)
    assert path.parent == harness.data_dir / "history"
    assert PromptHistory(path).entries == ["first prompt", "second prompt"]
    again = harness.app()
    async with again.run_test(size=(100, 30)) as pilot:
        await started(pilot, again)
        await pilot.press("up")
        assert again.prompt.text == "second prompt"


async def test_multiline_prompt(harness: Harness) -> None:
    harness.script = [{"text": "ok"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await pilot.press(*"line one", "ctrl+j", *"line two", "shift+enter", *"three")
        assert app.prompt.text == "line one\nline two\nthree"
        await pilot.press("up")  # inside a multi-line text Up moves the cursor, not history
        assert app.prompt.text == "line one\nline two\nthree"
        await pilot.press("enter")
        await wait_idle(pilot, app)
        assert [u.text for u in app.transcript.query(UserMessage)] == ["line one\nline two\nthree"]


def test_history_file_is_per_workspace(tmp_path: Path) -> None:
    a = history_file(tmp_path, tmp_path / "one" / "repo")
    b = history_file(tmp_path, tmp_path / "two" / "repo")
    assert a != b and a.name.startswith("repo-") and b.name.startswith("repo-")
    history = PromptHistory(a)
    for i in range(3):
        history.add(f"p{i}")
    history.add("p2")  # repeated: kept once
    a.write_text(a.read_text() + '"torn')  # a crash mid-write
    assert PromptHistory(a).entries == ["p0", "p1", "p2"]
