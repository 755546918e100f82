"""Issue 19, hole 2: abbreviated long options walked around the read-only checks.

GNU getopt_long takes any unambiguous prefix of a long option, permutes options found
after the operands, bundles short options and reads a value glued to its letter; the
checks matched whole names as written. `grep --deref X .`, `diff -N --recu a b`,
`wc --files0=names` and the like read files outside the workspace through a symlink or a
list of names, auto-allowed in default, accept-edits and plan mode.

Each repro runs the real program first (when installed) to show that it does read the
secret outside, then asserts that Loom no longer runs it without asking.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .getopt_lab import MODES, SECRET, Lab, make_lab


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return make_lab(tmp_path)


def leaks(lab: Lab, command: str) -> bool:
    return lab.leaks(["bash", "-c", command])


def installed(command: str) -> None:
    program = command.split()[0]
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed, so the repro cannot be run for real")


# The issue's repros: each read a file outside the workspace, auto-allowed before.
ISSUE_REPROS = [
    f"grep --deref {SECRET} .",
    f"grep -r --dereference-rec {SECRET} .",
    "diff -N --recu a b",
    "wc --files0=names",
    "du --files0-fr=names",
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", ISSUE_REPROS)
def test_the_issue_repros_ask(lab: Lab, command: str, mode: str) -> None:
    installed(command)
    assert leaks(lab, command), f"the real `{command}` no longer reads outside: the repro is stale"
    assert lab.behavior(command, mode) != "allow", (command, mode)


# Other ways getopt reads what the checks did not: a value in the next word, options
# after the operands, a value glued to its letter, a cluster of short options.
MORE_FORMS = [
    "wc --files0 names",                      # --opt value
    "du --files0-f names",
    f"grep {SECRET} . --deref",               # GNU permutes: options after operands
    f"grep -n {SECRET} . --dereference-r",
    "diff a b -N --recu",
    "diff -N a --recur b",
    f"grep -ffile_out {SECRET} src",  # -f's value glued: patterns read outside
    "du -a --files0-fro=names",
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", MORE_FORMS)
def test_other_getopt_forms_ask(lab: Lab, command: str, mode: str) -> None:
    installed(command)
    assert lab.behavior(command, mode) != "allow", (command, mode)


def test_a_glued_value_names_the_file_it_reads(lab: Lab) -> None:
    # `-ffile_out` reads its patterns from the outside file through the symlink; with a
    # pattern file inside the workspace the same form stays allowed.
    (lab.root / "patterns").write_text("print\n")
    assert lab.behavior("grep -ffile_out src/app.py", "default") == "ask"
    assert lab.behavior("grep -fpatterns src/app.py", "default") == "allow"


@pytest.mark.parametrize("mode", MODES)
def test_a_pattern_given_by_an_option_is_not_the_tree_walked(lab: Lab, mode: str) -> None:
    # With no file operand `grep -R` walks `.` (and link_out); `src` is a second pattern,
    # not a folder to walk, even though a folder of that name exists.
    command = f"grep -R -e {SECRET} -e src"
    installed(command)
    assert leaks(lab, command)
    assert lab.behavior(command, mode) != "allow"


@pytest.mark.parametrize("command", [
    "rg -iz x",         # -z in a cluster: decompressors found on PATH run
    "rg -zi x",
    "rg -i --search-zip x",
    "rg --hostname-bin=./x x",
    "git diff --outp=patch",   # prefixes of git's writing/running options
    "git log --ext x",
])
def test_options_that_run_or_write_ask_in_any_spelling(lab: Lab, command: str) -> None:
    for mode in MODES:
        assert lab.behavior(command, mode) != "allow", (command, mode)


@pytest.mark.parametrize("command", [
    f"grep {SECRET} -- --deref",           # after `--` it is a file name, not an option
    "grep -e --deref src",                 # the value of -e, a pattern
    "grep --col=auto -rn print src",       # --col: --color and --colour are one option
    "grep --fixed -n print src",           # --fixed-regexp is --fixed-strings
    "diff --recu src src",                 # recursion that meets no symlink out
    "du --max=1 src",
    "ls --dereference-command-line src",
    "wc -l src/app.py",
    "find -L src -name '*.py'",
    "tail -n 3 src/app.py",
])
def test_abbreviations_that_read_inside_stay_allowed(lab: Lab, command: str) -> None:
    assert lab.behavior(command, "default") == "allow", command


@pytest.mark.parametrize("command", [
    "grep --d x src",        # ambiguous: --devices, --directories, --dereference-recursive
    "grep --zz x src",       # unknown
    "ls --deref src",        # ambiguous: --dereference, --dereference-command-line...
    "grep --count=3 x src",  # --count takes no value
    "cat -Y src/app.py",     # no such short option
    "find src -L",           # -L is a leading option; in the expression it is unknown
    "head -n",               # a value is missing
])
def test_options_the_program_would_not_take_ask(lab: Lab, command: str) -> None:
    assert lab.behavior(command, "default") == "ask", command
