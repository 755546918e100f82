"""A memory write and /memory in the chat (the installed `loom` in tmux, the fake LLM
server), at 120 and 60 columns: the block says what was saved and shows the new lines;
/memory lists the file; proposals not answered when the chat quits wait for review. Each
screen is printed (and, with LOOM_MEMORY_SCREENS=path, appended there for the closing note)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import LOOM, open_loom, terminal_env


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


def test_a_chat_quit_while_the_offer_asks_keeps_the_proposals_to_review(tmp_path: Path, workspace: Path,
                                                                        fake_llm: FakeLLMServer) -> None:
    """Ctrl+D offers what to remember; a second Ctrl+D quits at once. Nothing is applied,
    nothing is lost: the exit says where they wait, and `loom memory proposals` lists them."""
    proposals = {"proposals": [{"path": "MEMORY.md", "text": "- Build with make.", "why": "said twice"}]}
    fake_llm.enqueue(Reply.tool("read_file", {"path": "README.md"}),
                     Reply.text("The build uses make; the tests use pytest. " * 20),
                     Reply.text(json.dumps(proposals)))  # the promotion request at the session's end
    env = terminal_env(tmp_path, fake_llm)
    term = open_loom(workspace, env, width=100, height=30)
    try:
        term.ask("how do I build?")
        term.wait_for(lambda s: "the tests use pytest" in s and "esc to interrupt" not in s, "the run's end")
        term.keys("C-d")
        screen = term.wait_for(lambda s: "Remember this for later sessions" in s and "Build with make." in s,
                               "the offer")
        _keep("the memory offer at 100 columns", screen)
        term.keys("C-d")
        screen = term.wait_for(lambda s: "Continue this conversation" in s, "the exit")
        assert "memory proposals not answered: review them with loom memory proposals" in screen, screen
    finally:
        term.close()
    listed = _loom(workspace, env, "memory", "proposals")
    assert "1. /memories/MEMORY.md: - Build with make.  (said twice)" in listed
    assert "No memory saved for this project yet" in _loom(workspace, env, "memory", "list")  # none applied


def _loom(cwd: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([str(LOOM), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout
