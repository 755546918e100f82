"""Claude Code's tool names and argument keys, both ways."""

from __future__ import annotations

from pathlib import Path

from builtin_tools import default_tools
from loom_engine.hooks.payload import claude_tool_input, loom_tool_input, tool_fields
from loom_engine.tool_names import CLAUDE_TOOL_NAMES


def test_every_mapped_name_is_a_builtin_tool() -> None:
    assert set(CLAUDE_TOOL_NAMES) <= {t.name for t in default_tools()}


def test_the_renamed_keys_are_the_tools_real_fields() -> None:
    models = {t.name: t.input_model for t in default_tools()}
    for loom in ("read_file", "write_file", "edit_file", "multi_edit"):
        assert "path" in models[loom].model_fields
    assert {"case_insensitive", "context", "before", "after"} <= set(models["grep"].model_fields)
    assert {"old_string", "new_string"} <= set(models["edit_file"].model_fields)
    assert "content" in models["write_file"].model_fields and "command" in models["bash"].model_fields


def test_file_path_is_absolute_and_loom_names_ride_along() -> None:
    fields = tool_fields("edit_file", {"path": "src/app.py", "old_string": "a", "new_string": "b"}, "c1", Path("/w"))
    assert fields["tool_name"] == "Edit"
    assert fields["tool_input"] == {"file_path": "/w/src/app.py", "old_string": "a", "new_string": "b"}
    assert fields["loom_tool_name"] == "edit_file" and fields["loom_tool_input"]["path"] == "src/app.py"
    assert tool_fields("mcp__git__status", {}, "c2", Path("/w"))["tool_name"] == "mcp__git__status"
    grep = claude_tool_input("grep", {"pattern": "x", "case_insensitive": True}, Path("/w"))
    assert grep == {"pattern": "x", "-i": True}


def test_updated_input_in_either_spelling_over_the_original() -> None:
    original = {"path": "a.txt", "content": "x"}
    assert loom_tool_input("write_file", original, {"file_path": "/w/b.txt"}) == {"path": "/w/b.txt", "content": "x"}
    assert loom_tool_input("write_file", original, {"content": "y"}) == {"path": "a.txt", "content": "y"}
