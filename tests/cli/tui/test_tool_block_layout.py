"""How a tool block uses its width and its time: the elapsed time counts from approval,
a cut output counts real lines, wrapped output keeps its indent, and the header gives
the command all the room the result leaves."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from loom_cli.tui.output_size import shown_of_total
from loom_cli.tui.tool_block import ToolBlock, ToolCallData, fit_header

LONG = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma"
COMMAND = "python -m pytest -q tests/integration/test_checkout_flow.py::test_total_with_discount"
PADDED_FAILURE = "F" + " " * 72 + "[100%]"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Blocks(App[None]):
    def __init__(self, *blocks: ToolBlock) -> None:
        super().__init__()
        self.blocks = blocks

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield from self.blocks


def lines(block: ToolBlock) -> list[str]:
    return list(block.view.plain_lines())


async def test_the_elapsed_time_counts_from_approval_not_from_the_question() -> None:
    clock = Clock()
    block = ToolBlock(ToolCallData(call_id="t", name="bash", input={"command": "make test"},
                                   started=clock.now), clock=clock)
    app = Blocks(block)
    async with app.run_test(size=(100, 20)) as pilot:
        block.set_status("waiting")
        clock.now += 40  # the question stood open 40 seconds
        block.set_status("running")
        await pilot.pause()
        assert lines(block)[0].endswith("make test")  # under a second: no time yet
        clock.now += 3
        block.tick()
        await pilot.pause()
        assert lines(block)[0].endswith("make test  3s")


async def test_running_again_after_running_keeps_the_start() -> None:
    clock = Clock()
    block = ToolBlock(ToolCallData(call_id="t", name="bash", input={"command": "make"}, started=clock.now),
                      clock=clock)
    app = Blocks(block)
    async with app.run_test(size=(100, 20)) as pilot:
        clock.now += 5
        block.set_status("running")  # the engine's answer after the block already showed it
        block.tick()
        await pilot.pause()
        assert lines(block)[0].endswith("make  5s")


CUT = ToolCallData(call_id="c", name="bash", input={"command": "cat big.txt"}, status="done",
                   content="\n".join(f"line {i}" for i in range(1, 11))
                   + "\n[... 170,000 characters of output cut from the middle ...]\n"
                   + "\n".join(f"line {i}" for i in range(19_991, 20_001)) + "\nExit code: 0",
                   display={"kind": "command", "output_lines": 20_000, "truncated": True,
                            "shown_head_lines": 10, "shown_tail_lines": 10})


async def test_a_cut_output_counts_the_real_lines_collapsed_and_shows_the_whole_copy_expanded() -> None:
    block = ToolBlock(CUT)
    app = Blocks(block)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        collapsed = lines(block)
        assert "20,000 lines · the model saw the first 10 and last 10" in collapsed[0]
        assert collapsed[-1].strip() == "… showing 4 of 20,000 lines (click to expand)"
        assert not any("more line" in line for line in collapsed)  # no count of the cut copy's rows
        block.set_expanded(True)
        await pilot.pause()
        expanded = lines(block)
        assert expanded[-1].strip() == "Exit code: 0"  # all of what the model saw, nothing hidden
        assert any("line 20000" in line for line in expanded)


async def test_a_long_output_expanded_says_how_to_collapse() -> None:
    content = "\n".join(str(i) for i in range(1, 2_501)) + "\nExit code: 0"
    block = ToolBlock(ToolCallData(call_id="s", name="bash", input={"command": "seq 2500"}, status="done",
                                   content=content, display={"kind": "command", "output_lines": 2_500}),
                      expanded=True)
    app = Blocks(block)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert lines(block)[-1].strip() == "… showing 2,000 of 2,500 lines (click to collapse)"


def test_the_count_reads_the_same_everywhere() -> None:
    assert shown_of_total(4, 20_000) == "… showing 4 of 20,000 lines"
    assert shown_of_total(1, 1) == "… showing 1 of 1 line"


async def test_at_60_columns_a_wrapped_output_line_keeps_its_indent() -> None:
    block = ToolBlock(ToolCallData(call_id="w", name="bash", input={"command": "cat notes.txt"}, status="done",
                                   content=f"first {LONG}\nsecond {LONG}\nExit code: 0",
                                   display={"kind": "command", "output_lines": 2}))
    app = Blocks(block)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        body = lines(block)[1:]
    assert len(body) > 3, body  # the long lines wrapped
    assert body[0].startswith("  ⎿ first alpha")
    assert all(row.startswith("    ") and row[4] != " " for row in body[1:]), body
    assert all(len(row) <= app.size.width - 2 for row in body)  # wrapped, not cut off at the edge
    assert " ".join(row.strip() for row in body[:2]) == f"⎿ first {LONG}"


async def test_a_failing_command_keeps_the_line_for_the_command() -> None:
    failing = ToolCallData(call_id="f", name="bash", input={"command": COMMAND}, status="error",
                           content=f"{PADDED_FAILURE}\nFAILED test_total - assert 3 == 4\nExit code: 1",
                           duration_ms=5_500,
                           display={"kind": "command", "output_lines": 2, "exit_code": 1})
    for width in (120, 60):
        block = ToolBlock(failing)
        app = Blocks(block)
        async with app.run_test(size=(width, 20)) as pilot:
            await pilot.pause()
            header = lines(block)[0]
        # The padding of the runner's progress line is not the summary's to spend.
        assert header.endswith("· F [100%]  5.5s"), header
        if width == 120:
            assert f"bash  {COMMAND}  ·" in header
        else:
            # Cut only where the line ends: every cell goes to the command or the result.
            assert len(header) >= app.size.width - 2 - 1  # all but the block's padding (and a cut space)
            assert header.startswith(f"✗ bash  {COMMAND[:30]}")


def test_fit_header_shares_the_room() -> None:
    assert fit_header(80, "cat big.txt", "3 lines") == ("cat big.txt", "3 lines")
    # A short result keeps all it needs; the argument takes the rest.
    arg, summary = fit_header(40, COMMAND, "F [100%]")
    assert summary == "F [100%]" and 39 <= len(arg) + 2 + len(summary) + 4 <= 40 and arg.endswith("…")
    # A short argument stays whole; the result takes the rest.
    arg, summary = fit_header(40, "ls", LONG)
    assert arg == "ls" and 40 - 4 - 4 - 1 <= len(summary) <= 40 - 4 - 4 and LONG.startswith(summary[:-1])
    # Both long: half each.
    arg, summary = fit_header(40, COMMAND, LONG)
    assert 19 <= len(arg) + 2 <= 20 and 19 <= len(summary) + 4 <= 20
