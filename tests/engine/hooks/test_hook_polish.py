"""Bash's timeout in Claude Code's unit, both ways, and the ``tool_response`` shapes
PostToolUse scripts written for Claude Code read."""

from __future__ import annotations

from pathlib import Path

from loom_engine.hooks.payload import claude_tool_input, claude_tool_response, loom_tool_input, tool_fields


def test_bash_timeout_reaches_the_hook_in_milliseconds() -> None:
    fields = tool_fields("bash", {"command": "make", "timeout": 30}, "c1", Path("/w"))
    assert fields["tool_input"] == {"command": "make", "timeout": 30000}
    assert fields["loom_tool_input"] == {"command": "make", "timeout": 30}  # Loom's own unit beside it
    assert claude_tool_input("bash", {"command": "x", "timeout": 1.5}, Path("/w"))["timeout"] == 1500
    assert claude_tool_input("bash", {"command": "x", "timeout": 0.0005}, Path("/w"))["timeout"] == 0.5
    # Only bash's timeout: another tool's number is left alone.
    assert claude_tool_input("grep", {"pattern": "x", "context": 3}, Path("/w"))["-C"] == 3


def test_an_updated_bash_timeout_in_milliseconds_becomes_seconds() -> None:
    original = {"command": "make", "timeout": 30}
    assert loom_tool_input("bash", original, {"timeout": 5000}) == {"command": "make", "timeout": 5}
    assert loom_tool_input("bash", original, {"timeout": 1500}) == {"command": "make", "timeout": 1.5}
    # The whole tool_input sent back unchanged keeps the call's own timeout.
    echoed = claude_tool_input("bash", original, Path("/w"))
    assert loom_tool_input("bash", original, echoed) == original
    # Not a number: passed on as it is, for validation to refuse with its reason.
    assert loom_tool_input("bash", original, {"timeout": "soon"})["timeout"] == "soon"
    assert loom_tool_input("bash", original, {"timeout": True})["timeout"] is True


def test_bash_stdout_is_the_output_without_looms_status_lines() -> None:
    # The command printed a line like Loom's own status: only the last one is Loom's.
    text = "building\nExit code: 3\ndone\nExit code: 0\nWorking directory is now src."
    response = claude_tool_response("bash", {"command": "make"}, text, {"exit_code": 0}, Path("/w"))
    assert response == {"stdout": "building\nExit code: 3\ndone", "stderr": "", "interrupted": False,
                        "isImage": False}
    quiet = claude_tool_response("bash", {"command": "true"}, "(no output)\nExit code: 0", {}, Path("/w"))
    assert quiet["stdout"] == ""
    timed = claude_tool_response("bash", {"command": "sleep 9"}, "(no output)\nTimed out after 1 s; the command "
                                 "and everything it started were killed.", {"timed_out": True}, Path("/w"))
    assert timed["interrupted"] is True and timed["stdout"] == ""


def test_read_gives_the_lines_without_numbers_and_says_when_more_follow() -> None:
    text = ("     5\tfive\n     6\tsix\n\n(Showing lines 5-6 of 40. More lines follow: call read_file with "
            "offset=7 to continue.)")
    file = claude_tool_response("read_file", {"path": "a.txt", "offset": 5, "limit": 2}, text, None, Path("/w"))
    assert file == {"type": "text", "file": {"filePath": "/w/a.txt", "content": "five\nsix", "numLines": 2,
                                             "startLine": 5, "totalLines": 40}}
    empty = claude_tool_response("read_file", {"path": "e.txt"}, "e.txt is empty (0 lines).", None, Path("/w"))
    assert empty["file"] == {"filePath": "/w/e.txt", "content": "", "numLines": 0, "startLine": 1, "totalLines": 0}


def test_other_tools_keep_the_text_and_name_their_file() -> None:
    assert claude_tool_response("glob", {"pattern": "*.py"}, "a.py", None, Path("/w")) == {
        "content": "a.py", "success": True}
    overwrite = claude_tool_response("write_file", {"path": "/w/x", "content": "y"}, "Overwrote x (1 line).", None,
                                     Path("/w"))
    assert overwrite == {"type": "update", "filePath": "/w/x", "content": "y", "success": True}
