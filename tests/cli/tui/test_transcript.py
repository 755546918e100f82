"""Bounded transcript: pruning, resume with a window, load more, scroll anchoring."""

from __future__ import annotations

from textual.app import App, ComposeResult

from loom_cli.tui.markdown_stream import MarkdownStream
from loom_cli.tui.tool_block import ToolBlock
from loom_cli.tui.transcript import LoadMore, Transcript, UserMessage, entries_from_messages
from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from tests.cli.tui.helpers import Harness, wait_for


def conversation(turns: int) -> tuple[Message, ...]:
    messages: list[Message] = []
    for i in range(turns):
        messages.append(Message.user(f"question {i}"))
        call = ToolUsePart(f"call_{i}", "read_file", {"path": f"src/f{i}.py"})
        messages.append(Message.assistant(TextPart(f"Looking at file {i}."), call))
        messages.append(Message.tool_results([ToolResultPart(f"call_{i}", f"     1\tline of f{i}")]))
        messages.append(Message.assistant(TextPart(f"## Answer {i}\n\nFile {i} has **one** line.\n")))
    return tuple(messages)


def test_entries_from_messages() -> None:
    messages = (Message.user("hi"),
                Message.assistant(ThinkingPart("hmm"), TextPart("Let me run it."),
                                  ToolUsePart("c1", "bash", {"command": "ls"}),
                                  ToolUsePart("c2", "bash", {"command": "false"})),
                Message.tool_results([ToolResultPart("c1", "a\nb"), ToolResultPart("c2", "exit 1", is_error=True)]),
                Message.assistant(TextPart("partial"), interrupted=True),
                Message.user("[The user interrupted ...]", interruption=True))
    entries = entries_from_messages(messages)
    assert [(e.kind, e.text) for e in entries] == [
        ("user", "hi"), ("thinking", "hmm"), ("assistant", "Let me run it."), ("tool", ""), ("tool", ""),
        ("assistant", "partial"), ("notice", "⏹ interrupted by user")]
    assert entries[3].tool.status == "done" and entries[3].tool.content == "a\nb"
    assert entries[4].tool.status == "error"
    assert entries[5].interrupted


def test_resumed_edits_get_their_saved_diffs_back() -> None:
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    display = {"kind": "diff", "path": "calc.py", "diff": diff}
    messages = (Message.user("fix"),
                Message.assistant(ToolUsePart("e1", "edit_file", {"path": "calc.py"}),
                                  ToolUsePart("b1", "bash", {"command": "pytest"})),
                Message.tool_results([ToolResultPart("e1", "edited"), ToolResultPart("b1", "1 passed")],
                                     displays={"e1": display}))
    tools = [e.tool for e in entries_from_messages(messages) if e.kind == "tool"]
    assert tools[0].display == display and tools[1].display is None


async def test_resume_mounts_only_the_last_blocks_and_loads_more(harness: Harness) -> None:
    harness.messages = conversation(200)
    app = harness.app(continue_session=True, resume_window=40)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.history_shown_at is not None)
        await pilot.pause()
        transcript = app.transcript
        total = len(transcript.entries)
        assert total >= 800
        assert transcript.mounted_count <= 45
        assert transcript.hidden_count == total - 40 - 1 or transcript.hidden_count >= total - 45
        [more] = list(transcript.query(LoadMore))
        assert str(total - 41) in str(more.render()) or "earlier blocks" in str(more.render())
        assert [u.text for u in transcript.query(UserMessage)][-1] == "question 199"
        before = transcript.mounted_count
        hidden = transcript.hidden_count
        # scrolling up to the top brings back the next batch, keeping the view in place
        transcript.scroll_home(animate=False, immediate=True)
        await wait_for(pilot, lambda: transcript.hidden_count == hidden - transcript.load_step)
        await pilot.pause()
        assert transcript.mounted_count == before + transcript.load_step
        assert transcript.scroll_y > 0
        # and so does a click on the bar
        transcript._loading = True  # hold the scroll trigger so the bar can be clicked
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        transcript._loading = False
        await pilot.click(LoadMore)
        await pilot.pause()
        assert transcript.hidden_count == hidden - 2 * transcript.load_step
        # the new session continues after the history
        assert app.agent.messages == harness.messages


