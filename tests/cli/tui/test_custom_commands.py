"""Pilot tests: custom commands and skills in the / menu, and what running one shows and sends."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loom_cli.tui.transcript import Notice, UserMessage
from loom_engine.paths import builtin_skills_dir
from loom_engine.skills.catalog import SkillCatalog
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle

FIX = ("---\ndescription: Fix an issue by its number\nargument-hint: [issue]\n---\n"
       "Fix issue #$ARGUMENTS; start with $0.\n")


@pytest.fixture(autouse=True)
def _own_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_CONFIG_DIR", str(tmp_path / "config"))  # not the user's own commands


def _command(root: Path, relative: str, text: str, *, user: bool = False) -> None:
    """A project command, or with ``user`` one in the user's own commands folder."""
    path = (Path(os.environ["LOOM_CONFIG_DIR"]) / "commands" if user else root / ".loom" / "commands") / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _with_skills(harness: Harness) -> Any:
    def factory(options: Any) -> Any:
        agent = harness.factory(options)
        skills = SkillCatalog.discover(options.workspace, user_config_dir=harness.workspace / "none",
                                       builtin_dir=builtin_skills_dir())
        agent.parts = replace(agent.parts, skills=skills)
        return agent
    return factory


async def test_the_menu_lists_custom_commands_and_skills_with_their_descriptions(harness: Harness) -> None:
    _command(harness.workspace, "fix.md", FIX)
    _command(harness.workspace, "git/commit.md", "---\ndescription: Commit staged work\n---\nCommit.\n")
    app = harness.app(agent_factory=_with_skills(harness))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press("/", "f")
        menu = app.query_one("#completion")
        await wait_for(pilot, lambda: menu.is_open)
        fix = next(c for c in menu.candidates if c.label == "/fix")
        assert fix.detail == "Fix an issue by its number  [issue]"
        assert "Fix an issue by its number" in screen_text(app)
        assert "/fix-tests" in [c.label for c in menu.candidates]  # a shipped skill
        await pilot.press("backspace", "c", "o")
        await wait_for(pilot, lambda: "/commit" in [c.label for c in menu.candidates])
        labels = [c.label for c in menu.candidates]
        assert labels == ["/compact", "/continue", "/cost", "/commit", "/git:commit"]  # built-ins first
        await pilot.press("backspace", "backspace", *"git")
        await wait_for(pilot, lambda: [c.label for c in menu.candidates] == ["/git:commit"])


