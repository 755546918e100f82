"""The chat on OpenAI's own API (the fake server standing in for it): the Responses API,
its reasoning summaries shown as thinking, the encrypted reasoning sent back on the next
turn; at 120 columns, then redrawn and on at 60."""

from __future__ import annotations

from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply, ToolCall
from tests.doubles.official_openai import official_openai_env
from tests.doubles.terminal import drawn_to_the_edge, loom_in_tmux, terminal_env

SUMMARY = "Checking the README before answering."


def test_a_chat_over_the_responses_api(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    env = terminal_env(tmp_path, fake_llm, LOOM_MODEL="gpt-5-codex", **official_openai_env(tmp_path, fake_llm))
    fake_llm.enqueue(Reply(thinking=SUMMARY, chunk_size=4, chunk_delay=0.05,
                           tool_calls=(ToolCall("read_file", {"path": "README.md"}, "call_readme"),)),
                     Reply.text("The README introduces the project."),
                     Reply.text("Nothing more to add."))
    with loom_in_tmux(workspace, env, width=120) as term:
        term.wait_ready("gpt-5-codex")
        term.type("what does the README say?")
        term.keys("Enter")
        term.wait_for(lambda s: "thinking ·" in s, "the reasoning summary streaming as thinking")
        screen = term.wait_for(lambda s: "The README introduces" in s and "esc to interrupt" not in s,
                               "the answer after the tool call")
        assert "thought (5 words" in screen and "read_file" in screen
        # The same turn, redrawn at 60 columns; the second one is asked there.
        term.resize(60, 40)
        screen = term.wait_for(lambda s: "The README introduces" in s and drawn_to_the_edge(s),
                               "the answer redrawn at 60 columns")
        assert "thought (5 words" in screen and "read_file" in screen
        term.type("anything else?")
        term.keys("Enter")
        term.wait_for(lambda s: "Nothing more to add." in s, "the second answer")
    paths = [r.path for r in fake_llm.requests]
    assert paths == ["/v1/responses"] * 3
    assert all(r.rejected is None for r in fake_llm.requests), [r.rejected for r in fake_llm.requests]
    third = fake_llm.requests[2].body["input"]
    assert [i["type"] for i in third] == ["message", "reasoning", "function_call", "function_call_output",
                                          "message", "message"]