async def test_long_sessions_prune_the_oldest_blocks() -> None:
    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield Transcript(max_mounted=30)

    app = Host()
    async with app.run_test(size=(80, 30)) as pilot:
        transcript = app.query_one(Transcript)
        for i in range(200):
            transcript.add_user(f"prompt {i}")
            stream = transcript.start_assistant()
            stream.append(f"answer {i}")
            stream.finish()
            if i % 20 == 0:
                await pilot.pause()
        await pilot.pause()
        assert len(transcript.entries) == 400
        assert transcript.mounted_count <= 30
        assert len(list(transcript.query(MarkdownStream))) <= 30
        assert list(transcript.query(LoadMore))
        # pruned entries keep their content and come back on demand
        assert transcript.entries[0].text == "prompt 0" and transcript.entries[1].text == "answer 0"
        await transcript.load_more()
        await pilot.pause()
        widgets = transcript.widgets()
        assert isinstance(widgets[0], (UserMessage, MarkdownStream))


async def test_no_pruning_while_the_reader_is_scrolled_up() -> None:
    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield Transcript(max_mounted=20)

    app = Host()
    async with app.run_test(size=(80, 20)) as pilot:
        transcript = app.query_one(Transcript)
        for i in range(15):
            transcript.add_notice(f"line {i}")
        await pilot.pause()
        transcript.scroll_home(animate=False, immediate=True)  # the reader scrolls back
        await pilot.pause()
        assert transcript.scroll_y == 0
        for i in range(15, 40):
            transcript.add_notice(f"line {i}")
        await pilot.pause()
        assert transcript.hidden_count == 0
        assert transcript.scroll_y == 0  # not yanked down by new output
        transcript.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        transcript.add_notice("one more")
        await pilot.pause()
        assert transcript.hidden_count > 0 and transcript.mounted_count <= 20


async def test_streaming_does_not_yank_a_reader_who_scrolled_up() -> None:
    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield Transcript()

    app = Host()
    async with app.run_test(size=(80, 20)) as pilot:
        transcript = app.query_one(Transcript)
        for i in range(30):
            transcript.add_notice(f"earlier {i}")
        stream = transcript.start_assistant()
        await pilot.pause()
        assert transcript.scroll_y == transcript.max_scroll_y  # following the bottom
        transcript.scroll_to(y=5, animate=False, immediate=True)
        await pilot.pause()
        for i in range(60):
            stream.append(f"streamed line {i}\n\n")
            await pilot.pause(0.01)
        await pilot.pause(0.1)
        assert transcript.scroll_y == 5
        transcript.scroll_end(animate=False, immediate=True)  # back at the bottom: follow again
        await pilot.pause()
        end = transcript.max_scroll_y
        stream.append("tail line\n\nmore")
        # Wait for the new lines to be laid out (the end moves), then for the view to follow.
        await wait_for(pilot, lambda: transcript.max_scroll_y > end)
        await wait_for(pilot, lambda: transcript.scroll_y == transcript.max_scroll_y)


async def test_tool_output_expands_on_click(harness: Harness) -> None:
    harness.mode = "bypass"
    harness.script = [{"tool_calls": [{"name": "bash", "input": {"command": "seq 1 30"}}]}, {"text": "ok"}]
    app = harness.app(permission_mode="bypass")
    async with app.run_test(size=(100, 50)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press(*"count", "enter")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()
        [block] = list(app.transcript.query(ToolBlock))
        collapsed = list(block.view.plain_lines())
        assert any("… showing 4 of 30 lines (click to expand)" in line for line in collapsed)
        assert not any(line.strip() == "30" for line in collapsed)
        await pilot.click(block.view)
        await pilot.pause()
        expanded = [line.strip() for line in block.view.plain_lines()]
        assert "30" in expanded and "1" in " ".join(expanded)
        await pilot.press("ctrl+o")  # toggles every tool block
        await pilot.pause()
        assert app.transcript.expand_tools