async def test_a_command_shows_what_was_typed_and_sends_its_expansion(harness: Harness) -> None:
    _command(harness.workspace, "fix.md", FIX)
    harness.script = [{"text": "Fixed it."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/fix 123")
        await pilot.press("enter")
        await wait_idle(pilot, app)
        assert [u.text for u in app.transcript.query(UserMessage)] == ["/fix 123"]
        assert "Fixed it." in screen_text(app) and "unknown command" not in screen_text(app)
        sent = app.agent.messages[0]
        assert sent.parts[0].text == "Fix issue #123; start with 123."
        assert "Fix issue #123" not in screen_text(app)  # the expansion is the model's


async def test_slash_commit_runs_the_shipped_skill(harness: Harness) -> None:
    harness.script = [{"text": "Committed."}]
    app = harness.app(agent_factory=_with_skills(harness))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/commit the parser fix")
        await pilot.press("enter")
        await wait_idle(pilot, app)
        assert "unknown command" not in screen_text(app)
        text = app.agent.messages[0].parts[0].text
        assert "# Commit the current changes" in text and text.endswith("ARGUMENTS: the parser fix")


async def test_an_unknown_name_is_still_unknown(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/nosuch thing")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "unknown command /nosuch" in screen_text(app))
        assert app.agent.messages == ()


async def test_a_shell_line_asks_in_the_chat_and_its_output_is_sent(harness: Harness) -> None:
    _command(harness.workspace, "mk.md", "Made: !`touch made.txt && echo created`\n")
    harness.script = [{"text": "ok"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/mk")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        assert "touch made.txt" in screen_text(app)
        await pilot.press("y")
        await wait_idle(pilot, app)
        assert (harness.workspace / "made.txt").exists()
        assert app.agent.messages[0].parts[0].text == "Made: created"


async def test_allowed_tools_are_granted_for_the_commands_turn_only(harness: Harness) -> None:
    _command(harness.workspace, "mk.md", "---\nallowed-tools: Bash(touch made.txt)\n---\nMake the file.\n", user=True)
    call = {"name": "bash", "input": {"command": "touch made.txt"}}
    harness.script = [{"tool_calls": [call]}, {"text": "made"}, {"tool_calls": [call]}, {"text": "again"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/mk")
        await pilot.press("enter")
        await wait_idle(pilot, app)
        assert app.answers == [] and (harness.workspace / "made.txt").exists()
        app.prompt.set_text("make it again")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)  # asked this time
        await pilot.press("y")
        await wait_idle(pilot, app)
        assert len(app.answers) == 1


async def test_a_command_typed_while_the_agent_loads_waits_for_it(harness: Harness) -> None:
    import threading

    _command(harness.workspace, "fix.md", FIX)
    harness.script = [{"text": "Fixed it."}]
    ready = threading.Event()

    def slow(options: Any) -> Any:
        ready.wait(10)
        return harness.factory(options)

    app = harness.app(agent_factory=slow)
    async with app.run_test(size=(100, 30)) as pilot:
        app.prompt.set_text("/fix 7")
        await pilot.press("enter")
        await pilot.pause()
        assert "still loading" not in screen_text(app)
        ready.set()
        await wait_for(pilot, lambda: app.agent is not None and bool(app.agent.messages))
        await wait_idle(pilot, app)
        assert app.agent.messages[0].parts[0].text == "Fix issue #7; start with 7."


async def test_esc_during_a_shell_line_sends_nothing_and_ends_the_grant(harness: Harness) -> None:
    _command(harness.workspace, "slow.md",
             "---\nallowed-tools: Bash(sleep 30)\n---\nWaited: !`sleep 30`\n", user=True)
    harness.script = []  # a request to the model would fail the test
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        rules = app.agent.permissions.effective_rules()
        app.prompt.set_text("/slow")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "sleep 30" in screen_text(app))
        await pilot.press("escape")
        await wait_idle(pilot, app)
        assert app.agent.messages == ()
        assert app.agent.permissions.effective_rules() == rules


async def test_help_lists_custom_commands(harness: Harness) -> None:
    _command(harness.workspace, "fix.md", FIX)
    app = harness.app()
    async with app.run_test(size=(120, 50)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/help")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "/fix  Fix an issue by its number  [issue]" in screen_text(app))


def test_the_reserved_names_are_the_chats_commands() -> None:
    from loom_cli.tui.commands.registry import BUILTIN_NAMES, REGISTRY

    assert BUILTIN_NAMES == {c.name for c in REGISTRY.commands} | {"quit"}


async def test_a_resumed_session_shows_the_command_as_typed(harness: Harness) -> None:
    from loom_engine.commands.invoke import CommandPrompt
    from loom_engine.messages import Message, TextPart

    prompt = CommandPrompt("/fix 123", (), expansion="Fix issue #123; EXPANDED INSTRUCTIONS.", command="fix")
    harness.messages = [prompt.message(), Message.assistant(TextPart("Fixed it."))]
    app = harness.app(continue_session=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and "Fixed it." in screen_text(app))
        assert [u.text for u in app.transcript.query(UserMessage)] == ["/fix 123"]
        assert "EXPANDED INSTRUCTIONS" not in screen_text(app)


async def test_a_project_command_and_the_skill_of_the_same_name_are_both_reached(harness: Harness) -> None:
    # The project's /review hides the shipped review skill from /review; /skill:review runs it.
    _command(harness.workspace, "review.md", "---\ndescription: Review as this team does\n---\nTeam review.\n")
    harness.script = [{"text": "Reviewed by the team's rules."}, {"text": "Reviewed by the skill."}]
    app = harness.app(agent_factory=_with_skills(harness))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/help")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Your commands and skills" in screen_text(app))
        [help_text] = [n.text for n in app.transcript.query(Notice) if "Your commands and skills" in n.text]
        assert "  /review  Review as this team does" in help_text
        assert "  /skill:review  Review the uncommitted changes" in help_text
        for typed in ("/review", "/skill:review src"):
            app.prompt.set_text(typed)
            await pilot.press("enter")
            await wait_idle(pilot, app)
        first, second = (m for m in app.agent.messages if m.role == "user")
        assert first.parts[0].text == "Team review."
        assert "skills/review" in second.parts[0].text and second.parts[0].text.endswith("ARGUMENTS: src")
        assert [u.text for u in app.transcript.query(UserMessage)] == ["/review", "/skill:review src"]
