"""A memory write and /memory in the chat (the installed `loom` in tmux, the fake LLM
server), at 120 and 60 columns: the block says what was saved and shows the new lines;
/memory lists the file. Each screen is printed (and, with LOOM_MEMORY_SCREENS=path,
appended there for the closing note)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import open_loom, terminal_env


def _keep(title: str, screen: str) -> None:
    print(f"--- {title} ---\n{screen}")
    target = os.environ.get("LOOM_MEMORY_SCREENS")
    if target:
        with open(target, "a", encoding="utf-8") as file:
            file.write(f"--- {title} ---\n{screen}\n")


@pytest.mark.parametrize("width", [120, 60])
def test_a_memory_write_and_slash_memory(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                         width: int) -> None:
    fake_llm.enqueue(Reply.tool("memory", {"command": "create", "path": "/memories/MEMORY.md",
                                           "file_text": "- Deploys need the VPN (ask Dana for access).\n"
                                                        "- Run tests with `make check`.\n"}),
                     Reply.text("Saved: I will remember both."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=30)
    try:
        term.wait_ready()
        term.type("remember: deploys need the VPN, and tests run with make check")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "I will remember both." in s, "the answer after the write")
        _keep(f"a memory write at {width} columns", screen)
        assert "✓ memory  create /memories/MEMOR" in screen and "saved" in screen
        assert "2 + - Run tests with `make check`." in screen  # the new lines, as a diff
        term.type("/memory")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "1 memory file for this project:" in s, "/memory's list")
        _keep(f"/memory at {width} columns", screen)
        assert "/memories/MEMORY.md" in screen
    finally:
        term.close()
