"""The docked permission question (pilot tests against a real Agent and the built-in tools)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_cli.tui.tool_block import ToolBlock
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle

READ = {"name": "read_file", "input": {"path": "src/app.py"}}
EDIT = {"name": "edit_file", "input": {"path": "src/app.py", "old_string": "hello", "new_string": "hi"}}
EDIT_AGAIN = {"name": "edit_file", "input": {"path": "src/app.py", "old_string": "hi", "new_string": "hey"}}
LOOP = {"name": "bash", "input": {"command": "for i in 1 2 3; do echo line $i; done"}}


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def test_the_question_is_docked_under_the_transcript_which_stays_in_view(harness: Harness) -> None:
    harness.script = [{"text": "Fixing the operator.", "tool_calls": [READ]}, {"tool_calls": [EDIT]},
                      {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "fix the greeting")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        shown = screen_text(app)
        # No overlay: the user's prompt and what the assistant said are still on screen,
        # above the question, which sits where the input box was.
        assert "fix the greeting" in shown and "Fixing the operator." in shown
        assert app.screen is app.screen_stack[0]
        assert "edit_file wants to change src/app.py" in shown
        lines = shown.splitlines()
        said = next(i for i, line in enumerate(lines) if "Fixing the operator." in line)
        title = next(i for i, line in enumerate(lines) if "wants to change" in line)
        assert said < title
        assert app.permission_prompt.region.y > app.transcript.region.y
        await pilot.press("y")
        await wait_idle(pilot, app)


async def test_pgup_scrolls_the_transcript_while_the_question_waits(harness: Harness) -> None:
    long_answer = "\n\n".join(f"Paragraph {i} of a long explanation." for i in range(60))
    harness.script = [{"text": long_answer}, {"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "explain")
        await wait_idle(pilot, app)
        await send(pilot, "now fix it")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        await wait_for(pilot, lambda: app.transcript.scroll_y > 0)  # following the long answer's bottom
        bottom = app.transcript.scroll_y
        await pilot.press("pageup")
        await wait_for(pilot, lambda: app.transcript.scroll_y < bottom)
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: app.transcript.scroll_y == bottom)
        assert app.permission_prompt.is_open and app.answers == []  # scrolling answers nothing
        # Nothing covers the transcript: a mouse wheel over it reaches it.
        region = app.transcript.region
        hit, _ = app.screen.get_widget_at(region.x + 5, region.y + region.height // 2)
        assert hit is app.transcript or app.transcript in hit.ancestors
        await pilot.press("y")
        await wait_idle(pilot, app)


@pytest.mark.parametrize("width", [50, 60, 120])
async def test_every_choice_is_visible_from_50_columns(harness: Harness, width: int) -> None:
    harness.script = [{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(width, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        await wait_for(pilot, lambda: "d  no, and tell Loom why (it goes on)" in screen_text(app))
        shown = screen_text(app)
        for line in ("y  allow once", "a  allow always this session", "p  allow always in this project",
                     "e  allow all edits this session", "n  no, stop here (esc)",
                     "d  no, and tell Loom why (it goes on)"):
            assert line in shown, (line, shown)
        await pilot.press("y")
        await wait_idle(pilot, app)


async def test_no_always_allow_when_no_rule_can_cover_the_command(harness: Harness) -> None:
    harness.script = [{"tool_calls": [LOOP]}, {"tool_calls": [LOOP]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "count")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        shown = screen_text(app)
        assert "no rule can cover this command" in shown
        assert "allow always" not in shown and "allow all edits" not in shown
        await pilot.press("a")  # not offered: does nothing
        await pilot.pause()
        assert app.answers == []
        await pilot.press("y")
        await wait_for(pilot, lambda: len(app.answers) == 1 and app.permission_prompt.is_open)
        await pilot.press("y")
        await wait_idle(pilot, app)
        assert [a.decision for _id, a in app.answers if a is not None] == ["allow_once", "allow_once"]
        assert not harness.saved_rules


async def test_a_new_file_is_created_not_changed(harness: Harness, repo: Path) -> None:
    write = {"name": "write_file", "input": {"path": "src/new_module.py", "content": "X = 2\n"}}
    harness.script = [{"tool_calls": [write]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "add a module")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        assert "write_file wants to create src/new_module.py" in screen_text(app)
        await pilot.press("y")
        await wait_idle(pilot, app)
        assert (repo / "src" / "new_module.py").read_text() == "X = 2\n"


async def test_allow_all_edits_switches_to_accept_edits(harness: Harness, repo: Path) -> None:
    harness.script = [{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"tool_calls": [EDIT_AGAIN]},
                      {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit twice")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        await pilot.press("e")
        await wait_idle(pilot, app)
        # allowed once, and the second edit was not asked about
        assert [a.decision for _id, a in app.answers if a is not None] == ["allow_once"]
        assert harness.agent.permissions.mode == "accept-edits"
        assert "accept-edits" in screen_text(app)  # the status bar shows it
        assert 'return f"hey {name}"' in (repo / "src" / "app.py").read_text()
        edits = [b for b in app.transcript.query(ToolBlock) if b.data.name == "edit_file"]
        assert [b.data.status for b in edits] == ["done", "done"]


async def test_esc_while_typing_a_note_goes_back_to_the_choices(harness: Harness) -> None:
    harness.script = [{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        await pilot.press("d", *"hmm", "escape")
        await pilot.pause()
        assert app.permission_prompt.is_open and not app.permission_prompt.noting and app.answers == []
        await pilot.press("y")
        await wait_idle(pilot, app)


async def test_arrows_pick_a_choice_and_enter_takes_it(harness: Harness) -> None:
    harness.script = [{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        await pilot.press("down", "down", "up")
        assert "❯ a  allow always this session" in screen_text(app)
        await pilot.press("enter")
        await wait_idle(pilot, app)
        assert [a.decision for _id, a in app.answers if a is not None] == ["allow_session"]


async def test_a_long_diff_scrolls_inside_the_question_and_the_choices_stay_visible(harness: Harness) -> None:
    content = "".join(f"LINE_{i} = {i}\n" for i in range(300))
    write = {"name": "write_file", "input": {"path": "src/big.py", "content": content}}
    harness.script = [{"text": "Writing the table.", "tool_calls": [write]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "make a table")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        # The question and the transcript above it both painted (a loaded machine may paint
        # the question first).
        await wait_for(pilot, lambda: all(part in screen_text(app) for part in (
            "LINE_0 = 0", "y  allow once", "Writing the table.")))
        shown = screen_text(app)
        assert "LINE_0 = 0" in shown and "LINE_299" not in shown  # the top of the diff, capped
        assert "y  allow once" in shown and "d  no, and tell Loom why (it goes on)" in shown
        assert "Writing the table." in shown, shown  # the transcript keeps its place above
        assert app.transcript.region.height >= 8
        await pilot.press("shift+down", "shift+down", "shift+down")
        await pilot.pause()
        assert app.permission_prompt.query_one("#preview").scroll_y > 0  # the preview scrolls
        await pilot.press("y")
        await wait_idle(pilot, app)


async def test_a_click_on_the_transcript_leaves_the_keys_with_the_question(harness: Harness) -> None:
    harness.script = [{"text": "Looking.", "tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        await pilot.click("#transcript", offset=(5, 2))
        await pilot.pause()
        await pilot.press("y")
        await wait_idle(pilot, app)
        assert [a.decision for _id, a in app.answers if a is not None] == ["allow_once"]
