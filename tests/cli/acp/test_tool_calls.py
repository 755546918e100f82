from __future__ import annotations

from pathlib import Path

from loom_cli.acp.tool_calls import TOOL_KINDS, diff_sides, display_content, result_content, tool_kind, tool_title

ROOT = Path("/w")


def test_every_builtin_tool_has_a_kind_and_others_are_other() -> None:
    from builtin_tools import default_tools

    names = {tool.name for tool in default_tools()}
    assert names - set(TOOL_KINDS) <= {"skill"}  # a skill loads instructions: "other"
    assert tool_kind("mcp__github__create_issue") == "other"
    assert (tool_kind("bash"), tool_kind("grep"), tool_kind("apply_patch"), tool_kind("web_fetch")) == \
           ("execute", "search", "edit", "fetch")


def test_titles_say_what_the_call_does_on_one_line() -> None:
    assert tool_title("read_file", {"path": "src/a.py"}) == "Read src/a.py"
    assert tool_title("bash", {"command": "make\n  test"}) == "Run `make test`"
    assert tool_title("grep", {"pattern": "TODO", "path": "src"}) == "Search `TODO` in src"
    assert tool_title("apply_patch", {"patch": "..."}) == "Apply a patch"
    long = tool_title("bash", {"command": "x" * 200})
    assert len(long) == 80 and long.endswith("…")


def test_a_unified_diff_becomes_the_old_and_new_text_of_its_hunks() -> None:
    diff = ("--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n c = 4\n"
            "@@ -10,2 +10,2 @@\n-x\n+y\n\\ No newline at end of file\n")
    assert diff_sides(diff) == ("a = 1\nb = 2\nc = 4\n…\nx\n", "a = 1\nb = 3\nc = 4\n…\ny\n")


def test_an_edit_shows_its_diff_and_a_command_its_output() -> None:
    display = {"kind": "diff", "path": "f.py", "diff": "--- /dev/null\n+++ b/f.py\n@@ -0,0 +1 @@\n+new\n"}
    [edit] = result_content("write_file", "Wrote f.py", display, ROOT)
    assert edit.type == "diff" and edit.path == "/w/f.py" and edit.old_text is None and edit.new_text == "new\n"
    [output] = result_content("bash", "hello\n", None, ROOT)
    assert output.type == "content" and output.content.text == "hello\n"
    [command] = display_content({"kind": "command", "command": "rm -rf build"}, ROOT)
    assert command.content.text == "$ rm -rf build"
