"""Putting the user's arguments into a command's body."""

from __future__ import annotations

from loom_engine.commands.invoke import split_line
from loom_engine.commands.template import shell_snippets, splice, substitute


def test_arguments_whole_and_by_position_counted_from_zero() -> None:
    body = "Fix issue $ARGUMENTS. First: $0, second: $ARGUMENTS[1], third: $2."
    assert substitute(body, '123 "high priority"') == (
        'Fix issue 123 "high priority". First: 123, second: high priority, third: .')


def test_an_argument_holding_a_placeholder_stays_as_typed() -> None:
    assert substitute("$0 and $1", "$1 x") == "$1 and x"


def test_a_body_without_placeholders_gets_the_arguments_appended() -> None:
    assert substitute("Review the change.", "src/app.py") == "Review the change.\n\nARGUMENTS: src/app.py"
    assert substitute("Review the change.", "") == "Review the change."


def test_unbalanced_quotes_split_on_spaces() -> None:
    assert substitute("[$0][$1]", 'it\'s fine') == "[it's][fine]"


def test_shell_snippets_and_splicing() -> None:
    text = "Status: !`git status --short`\nLog:\n!`git log -1`\nnot this: a!`x` or `!`y"
    snippets = shell_snippets(text)
    assert [s.command for s in snippets] == ["git status --short", "git log -1"]
    assert splice(text, snippets, ["M a.py", "abc"]) == "Status: M a.py\nLog:\nabc\nnot this: a!`x` or `!`y"


def test_split_line() -> None:
    assert split_line("/fix 123 now") == ("fix", "123 now")
    assert split_line("/git:commit") == ("git:commit", "")
    assert split_line("/etc/hosts what is this") is None
    assert split_line("fix 1") is None and split_line("/") is None
