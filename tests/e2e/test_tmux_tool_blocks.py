"""End to end in tmux: what a tool block shows while its command runs and once it ended."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, loom_in_tmux, terminal_env


@pytest.fixture
def terminal(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> Iterator[Terminal]:
    # bypass: these tests are about the block, not the permission prompt.
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), args=["--permission-mode", "bypass"],
                      width=120) as term:
        yield term


def test_live_bash_output_keeps_its_lines_and_shows_only_the_tail(
        terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    command = 'for i in $(seq 1 40); do echo "test_$i PASSED"; done; sleep 6'
    fake_llm.enqueue(Reply.tool("bash", {"command": command}), Reply.text("All forty passed."))
    terminal.ask("run it")
    screen = terminal.wait_for(lambda s: "test_40 PASSED" in s, "the live output")
    assert "esc to interrupt" in screen  # still running
    rows = screen.splitlines()
    # One printed line per row, never two run together.
    assert not any("PASSEDtest_" in row for row in rows)
    assert any(row.strip() == "test_40 PASSED" for row in rows)
    assert any(row.strip() == "test_36 PASSED" for row in rows)
    assert "test_35 PASSED" not in screen  # only the last five lines
    assert "… 35 lines above" in screen
    # The elapsed time shows on the block while it runs.
    terminal.wait_for(lambda s: re.search(r"bash .*sleep 6\s+\d+s\s*$", s, re.MULTILINE) is not None,
                      "the elapsed time on the block")
    terminal.wait_for(lambda s: "All forty passed." in s, "the answer")


LONG_LINE = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho"
FAILING = "printf 'F%72s\\n' '[100%]'; echo 'FAILED test_total - assert 3 == 4'; exit 1"


@pytest.mark.parametrize("width", [120, 60])
def test_finished_blocks_count_real_lines_keep_their_indent_and_show_the_command(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, width: int) -> None:
    (workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 20_001)))
    (workspace / "notes.txt").write_text(f"first {LONG_LINE}\nsecond {LONG_LINE}\n")
    fake_llm.enqueue(Reply.tools(("bash", {"command": "cat big.txt"}), ("bash", {"command": "cat notes.txt"}),
                                 ("bash", {"command": FAILING})),
                     Reply.text("Seen them all."))
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), args=["--permission-mode", "bypass"],
                      width=width, height=50) as term:
        term.ask("run them")
        screen = term.wait_for(lambda s: "Seen them all." in s, "the answer")
    print(f"--- at {width} columns ---\n{screen}")
    rows = screen.splitlines()
    # A huge output: every count is of its real lines, none of the cut copy the model saw.
    header = next(row for row in rows if "cat big.txt" in row)
    assert "20,000 lines" in header
    assert "… showing 4 of 20,000 lines (click to expand)" in screen
    assert "more line" not in screen
    saw = re.compile(r"the model saw the first [\d,]+ and last [\d,]+")
    assert saw.search(header if width >= 100 else screen)
    # A line too long for the terminal wraps under its own indent.
    first = next(i for i, row in enumerate(rows) if "⎿ first alpha" in row)
    if width == 60:
        assert rows[first + 1].startswith("     ") and rows[first + 1][5] != " ", rows[first:first + 3]
        assert " ".join(row.strip() for row in rows[first:first + 2]) == f"⎿ first {LONG_LINE}"
    else:
        assert rows[first].strip() == f"⎿ first {LONG_LINE}"
    # A failing command: the padded progress line does not take the command's room.
    failed = next(row for row in rows if "✗ bash" in row)
    assert "· F [100%]" in failed
    shown = failed.split("✗ bash  ", 1)[1].split("  · ", 1)[0]
    if width == 120:
        assert shown == FAILING
    else:
        assert shown.endswith("…") and len(shown) > 30 and FAILING.startswith(shown[:-1])
        assert len(failed.rstrip()) >= width - 4  # cut where the line ends, not before


def test_esc_during_bash_keeps_the_output_printed_so_far(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    command = 'for i in $(seq 1 8); do echo "out_$i"; done; sleep 30'
    fake_llm.enqueue(Reply.tool("bash", {"command": command}), Reply.text("unused"))
    terminal.ask("run it")
    terminal.wait_for(lambda s: "out_8" in s, "the live output")
    terminal.keys("Escape")
    screen = terminal.wait_for(lambda s: "interrupted by user" in s and "esc to interrupt" not in s,
                               "the run to stop")
    assert "out_8" in screen  # what the command printed stays in its block


def test_a_sub_agent_block_shows_its_steps_then_its_report_once(
        terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(
        Reply.tool("task", {"description": "inspect the app", "prompt": "read src/app.py and report"}),
        Reply.tool("read_file", {"path": "src/app.py"}, text="Reading it."),
        Reply.text("REPORT: greet says hello."),
        Reply.text("All done."))
    terminal.ask("run it")
    screen = terminal.wait_for(lambda s: "All done." in s, "the answer")
    assert screen.count("REPORT: greet says hello.") == 1, screen
    # The step comes before the report, both inside the task block.
    assert screen.index("read_file  src/app.py") < screen.index("REPORT:") < screen.index("All done.")
    assert "1 tool calls" not in screen and "1 LLM calls" not in screen
