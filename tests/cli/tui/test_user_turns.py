"""Pilot tests: `!command` in the prompt, and `@file` attachments, as the user sees them."""

from __future__ import annotations

from pathlib import Path

from loom_cli.tui.tool_block import ToolBlock
from loom_cli.tui.transcript import Notice, UserMessage
from loom_cli.tui.user_turns import SHELL_TITLE
from loom_engine.messages import Message, TextPart
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def test_a_bang_prompt_runs_the_command_without_the_model(harness: Harness) -> None:
    harness.script = []  # any request to the model would fail the run
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press("!")
        assert app.prompt.has_class("shell-command") and app.prompt.border_title == SHELL_TITLE
        await pilot.press(*"echo hi", "enter")
        await wait_idle(pilot, app)
        [block] = list(app.transcript.query(ToolBlock))
        assert block.data.name == "bash" and block.data.status == "done"
        assert block.data.content.startswith("hi")
        assert [u.text for u in app.transcript.query(UserMessage)] == ["!echo hi"]
        assert not app.prompt.has_class("shell-command") and app.prompt.border_title is None
        assert "error" not in screen_text(app).lower()
        assert app.agent.messages[-1].meta["user_command"]["command"] == "echo hi"


async def test_an_at_mention_attaches_the_file_and_shows_one_line_for_it(harness: Harness) -> None:
    harness.script = [{"text": "It greets."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("explain @src/app.py")
        await pilot.press("enter")
        await wait_idle(pilot, app)
        assert [u.text for u in app.transcript.query(UserMessage)] == ["explain @src/app.py"]
        assert "📎 src/app.py (2 lines)" in [n.text for n in app.transcript.query(Notice)]
        sent = app.agent.messages[0]
        assert 'def greet(name)' in sent.parts[1].text and sent.parts[0].text == "explain @src/app.py"
        assert "def greet" not in screen_text(app)  # the content goes to the model, not the screen


async def test_a_resumed_session_shows_commands_and_attachments_as_they_were_shown(harness: Harness) -> None:
    harness.messages = [
        Message("user", (TextPart("explain @src/app.py"), TextPart("<attached ...>SECRET CONTENT</attached>")),
                meta={"prompt": "explain @src/app.py",
                      "attachments": [{"path": "src/app.py", "kind": "file", "label": "📎 src/app.py (2 lines)"}]}),
        Message.assistant(TextPart("It greets.")),
        Message.user("[The user ran ...]\n$ echo hi\nhi\nExit code: 0",
                     user_command={"command": "echo hi", "output": "hi\nExit code: 0", "is_error": False}),
    ]
    app = harness.app(continue_session=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and len(list(app.transcript.query(ToolBlock))) == 1)
        assert [u.text for u in app.transcript.query(UserMessage)] == ["explain @src/app.py", "!echo hi"]
        assert "📎 src/app.py (2 lines)" in [n.text for n in app.transcript.query(Notice)]
        [block] = list(app.transcript.query(ToolBlock))
        assert block.data.input == {"command": "echo hi"} and block.data.content.startswith("hi")
        assert "SECRET CONTENT" not in screen_text(app)


async def test_a_bang_command_is_the_users_own_and_runs_without_a_question(harness: Harness, repo: Path) -> None:
    # `touch` writes: the model's bash call would be asked about, the user's own is not.
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "!touch made.txt")
        await wait_idle(pilot, app)
        assert (repo / "made.txt").exists()
        assert not app.permission_queue.asking and app.answers == []
        [block] = list(app.transcript.query(ToolBlock))
        assert block.data.status == "done"
        assert "tell Loom why" not in screen_text(app)


async def test_esc_stops_a_bang_command_and_keeps_what_it_printed(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "!echo started; sleep 30")
        await wait_for(pilot, lambda: any("started" in b.data.live or "started" in b.data.content
                                          for b in app.transcript.query(ToolBlock)))
        await pilot.press("escape")
        await wait_idle(pilot, app)
        recorded = app.agent.messages[-1].meta["user_command"]
        assert "started" in recorded["output"] and "Aborted" in recorded["output"]
        assert "interrupted" in screen_text(app)
