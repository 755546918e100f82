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


def test_huge_output_shows_its_real_size_and_that_the_model_saw_head_and_tail(
        terminal: Terminal, fake_llm: FakeLLMServer, workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 20_001)))
    fake_llm.enqueue(Reply.tool("bash", {"command": "cat big.txt"}), Reply.text("That is a big file."))
    terminal.ask("run it")
    screen = terminal.wait_for(lambda s: "That is a big file." in s, "the answer")
    header = next(row for row in screen.splitlines() if "cat big.txt" in row)
    assert "20,000 lines" in header
    assert re.search(r"the model saw the first [\d,]+ and last [\d,]+", header)


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
