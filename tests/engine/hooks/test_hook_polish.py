"""Bash's timeout in Claude Code's unit, both ways, and the ``tool_response`` shapes
PostToolUse scripts written for Claude Code read."""

from __future__ import annotations

from pathlib import Path

from loom_engine.hooks.payload import claude_tool_input, loom_tool_input, tool_fields


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
