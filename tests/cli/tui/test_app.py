"""Pilot tests of the `loom` app against a real Agent (ScriptedProvider, built-in tools)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loom_cli.tui.markdown_stream import MarkdownStream
from loom_cli.tui.permission_prompt import STOPPED_NOTE
from loom_cli.tui.tool_block import ToolBlock
from loom_cli.tui.transcript import Notice, UserMessage, entries_from_messages
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle
from tests.doubles.processes import alive

ANSWER = ("# Plan\n\nThe greeting lives in **src/app.py**; here is the fix:\n\n"
          "```python\ndef greet(name):\n    return f\"hi {name}\"\n```\n\n- first step\n- second step\n\n"
          "1. one\n2. two\n")

READ = {"name": "read_file", "input": {"path": "src/app.py"}}
EDIT = {"name": "edit_file", "input": {"path": "src/app.py", "old_string": "hello", "new_string": "hi"}}


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def blocks(app, kind):
    return list(app.transcript.query(kind))


async def test_streamed_answer_is_rendered(harness: Harness) -> None:
    harness.script = [{"text": ANSWER, "usage": {"input_tokens": 1200, "output_tokens": 80,
                                                  "cache_read_input_tokens": 3600}}]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "explain")
        await wait_idle(pilot, app)
        [user] = blocks(app, UserMessage)
        assert user.text == "explain"
        [answer] = blocks(app, MarkdownStream)
        assert answer.finished
        assert answer.source == ANSWER
        text = answer.plain_text()
        assert "Plan" in text and "#" not in text.splitlines()[0]
        assert "The greeting lives in src/app.py; here is the fix:" in text
        assert 'return f"hi {name}"' in text
        assert "• first step" in text and "1. one" in text and "2. two" in text
        assert "```" not in text
        shown = screen_text(app)
        assert "here is the fix" in shown
        # status bar: tokens in/out, cost, cache hit rate
        assert "↑4.8k ↓80" in shown and "cache 75%" in shown and "claude-sonnet-4-5" in shown


async def test_text_segments_split_at_tool_calls(harness: Harness) -> None:
    harness.mode = "accept-edits"
    harness.script = [{"text": "Reading first.", "tool_calls": [READ]}, {"text": "All done."}]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "go")
        await wait_idle(pilot, app)
        kinds = [type(w).__name__ for w in app.transcript.widgets()]
        assert kinds[-4:] == ["UserMessage", "MarkdownStream", "ToolBlock", "MarkdownStream"]
        first, second = blocks(app, MarkdownStream)
        assert first.source == "Reading first." and second.source == "All done."
        assert first.finished and second.finished


async def test_tool_block_shows_coloured_diff_with_line_numbers(harness: Harness, repo: Path) -> None:
    harness.mode = "accept-edits"
    harness.script = [{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Changed."}]
    app = harness.app()
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "change the greeting")
        await wait_idle(pilot, app)
        assert 'return f"hi {name}"' in (repo / "src" / "app.py").read_text()
        edit = next(b for b in blocks(app, ToolBlock) if b.data.name == "edit_file")
        assert edit.data.status == "done"
        assert edit.data.display and edit.data.display["kind"] == "diff"
        lines = list(edit.view.plain_lines())
        assert lines[0].startswith("✓ edit_file  src/app.py") and "+1 -1" in lines[0]
        removed = next(line for line in lines if "hello" in line)
        added = next(line for line in lines if 'f"hi' in line)
        assert removed.split()[:2] == ["2", "-"]  # old line number, sign
        assert added.split()[:2] == ["2", "+"]  # new line number, sign
        # coloured: the added line carries a background on its code cells
        strip = next(s for s in edit.view._lines if 'f"hi' in s.text)
        assert any(seg.style and seg.style.bgcolor for seg in strip)
        assert "+1 -1" in screen_text(app)


@pytest.mark.parametrize(("keys", "decision", "note", "changed", "stopped"), [
    (["y"], "allow_once", None, True, False),
    (["a"], "allow_session", None, True, False),
    (["p"], "allow_project", None, True, False),
    (["n"], "deny", None, False, True),
    (["d", *"use the helper", "enter"], "deny", "use the helper", False, False),
    (["escape"], "deny", None, False, True),
])
async def test_permission_prompt_answers(harness: Harness, repo: Path, keys, decision, note, changed,
                                         stopped) -> None:
    harness.script = [{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Finished."}]
    app = harness.app()
    original = (repo / "src" / "app.py").read_text()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit it")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        prompt = app.permission_prompt
        assert prompt.request is not None and prompt.request.tool == "edit_file"
        # docked in the input box's place, with the diff of exactly what will happen
        assert not app.prompt.display and app.screen.focused is prompt
        assert "src/app.py" in screen_text(app)
        assert prompt.query("#diff")
        edit_block = next(b for b in blocks(app, ToolBlock) if b.data.name == "edit_file")
        assert edit_block.data.status == "waiting"
        await pilot.press(*keys)
        await wait_idle(pilot, app)
        assert not app.permission_prompt.is_open
        assert app.prompt.display and app.screen.focused is app.prompt
        [(_request_id, answer)] = app.answers
        assert answer is not None and answer.decision == decision and answer.note == note
        agent = harness.agent
        # The engine received it: its effect on disk, on the rules and on the transcript.
        text = (repo / "src" / "app.py").read_text()
        assert (text != original) is changed
        rules = agent.permissions.effective_rules()
        session_rules = [r for r in rules if r[2] == "session"]
        if decision == "allow_session":
            assert ("allow", "edit_file(./src/app.py)", "session") in session_rules
        else:
            assert not session_rules
        if decision == "allow_project":  # handed to the saver the application gave
            assert harness.saved_rules == ["edit_file(./src/app.py)"]
            assert ("allow", "edit_file(./src/app.py)", "saved answers") in rules
        else:
            assert not harness.saved_rules
        assert not (repo / ".loom").exists()  # never written into the workspace
        results = [p for m in agent.messages for p in m.tool_results_parts]
        edit_result = results[-1]
        if decision == "deny":
            # A refusal, never an interruption: the model reads that the edit was not applied.
            assert edit_result.is_error
            assert edit_result.content.startswith("Refused by the user: this call was not run, so nothing it "
                                                  "would have done was applied.")
            assert "nterrupted" not in edit_result.content
            if note:
                assert note in edit_result.content
            assert edit_block.data.status == "denied"
            assert "refused, not run" in screen_text(app)
            if stopped:
                last = agent.messages[-1]
                assert last.meta.get("refused") and "refused a tool call" in last.text
            # Resumed (--continue), the call is drawn refused, not failed nor interrupted.
            [resumed] = [e.tool for e in entries_from_messages(agent.messages)
                         if e.tool is not None and e.tool.name == "edit_file"]
            assert resumed.status == "denied" and resumed.note == (note or "")
            notices = [e.text for e in entries_from_messages(agent.messages) if e.kind == "notice"]
            assert notices == ([f"⏹ {STOPPED_NOTE}"] if stopped else [])
        else:
            assert not edit_result.is_error
            assert edit_block.data.status == "done"
        # Esc and n end the turn: no new request, a note says what to do next.
        finished = any(isinstance(w, MarkdownStream) and w.source == "Finished." for w in app.transcript.widgets())
        assert finished is not stopped
        notices = [n.text for n in app.transcript.query(Notice)]
        assert any("refused, not applied — tell Loom what to do instead" in n for n in notices) is stopped


async def test_permission_prompt_ignores_answer_keys_right_after_opening(harness: Harness, repo: Path) -> None:
    harness.script = [{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Finished."}]
    app = harness.app(permission_guard_s=3600.0)
    original = (repo / "src" / "app.py").read_text()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit it")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        prompt = app.permission_prompt
        assert prompt.has_class("guarded")  # the choices are shown dimmed: not live yet
        await pilot.press("y", "a", "p", "n")  # still typing: none of these may answer
        await pilot.pause()
        assert prompt.is_open and app.answers == []
        assert prompt.ignored_keys == ["y", "a", "p", "n"]
        assert (repo / "src" / "app.py").read_text() == original
        assert app.prompt.text == "" and app.running  # nor land in the input box
        prompt.guard_s = 0.0  # the guard time has passed
        await pilot.press("y")
        await wait_idle(pilot, app)
        assert app.answers[0][1].decision == "allow_once"
        assert (repo / "src" / "app.py").read_text() != original


async def test_bash_permission_shows_the_full_command(harness: Harness, repo: Path) -> None:
    command = "echo hello > out.txt && cat out.txt"
    harness.script = [{"tool_calls": [{"name": "bash", "input": {"command": command}}]}, {"text": "ok"}]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "run it")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        assert command in screen_text(app)
        await pilot.press("y")
        await wait_idle(pilot, app)
        assert (repo / "out.txt").read_text() == "hello\n"
        [bash] = [b for b in blocks(app, ToolBlock) if b.data.name == "bash"]
        assert bash.data.status == "done" and "hello" in bash.data.content


async def test_esc_during_streaming_stops_and_keeps_partial_answer(harness: Harness) -> None:
    slow = "word " * 2000  # 20 s at this pace: Esc always lands mid-stream
    harness.script = [{"text": slow, "chunk_size": 5, "delay": 0.01}, {"text": "Second answer."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "talk")
        await wait_for(pilot, lambda: bool(blocks(app, MarkdownStream)) and
                       len(blocks(app, MarkdownStream)[0].source) > 20)
        await pilot.press("escape")
        # At once: the UI is idle, the partial answer stays, marked interrupted.
        assert not app.running
        [partial] = blocks(app, MarkdownStream)
        assert partial.finished and 0 < len(partial.source) < len(slow)
        assert any("interrupted" in n.text for n in blocks(app, Notice))
        assert app.prompt.has_focus
        await wait_idle(pilot, app)
        shown_len = len(partial.source)
        await pilot.pause(0.1)
        assert len(partial.source) == shown_len  # nothing more arrives after Esc
        partial_messages = [m for m in harness.agent.messages if m.role == "assistant" and m.meta.get("interrupted")]
        # The history keeps what was shown; a chunk already in flight when Esc was
        # pressed may be recorded too (the model did send it), never anything else.
        [kept] = [m.text for m in partial_messages]
        assert kept.startswith(partial.source) and len(kept) - len(partial.source) <= 2 * len("word " * 5)
        # the session goes on
        await send(pilot, "again")
        await wait_idle(pilot, app)
        assert blocks(app, MarkdownStream)[-1].source == "Second answer."


async def test_esc_during_bash_kills_the_process(harness: Harness, repo: Path) -> None:
    harness.mode = "bypass"
    command = "echo $$ > pid.txt; echo started; sleep 30; echo never > after.txt"
    harness.script = [{"tool_calls": [{"name": "bash", "input": {"command": command}}]}, {"text": "next"}]
    app = harness.app(permission_mode="bypass")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "run")
        await wait_for(pilot, lambda: (repo / "pid.txt").exists() and (repo / "pid.txt").read_text().strip() != "")
        [bash] = [b for b in blocks(app, ToolBlock) if b.data.name == "bash"]
        assert bash.running
        await pilot.press("escape")
        assert not app.running and bash.data.status == "interrupted"
        await wait_idle(pilot, app)
        pid = int((repo / "pid.txt").read_text())
        await wait_for(pilot, lambda: not alive(pid))
        assert not (repo / "after.txt").exists()
        assert bash.data.status == "interrupted"
        results = [p for m in harness.agent.messages for p in m.tool_results_parts]
        assert results and results[-1].is_error


async def test_shift_tab_cycles_permission_mode(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        seen = []
        for _ in range(3):
            await pilot.press("shift+tab")
            await pilot.pause()
            seen.append(harness.agent.permissions.mode)
            assert f"{seen[-1]} (shift+tab)" in screen_text(app)
        assert seen == ["accept-edits", "plan", "default"]


async def test_message_typed_while_streaming_is_queued(harness: Harness) -> None:
    harness.gated = True
    harness.script = [{"text": "Answer one."}, {"text": "Answer two."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "first")
        await wait_for(pilot, lambda: bool(blocks(app, MarkdownStream)) and
                       blocks(app, MarkdownStream)[0].source == "Answer one.")
        await send(pilot, "second")
        assert app.running and [d.expanded for d in app.queue] == ["second"]
        app._tick()
        assert "1 queued" in app.activity.message
        assert [u.text for u in blocks(app, UserMessage)] == ["first"]
        harness.providers[-1].gate.set()
        await wait_idle(pilot, app)
        assert [u.text for u in blocks(app, UserMessage)] == ["first", "second"]
        assert blocks(app, MarkdownStream)[-1].source == "Answer two."


async def test_ctrl_c_interrupts_then_needs_two_presses_to_quit(harness: Harness) -> None:
    harness.gated = True
    harness.script = [{"text": "streaming"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "go")
        await wait_for(pilot, lambda: bool(blocks(app, MarkdownStream)))
        assert app.running
        await pilot.press("ctrl+c")
        assert not app.running
        await wait_idle(pilot, app)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running and "again to quit" in app.activity.message
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value == 0


async def test_ctrl_d_quits(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert not app.is_running or app._exit_renderables is not None or app.return_value == 0
    assert app.return_value == 0


async def test_transcript_text_is_selectable(harness: Harness) -> None:
    harness.script = [{"text": "Select **this** text please."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "hi")
        await wait_idle(pilot, app)
        [answer] = blocks(app, MarkdownStream)
        answer.text_select_all()
        await pilot.pause()
        assert app.screen.get_selected_text() == "Select this text please."
        await pilot.press("ctrl+c")  # copies instead of quitting
        assert app.clipboard == "Select this text please."
        assert app.is_running


async def test_thinking_is_dimmed_and_collapsed(harness: Harness) -> None:
    harness.script = [{"thinking": "Let me think about greetings carefully.", "text": "Hi."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "hi")
        await wait_idle(pilot, app)
        from loom_cli.tui.transcript import ThinkingBlock

        [thinking] = blocks(app, ThinkingBlock)
        assert thinking.text == "Let me think about greetings carefully."
        shown = screen_text(app)
        assert "✻ thought (6 words" in shown and "greetings carefully" not in shown
        await pilot.click(ThinkingBlock)
        await pilot.pause()
        assert "greetings carefully" in screen_text(app)


async def test_todo_panel_follows_todo_write(harness: Harness) -> None:
    todos = [{"content": "Read the code", "status": "completed"},
             {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
             {"content": "Run the tests", "status": "pending"}]
    harness.script = [{"tool_calls": [{"name": "todo_write", "input": {"todos": todos}}]}, {"text": "Planned."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "plan")
        await wait_idle(pilot, app)
        shown = screen_text(app)
        assert "Todos 1/3" in shown and "◐ Fix the bug" in shown and "Run the tests" in shown


async def test_provider_error_is_a_one_line_notice(harness: Harness) -> None:
    harness.script = [{"error": {"kind": "auth", "message": "invalid x-api-key"}}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "hi")
        await wait_idle(pilot, app)
        errors = [n for n in blocks(app, Notice) if n.level == "error"]
        assert errors and "invalid x-api-key" in errors[-1].text and "\n" not in errors[-1].text


async def test_agent_factory_failure_is_shown(harness: Harness) -> None:
    def broken(options):
        raise RuntimeError("no API key: set ANTHROPIC_API_KEY")

    app = harness.app(agent_factory=broken)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent_error is not None)
        await pilot.pause()
        assert "cannot start the agent: no API key: set ANTHROPIC_API_KEY" in screen_text(app)
        await send(pilot, "/help")
        await pilot.pause()
        assert "/compact" in screen_text(app)


def test_importing_the_ui_does_not_import_provider_sdks() -> None:
    code = ("import sys; import loom_cli.tui.app; "
            "bad = [m for m in ('anthropic', 'openai', 'loom_engine.agent', 'loom_engine.providers.factory') "
            "if m in sys.modules]; print(bad)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[3])
    assert result.stdout.strip() == "[]"


async def test_memory_is_settled_between_runs(harness: Harness) -> None:
    import gc

    harness.script = [{"text": "one"}]
    app = harness.app(manage_gc=True)
    app.memory.full_collect_every = 1
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.agent is not None)
            await send(pilot, "hi")
            await wait_idle(pilot, app)
            app._settle_memory()
            assert gc.get_freeze_count() > 0  # long-lived objects no longer scanned while streaming
    finally:
        gc.unfreeze()
