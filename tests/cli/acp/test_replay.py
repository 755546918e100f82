from __future__ import annotations

from pathlib import Path

from loom_cli.acp.replay import history_updates
from loom_engine.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart


def test_history_replays_prompts_answers_thoughts_and_calls_with_their_ends() -> None:
    messages = [
        Message.user("fix it"),
        Message.assistant(ThinkingPart("look first"), TextPart("Reading."),
                          ToolUsePart("t1", "read_file", {"path": "a.py"}),
                          ToolUsePart("t2", "bash", {"command": "x"})),
        Message.tool_results([ToolResultPart("t1", "1\tx = 1"), ToolResultPart("t2", "boom", is_error=True)]),
        Message.user("reminder text", reminder=True),  # not a prompt the user typed
        Message.assistant(TextPart("Done.")),
    ]
    updates = list(history_updates(messages, Path("/w")))
    assert [u.session_update for u in updates] == ["user_message_chunk", "agent_thought_chunk",
                                                   "agent_message_chunk", "tool_call", "tool_call",
                                                   "agent_message_chunk"]
    read, run = updates[3], updates[4]
    assert (read.title, read.status, read.locations[0].path) == ("Read a.py", "completed", "/w/a.py")
    assert (run.status, run.content[0].content.text) == ("failed", "boom")
