"""What a tool block's header says: counts with the right plural, the real size of a cut
output, and a task block without its report twice."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from loom_cli.stop_reason import stop_reason
from loom_cli.tui.tool_block import ToolBlock, ToolCallData
from loom_engine.events import MaxTurnsReached
from tests.cli.tui.helpers import wait_for

BLOCKS = [
    ToolCallData(call_id="a", name="read_file", input={"path": "one.txt"}, status="done", content="only line"),
    ToolCallData(call_id="b", name="todo_write", input={"todos": [{"content": "x"}]}, status="running"),
    ToolCallData(call_id="c", name="bash", input={"command": "cat big.txt"}, status="done",
                 content="line 1\n[... cut ...]\nline 20000\nExit code: 0",
                 display={"kind": "command", "output_lines": 20_000, "truncated": True,
                          "shown_head_lines": 1200, "shown_tail_lines": 1300}),
    ToolCallData(call_id="d", name="bash", input={"command": "seq 1 3"}, status="done",
                 content="1\n2\n3\nExit code: 0",
                 display={"kind": "command", "output_lines": 3, "truncated": False}),
]


class Blocks(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            for data in BLOCKS:
                yield ToolBlock(data)


async def test_headers_say_one_line_and_the_real_size_of_a_cut_output() -> None:
    app = Blocks()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        headers = [next(iter(block.view.plain_lines())) for block in app.query(ToolBlock)]
    assert "read_file  one.txt  · 1 line" in headers[0] and "1 lines" not in headers[0]
    assert "todo_write  1 item" in headers[1] and "1 items" not in headers[1]
    assert "cat big.txt  · 20,000 lines · the model saw the first 1,200 and last 1,300" in headers[2]
    assert "seq 1 3  · 3 lines" in headers[3]  # the output's lines, not the exit code line


def test_one_turn_is_singular() -> None:
    assert stop_reason(MaxTurnsReached(max_turns=1, num_turns=1)) == "stopped: reached the limit of 1 turn"


async def test_a_resumed_session_counts_prompts_not_internal_blocks(harness) -> None:  # type: ignore[no-untyped-def]
    from loom_cli.tui.transcript import Notice
    from loom_engine.messages import Message, TextPart
    from tests.cli.tui.helpers import wait_for

    harness.messages = (Message.user("first question"), Message.assistant(TextPart("First answer.")),
                        Message.user("second question"), Message.assistant(TextPart("Second answer.")))
    app = harness.app(continue_session=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: any("resumed session" in n.text for n in app.transcript.query(Notice)))
        [notice] = [n.text for n in app.transcript.query(Notice) if "resumed session" in n.text]
    assert notice.endswith("· 2 prompts") and "blocks" not in notice


async def test_at_60_columns_a_cut_output_still_says_what_the_model_saw() -> None:
    app = Blocks()
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        block = list(app.query(ToolBlock))[2]
        lines = list(block.view.plain_lines())
    assert "20,000 lines · cut" in lines[0]
    assert any("the model saw the first 1,200 and last 1,300 lines" in line for line in lines[1:])


class Live(App[None]):
    def compose(self) -> ComposeResult:
        self.block = ToolBlock(ToolCallData(call_id="l", name="bash", input={"command": "make"}))
        yield self.block


async def test_live_tail_keeps_lines_and_shows_a_progress_bar_as_last_drawn() -> None:
    app = Live()
    async with app.run_test(size=(80, 20)) as pilot:
        for i in range(1, 7):
            app.block.add_live_output(f"step {i}")
        app.block.add_live_output("\r10%\r55%\r100%")
        # Live output repaints on a timer: wait for the last write to be drawn.
        await wait_for(pilot, lambda: "100%" in [line.strip() for line in app.block.view.plain_lines()], timeout=60)
        lines = [line.strip() for line in app.block.view.plain_lines()]
    assert lines[1:] == ["⎿ … 2 lines above", "step 3", "step 4", "step 5", "step 6", "100%"]


async def test_a_loaded_skill_shows_its_text_without_the_tag_live_and_resumed() -> None:
    from pathlib import Path

    from loom_cli.tui.transcript import entries_from_messages
    from loom_engine.messages import Message, ToolResultPart, ToolUsePart
    from loom_engine.skills.wrapper import wrap

    path = Path("/home/u/.claude/skills/demo/SKILL.md")
    content = wrap("demo", "~/.claude", path, "Say hello politely.\nThen stop.") + (
        "\n\nFiles in /home/u/.claude/skills/demo (read them with read_file when the instructions call for them):"
        "\n- /home/u/.claude/skills/demo/greeting.txt")
    display = {"kind": "skill", "name": "demo", "path": str(path)}
    live = ToolCallData(call_id="s1", name="skill", input={"name": "demo"}, status="done", content=content,
                        display=display)
    [entry] = entries_from_messages([
        Message.assistant(ToolUsePart("s1", "skill", {"name": "demo"})),
        Message.tool_results([ToolResultPart("s1", content)], displays={"s1": display})])
    assert entry.tool is not None

    class Two(App[None]):
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield ToolBlock(live)
                yield ToolBlock(entry.tool)

    app = Two()
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        blocks = list(app.query(ToolBlock))
        shown = {name: list(block.view.plain_lines()) for name, block in zip(("live", "resumed"), blocks, strict=True)}
    assert shown["live"] == shown["resumed"]
    text = "\n".join(shown["live"])
    assert "<skill" not in text and "</skill>" not in text
    assert "skill  demo  · 5 lines" in shown["live"][0]
    assert "⎿ Say hello politely." in shown["live"][1] and "Then stop." in shown["live"][2]
