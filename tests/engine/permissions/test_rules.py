"""Parsing permission rules."""

from __future__ import annotations

import pytest

from loom_engine.permissions.rules import parse_rule


def test_bare_tool_rule() -> None:
    rule = parse_rule("  Bash ")
    assert (rule.tool, rule.specifier, rule.text) == ("bash", None, "bash")
    assert rule.matches_words(("anything", "at", "all"))


def test_prefix_and_exact_command_rules() -> None:
    prefix = parse_rule("bash(git diff:*)")
    assert (prefix.words, prefix.prefix) == (("git", "diff"), True)
    assert prefix.matches_words(("git", "diff"))
    assert prefix.matches_words(("git", "diff", "--stat", "HEAD"))
    assert not prefix.matches_words(("git", "difftool"))
    assert not prefix.matches_words(("git",))

    exact = parse_rule("bash(make test)")
    assert exact.matches_words(("make", "test"))
    assert not exact.matches_words(("make", "test", "-j4"))
    assert not exact.matches_words(("make",))


def test_command_rules_compare_words_not_characters() -> None:
    rule = parse_rule("Bash(git   commit -m 'fix bug':*)")
    assert rule.words == ("git", "commit", "-m", "fix bug")
    assert rule.text == "bash(git   commit -m 'fix bug':*)"


def test_path_rules() -> None:
    for text in ("edit_file(src/**)", "read_file(*.py)", "edit(/etc/hosts)", "read(~/notes/*)",
                 "write_file(../sibling/**)", "grep(./src)"):
        rule = parse_rule(text)
        assert rule.path_rule, text


def test_other_tools_keep_their_specifier() -> None:
    rule = parse_rule("web_fetch(domain:example.com)")
    assert (rule.tool, rule.specifier) == ("web_fetch", "domain:example.com")
    assert parse_rule("mcp__github__list_issues").tool == "mcp__github__list_issues"


@pytest.mark.parametrize("text, message", [
    ("", "empty rule"),
    ("   ", "empty rule"),
    ("bash(", "missing ')'"),
    ("bash(git status", "missing ')'"),
    ("bash)", "missing '('"),
    ("(git status)", "missing tool name"),
    ("bash()", "empty specifier"),
    ("bash(  )", "empty specifier"),
    ("ba sh", "not a tool name"),
    ("1bash", "not a tool name"),
    ("bash(:*)", "empty command"),
    ("bash(git:* diff)", "may only end"),
    ("bash(npm run *)", "npm run:*"),
    ("bash(*)", "'bash' alone"),
    ("bash(a && b)", "one command"),
    ("bash(ls > x)", "redirections"),
    ("bash(echo $HOME)", "expansions"),
    ("bash(echo 'x)", "quote"),
    ("edit_file(!src/**)", "negated"),
    ("edit_file(src/../..)", "'..'"),
    ("edit_file(/x/*/../y)", "'..'"),
    ("bash(ls\nrm)", "one command"),
    ("edit_file(a\nb)", "control character"),
])
def test_invalid_rules_name_the_rule_and_the_problem(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_rule(text)
    text_of_error = str(info.value)
    assert message in text_of_error
    assert repr(text) in text_of_error
    assert text_of_error.startswith("invalid permission rule")


def test_exact_error_text_for_a_missing_parenthesis() -> None:
    with pytest.raises(ValueError, match=r"^invalid permission rule 'bash\(': missing '\)'$"):
        parse_rule("bash(")


def test_group_names() -> None:
    edit = parse_rule("edit(src/**)")
    assert edit.names_tool("write_file", write=True)
    assert edit.names_tool("apply_patch", write=True)
    assert not edit.names_tool("read_file", write=False)
    read = parse_rule("Read(*.env)")
    assert read.names_tool("grep", write=False)
    assert not read.names_tool("edit_file", write=True)
    assert not parse_rule("edit").names_tool("bash")
