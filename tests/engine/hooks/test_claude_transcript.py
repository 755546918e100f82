"""The Claude Code-format transcript hook scripts read: its lines, and keeping it in step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loom_engine.hooks.claude_transcript import ClaudeTranscript, claude_line, claude_transcript_file
from loom_engine.messages import ImagePart, Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _mirror(tmp_path: Path) -> ClaudeTranscript:
    return ClaudeTranscript(claude_transcript_file(tmp_path / "sessions" / "s1.jsonl"), session_id="s1",
                            root=tmp_path, redact=None)


def test_the_file_lies_in_its_own_folder_beside_the_session(tmp_path: Path) -> None:
    assert claude_transcript_file(tmp_path / "s1.jsonl") == tmp_path / "claude-code" / "s1.jsonl"


def test_new_messages_are_appended_and_a_rewound_history_is_written_anew(tmp_path: Path) -> None:
    first, second, other = Message.user("one"), Message.assistant(TextPart("two")), Message.user("three")
    mirror = _mirror(tmp_path)
    assert mirror.sync([first], model="m") == str(mirror.path)
    mirror.sync([first, second], model="m")
    before = _lines(mirror.path)
    assert [line["message"]["content"] for line in before] == ["one", [{"type": "text", "text": "two"}]]
    assert before[1]["parentUuid"] == before[0]["uuid"]
    mirror.sync([first, other], model="m")  # a rewind replaced the answer
    after = _lines(mirror.path)
    assert [line["message"]["content"] for line in after] == ["one", "three"]
    assert after[0] == before[0]  # the same uuid and time for the same message
    assert after[1]["parentUuid"] == after[0]["uuid"]


def test_a_file_left_by_an_earlier_run_is_written_anew_not_added_to(tmp_path: Path) -> None:
    history = [Message.user("one"), Message.assistant(TextPart("two"))]
    _mirror(tmp_path).sync(history, model="m")
    resumed = _mirror(tmp_path)  # --continue: a new process, the same session
    resumed.sync([*history, Message.user("three")], model="m")
    assert [line["message"]["content"] for line in _lines(resumed.path)][::2] == ["one", "three"]
    assert len(_lines(resumed.path)) == 3


def test_an_unwritable_place_gives_no_path_and_the_hook_still_runs(tmp_path: Path) -> None:
    (tmp_path / "sessions").write_text("a file where the folder would be")
    assert _mirror(tmp_path).sync([Message.user("one")], model="m") == ""


def test_redaction_applies_to_each_line(tmp_path: Path) -> None:
    mirror = ClaudeTranscript(tmp_path / "t.jsonl", session_id="s1", root=tmp_path,
                              redact=lambda text: text.replace("hunter2", "[REDACTED]"))
    mirror.sync([Message.user("my password is hunter2")], model="m")
    assert _lines(mirror.path)[0]["message"]["content"] == "my password is [REDACTED]"


def test_blocks_and_flags_as_claude_code_writes_them(tmp_path: Path) -> None:
    edit = {"path": "a.py", "old_string": "x", "new_string": "y"}
    call = Message.assistant(ThinkingPart("hm", signature="sig"), ThinkingPart("", redacted_data="opaque"),
                             ToolUsePart("toolu_1", "edit_file", edit))
    assert claude_line(call, root=tmp_path, model="claude-x")["message"] == {
        "id": call.id, "type": "message", "role": "assistant", "model": "claude-x", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "toolu_1", "name": "Edit",
             "input": {"file_path": str(tmp_path / "a.py"), "old_string": "x", "new_string": "y"}}]}
    failed = claude_line(Message.tool_results([ToolResultPart("toolu_1", "no such text", is_error=True)]),
                         root=tmp_path, model="m")
    assert failed == {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such text", "is_error": True}]}}
    pasted = claude_line(Message("user", (TextPart("see"), ImagePart("image/png", "AAAA"))), root=tmp_path, model="m")
    assert pasted["message"]["content"][1] == {"type": "image",
                                               "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    assert claude_line(Message.user("<system-reminder>x</system-reminder>", reminder=True), root=tmp_path,
                       model="m")["isMeta"] is True
    assert claude_line(Message.user("the summary", summary=True), root=tmp_path, model="m")["isCompactSummary"] is True
