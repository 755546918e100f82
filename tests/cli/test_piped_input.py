"""`loom run`'s task text: piped standard input after the prompt, as `claude -p` joins them
(issue 22, item 3), and `loom -p` as `loom run` (item 4)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import pytest

from loom_cli.main import _command_names
from loom_cli.piped_input import PromptInputError, stream_json_prompts, task_text
from loom_cli.print_mode import print_as_run
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM, loom, loom_env


@contextmanager
def _pipe(data: bytes | None) -> Iterator[BinaryIO]:
    """A pipe's reading end; ``data`` is written and the pipe closed, None leaves it open
    and silent (a script's inherited standard input)."""
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "rb")
    try:
        if data is None:
            yield reader
        else:
            with os.fdopen(write_fd, "wb") as writer:
                writer.write(data)
            write_fd = -1
            yield reader
    finally:
        reader.close()
        if write_fd >= 0:
            os.close(write_fd)


def _not_terminal() -> bool:
    return False


def test_piped_text_comes_after_the_prompt_and_a_newline_as_it_came() -> None:
    # What Claude Code 2.1 sends for `printf '\n\n  body  \n\n' | claude -p "review this "`.
    with _pipe(b"\n\n  body  \n\n") as stdin:
        assert task_text("review this ", stdin, _not_terminal).text == "review this \n\n\n  body  \n\n"
    with _pipe(b"") as stdin:
        assert task_text("review this", stdin, _not_terminal).text == "review this"


def test_dash_or_no_prompt_makes_standard_input_the_prompt() -> None:
    with _pipe(b"fix the bug\n") as stdin:
        assert task_text("-", stdin, _not_terminal).text == "fix the bug\n"
    with _pipe(b"fix the bug\n") as stdin:
        assert task_text(None, stdin, _not_terminal).text == "fix the bug\n"
    with _pipe(b"") as stdin, pytest.raises(PromptInputError, match="no prompt"):
        task_text(None, stdin, _not_terminal)


def test_a_terminal_is_never_read() -> None:
    with _pipe(None) as stdin:  # reading it would block: the test would hang
        assert task_text("hi", stdin, lambda: True) == task_text("hi", None, lambda: True)
        with pytest.raises(PromptInputError, match="no prompt"):
            task_text(None, stdin, lambda: True)


def test_a_silent_pipe_is_left_alone_with_a_warning() -> None:
    with _pipe(None) as stdin:
        task = task_text("hi", stdin, _not_terminal, wait_s=0.05)
    assert task.text == "hi"
    assert task.warning is not None and "nothing came on standard input" in task.warning
    assert "< /dev/null" in task.warning


def test_too_much_input_is_refused_in_one_line() -> None:
    with _pipe(b"x" * 2049) as stdin, pytest.raises(PromptInputError) as caught:
        task_text("summarise", stdin, _not_terminal, limit=2048)
    message = str(caught.value)
    assert "\n" not in message and "standard input is larger than 2048 bytes" in message
    with _pipe(b"x" * 2048) as stdin:
        assert task_text("summarise", stdin, _not_terminal, limit=2048).text == "summarise\n" + "x" * 2048


def test_bytes_that_are_not_utf8_are_named() -> None:
    with _pipe(b"ok \xff") as stdin, pytest.raises(PromptInputError, match=r"standard input is not UTF-8 \(byte 0xff"):
        task_text("review", stdin, _not_terminal)


@pytest.mark.parametrize("args, expected", [
    (["-p", "task", "-o", "json"], ["run", "task", "-o", "json"]),
    (["--model", "m", "--print", "task"], ["run", "--model", "m", "task"]),
    (["task", "-p"], ["run", "task"]),
    (["mcp", "add", "x", "npx", "-p"], ["mcp", "add", "x", "npx", "-p"]),  # a subcommand's own
    (["run", "-p"], ["run", "-p"]),
    (["-c"], ["-c"]),
])
def test_print_flag_is_loom_run(args: list[str], expected: list[str]) -> None:
    assert print_as_run(args, _command_names()) == expected


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def test_git_diff_piped_into_loom_p_reaches_the_model(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("looks fine"))
    done = loom(["-p", "review this", "-o", "json"], _repo(tmp_path), loom_env(tmp_path, fake_llm),
                stdin=b"diff --git a/x b/x\n+line\n")
    assert done.returncode == 0, done.stderr
    assert '"result": "looks fine"' in done.stdout
    first = fake_llm.requests[0].messages[0]["content"]
    texts = [block["text"] for block in first if block.get("type") == "text"]
    assert texts[-1] == "review this\ndiff --git a/x b/x\n+line\n"


def test_oversized_input_stops_before_any_request(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    done = subprocess.run([*LOOM, "run", "summarise"], cwd=_repo(tmp_path), env=loom_env(tmp_path, fake_llm),
                          input=b"x" * (4 * 1024 * 1024 + 1), capture_output=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("loom: standard input is larger than 4 MB")
    assert done.stderr.count(b"\n") == 1 and fake_llm.requests == []


def test_stream_json_input_gives_each_user_message() -> None:
    lines = (b'{"type":"user","message":{"role":"user","content":"first q"}}\n\n'
             b'{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second q"}]}}\n')
    with _pipe(lines) as stdin:
        assert stream_json_prompts(stdin) == ["first q", "second q"]
    with _pipe(b'{"type":"user","message":{"role":"user","content":"ok"}}\n{"type": "user"\n') as stdin, \
            pytest.raises(PromptInputError, match="standard input, line 2 is not JSON"):
        stream_json_prompts(stdin)
    with _pipe(b'{"type":"assistant","message":{"content":"x"}}\n') as stdin, \
            pytest.raises(PromptInputError, match="line 1 is not a user message with text"):
        stream_json_prompts(stdin)
    with _pipe(b"") as stdin, pytest.raises(PromptInputError, match="found no message"):
        stream_json_prompts(stdin)
