"""Splitting command lines into the simple commands bash would run."""

from __future__ import annotations

import pytest

from loom_engine.permissions.commands import (
    cd_target,
    deny_candidates,
    read_only_command,
    runs_hidden_code,
    strip_wrappers,
)
from loom_engine.permissions.shell import ShellDoubt, Word, analyze, rule_words


def commands(line: str) -> list[list[str]]:
    result = analyze(line)
    assert result.doubt == "", result.doubt
    return [[w.text for w in (*c.assignments, *c.words)] for c in result.commands]


def words(line: str) -> tuple[Word, ...]:
    """The words of the outermost command (substitutions come before it)."""
    result = analyze(line)
    assert result.doubt == "", result.doubt
    return result.commands[-1].words


@pytest.mark.parametrize("line, expected", [
    ("git status && rm -rf ~", [["git", "status"], ["rm", "-rf", "~"]]),
    ("a || b", [["a"], ["b"]]),
    ("a; b", [["a"], ["b"]]),
    ("a | b", [["a"], ["b"]]),
    ("a |& b", [["a"], ["b"]]),
    ("a & b", [["a"], ["b"]]),
    ("a\nb", [["a"], ["b"]]),
    ("a&&b||c;d|e&f", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
    ("(a; b) && c", [["a"], ["b"], ["c"]]),
    ("{ a; b; } && c", [["a"], ["b"], ["c"]]),
    ("if grep -q x f; then echo y; else rm z; fi", [["grep", "-q", "x", "f"], ["echo", "y"], ["rm", "z"]]),
    ("! grep x f", [["grep", "x", "f"]]),
])
def test_every_operator_separates_commands(line: str, expected: list[list[str]]) -> None:
    assert commands(line) == expected


@pytest.mark.parametrize("line, inner, outer", [
    ("ls $(rm -rf /)", ["rm", "-rf", "/"], "ls"),
    ("echo `rm a` b", ["rm", "a"], "echo"),
    ('echo "$(rm -rf ~)"', ["rm", "-rf", "~"], "echo"),
    ("diff <(ls a) b", ["ls", "a"], "diff"),
    ("tee >(rm x)", ["rm", "x"], "tee"),
    ("cat <<< $(rm q)", ["rm", "q"], "cat"),
])
def test_substitutions_are_commands_of_their_own(line: str, inner: list[str], outer: str) -> None:
    found = commands(line)
    assert inner in found
    assert any(c[0] == outer for c in found)


def test_substituted_words_are_not_literal() -> None:
    ws = words("echo $(date) $HOME ${USER} plain")
    assert [w.literal for w in ws] == [True, False, False, False, True]


@pytest.mark.parametrize("line, argument", [
    ('echo "a && b"', "a && b"),
    ("echo 'x; rm -rf ~'", "x; rm -rf ~"),
    ("echo a\\;b", "a;b"),
    ("echo 'a|b'", "a|b"),
    ('echo "it\'s"', "it's"),
    ('echo "a\\"b"', 'a"b'),
    ("echo $'\\n'", "$'\\n'"),
])
def test_quotes_hide_operators(line: str, argument: str) -> None:
    assert commands(line) == [["echo", argument]]


def test_comments_and_line_continuations() -> None:
    assert commands("echo a#b # && rm -rf ~") == [["echo", "a#b"]]
    assert commands("git \\\n  status") == [["git", "status"]]


def test_assignments_are_separated_from_the_command() -> None:
    cmd = analyze("FOO=1 BAR=$(x) npm test").commands[-1]
    assert [w.text for w in cmd.assignments] == ["FOO=1", "BAR=$(x)"]
    assert [w.text for w in cmd.words] == ["npm", "test"]
    # After the command name, NAME=value is an ordinary argument.
    assert [w.text for w in words("make CC=gcc")] == ["make", "CC=gcc"]


@pytest.mark.parametrize("line, op, kind, target, fd", [
    ("ls > out", ">", "write", "out", None),
    ("ls >> out", ">>", "write", "out", None),
    ("ls 2> err", ">", "write", "err", 2),
    ("ls &> all", "&>", "write", "all", None),
    ("ls &>> all", "&>>", "write", "all", None),
    ("ls >| out", ">|", "write", "out", None),
    ("ls >& out", ">&", "write", "out", None),
    ("ls <> rw", "<>", "write", "rw", None),
    ("ls 2>&1", ">&", "dup", "1", 2),
    ("ls >&2", ">&", "dup", "2", None),
    ("cat < in", "<", "read", "in", None),
    ("ls 2>/dev/null", ">", "write", "/dev/null", 2),
    ("echo a>b", ">", "write", "b", None),
])
def test_redirections(line: str, op: str, kind: str, target: str, fd: int | None) -> None:
    cmd = analyze(line).commands[0]
    (redirect,) = cmd.redirects
    assert (redirect.op, redirect.kind, redirect.target.text, redirect.fd) == (op, kind, target, fd)


def test_redirection_of_a_group_is_kept() -> None:
    result = analyze("(cd x && ls) > out")
    assert result.doubt == ""
    assert [(r.op, r.target.text) for c in result.commands for r in c.redirects] == [(">", "out")]


def test_here_documents_are_skipped_when_quoted_or_plain() -> None:
    assert commands("cat <<'EOF' > f\n$(rm -rf ~)\nEOF\nls") == [["cat"], ["ls"]]
    assert commands("cat <<-EOF\n\thello $USER\n\tEOF\nls") == [["cat"], ["ls"]]


def test_substitutions_in_an_expanding_here_document_are_commands() -> None:
    # An unquoted delimiter: bash runs the $(...) in the body (the old scanner asked).
    assert commands("cat <<EOF\n$(rm -rf ~)\nEOF") == [["rm", "-rf", "~"], ["cat"]]
    # A backquote there is not parsed by the grammar: a doubt, never a miss.
    assert "backquote" in analyze("cat <<EOF\n`rm -rf ~`\nEOF").doubt


@pytest.mark.parametrize("line, fragment", [
    ('echo "unterminated', "double quote"),
    ("echo 'unterminated", "single quote"),
    ("echo `x", "backquote"),
    ("echo $(ls", "missing ')'"),
    ("ls )", "unbalanced"),
    ("for f in *; do rm $f; done", "for"),
    ("while true; do ls; done", "while"),
    ("case x in a) ls;; esac", "case"),
    ("f() { rm x; }", "function"),
    ("echo $((1 + 2))", "arithmetic"),
    ("(( x = 1 ))", "arithmetic"),
    ("[[ -f x ]] && ls", "[["),
    ("echo ${x:-$(rm -rf ~)}", "parameter expansion"),
    ("cat <<EOF\nno end", "here-document"),
    ("ls >", "target"),
    ("ls > | x", "target"),
    ("arr=(a b)", "("),
])
def test_what_cannot_be_followed_is_a_doubt(line: str, fragment: str) -> None:
    result = analyze(line)
    assert fragment in result.doubt


def test_glob_brace_and_parent_dot_flags() -> None:
    w = words("cat *.py '*.txt' {a,b} .*/x x.*")[1:]
    assert [x.glob for x in w] == [True, False, False, True, True]
    assert [x.brace for x in w] == [False, False, True, False, False]
    assert [x.glob_parent_dots for x in w] == [False, False, False, True, False]


def test_strip_wrappers() -> None:
    def stripped(line: str) -> list[str]:
        return [w.text for w in strip_wrappers(words(line))]

    assert stripped("timeout 5 git status") == ["git", "status"]
    assert stripped("timeout -s KILL -k 2 10s make test") == ["make", "test"]
    assert stripped("time -p nice -n 10 nohup pytest") == ["pytest"]
    assert stripped("nice -5 ls") == ["ls"]
    # Not a wrapper use: left alone (and so never matches an allow rule for "ls").
    assert stripped("timeout ls") == ["timeout", "ls"]
    assert stripped("sudo ls") == ["sudo", "ls"]


def test_deny_candidates_look_through_launchers() -> None:
    def cands(line: str) -> list[tuple[str, ...]]:
        cmd = analyze(line).commands[0]
        return deny_candidates(cmd.words, cmd.assignments)

    assert ("rm", "-rf", "x") in cands("sudo -u root rm -rf x")
    assert ("rm", "x") in cands("/bin/rm x")
    assert ("rm", "x") in cands("xargs rm x")
    assert ("rm", "x") in cands("env A=1 rm x")
    assert ("rm", "{}", ";") in cands("find . -exec rm {} \\;")
    assert ("rm",) not in cands("find . -name rm")


def test_hidden_code() -> None:
    assert runs_hidden_code(words("eval ls"))
    assert runs_hidden_code(words("bash -c 'rm -rf ~'"))
    assert runs_hidden_code(words("sh -lc x"))
    assert runs_hidden_code(words("source env.sh"))
    assert runs_hidden_code(words("xargs sh x"))
    assert not runs_hidden_code(words("bash script.sh"))
    assert not runs_hidden_code(words("python -c x"))


@pytest.mark.parametrize("line, paths", [
    ("ls", ()),
    ("cat a b", ("a", "b")),
    ("grep -rn foo src", ("foo", "src")),
    ("grep -f../pat x", ("../pat", "x")),
    ("git --no-pager log -n 5 -- a", ("5", "a")),
    ("find . -name '*.py' -type f", (".", "*.py", "f")),
    ("echo *", ("*",)),
    ("echo hi", ()),
    # option values, glued or not, and options after operands (file names for a program
    # run with POSIXLY_CORRECT), in the order written
    ("grep -e pat -fpats src", ("pat", "pats", "src")),
    ("grep x . --color", ("x", ".", "--color")),
    ("wc -- --files0-from=x", ("--files0-from=x",)),
    ("git log -O../order", ("../order",)),
])
def test_read_only_commands_and_their_paths(line: str, paths: tuple[str, ...]) -> None:
    check = read_only_command(words(line))
    assert check is not None
    assert check.paths == paths


@pytest.mark.parametrize("line", [
    "find . -exec rm {} ;", "find . -execdir x ;", "find . -delete", "find . -ok rm ;",
    "find . -fprint out", "find . -fprintf out x", "find . -fls out",
    "git diff --output=x", "git log --output x", "git -c core.pager=x log", "git push",
    "git difftool", "rg --pre sh x", "rg --pre=sh x", "cat $HOME/x", "ls {a,../..}",
    "sort x", "./cat x", "'ls'",
    # the file names inside the list cannot be checked
    "wc --files0-from=/etc/list", "du --files0-from=list", "find -files0-from list",
    # ... however the option is spelled
    "wc --files0=list", "wc --files0 list", "du -a --files0-fr=list",
    # an option the program would reject or read otherwise
    "grep --d x", "grep --count=2 x", "cat -Y x", "find src -L", "find . -fol", "head -n",
    "rg -iz x", "rg --fol x", "git diff --outp=x", "git log --ext",
])
def test_not_read_only(line: str) -> None:
    assert read_only_command(words(line)) is None


def test_cd_target() -> None:
    assert cd_target(words("cd src")) == "src"
    assert cd_target(words("cd")) == "~"
    assert cd_target(words("builtin cd ..")) == ".."
    assert cd_target(words("ls")) is None
    for line in ("cd -", "cd $X", "popd"):
        with pytest.raises(ShellDoubt):
            cd_target(words(line))


def test_rule_words() -> None:
    assert rule_words("git  diff") == ("git", "diff")
    assert rule_words("git commit -m 'fix bug'") == ("git", "commit", "-m", "fix bug")
    assert rule_words("CI=1 npm test") == ("CI=1", "npm", "test")
    for bad in ("a && b", "ls > x", "echo $HOME", "echo 'x"):
        with pytest.raises(ValueError):
            rule_words(bad)
