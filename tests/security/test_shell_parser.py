"""Issue 9, item 6: attacks on the bash analysis behind the permission checks.

Each case is a command line written to slip a command, or a file write, past the
analysis. The analysis passes a case when it either finds what bash would run (so the
rules see it) or declares a doubt (so the user is asked); a case that is pure data
(an operator in quotes) must be read as data, without inventing commands.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loom_engine.bus import EventBus
from loom_engine.execution import CancelToken
from loom_engine.messages import ToolUsePart
from loom_engine.metrics import RunMetrics
from loom_engine.permissions import _bash_tree
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.shell import MAX_ANALYSED_BYTES, CommandAnalysis, analyze
from loom_engine.permissions.targets import CommandRun
from loom_engine.tools.base import ToolContext, ToolSessionState
from loom_engine.tools.pipeline import ToolPipeline
from loom_engine.tools.registry import ToolRegistry
from loom_engine.workspace import Workspace

DOUBT = "doubt"

# (line, what must happen): DOUBT, or an argv the analysis must find (a doubt is then
# acceptable too), or ("data", argv) for a line that must be read exactly as that one
# command, without doubt.
ATTACKS: list[tuple[str, object]] = [
    # operators hidden in quotes are data
    ('echo "a && rm -rf ~"', ("data", ["echo", "a && rm -rf ~"])),
    ("echo 'x; rm -rf ~'", ("data", ["echo", "x; rm -rf ~"])),
    ("echo a\\;rm\\ x", ("data", ["echo", "a;rm x"])),
    ('echo "\\`rm x\\`"', ("data", ["echo", "`rm x`"])),
    ("echo “a; rm x”", ["rm", "x”"]),  # typographic quotes are not quotes
    # substitutions, nested and in double quotes
    ('echo "$(rm -rf ~)"', ["rm", "-rf", "~"]),
    ("echo $(echo $(rm -rf ~))", ["rm", "-rf", "~"]),
    ('echo "$(echo "$(rm x)")"', ["rm", "x"]),
    ("echo `rm x`", ["rm", "x"]),
    ("echo `echo \\`rm x\\``", DOUBT),  # nested backquotes
    ("echo $(( $(rm x) ))", DOUBT),
    ("echo ${x:-$(rm x)}", DOUBT),
    ("echo ${!ref}", DOUBT),  # ref='a[$(rm x)]' would run rm
    ("echo ${a[$(rm x)]}", DOUBT),
    ("echo ${x:0:$n}", DOUBT),
    ("a[$(rm x)]=1", DOUBT),
    # here-documents and here-strings
    ("cat <<EOF\n$(rm x)\nEOF", ["rm", "x"]),
    ("cat <<EOF\n`rm x`\nEOF", DOUBT),
    ("cat <<'EOF'\n$(rm x)\nEOF", ("data", ["cat"])),
    ("cat <<\\EOF\n`rm x`\nEOF", ("data", ["cat"])),
    ("cat <<EOF\nEOF \n$(rm x)\nEOF", ["rm", "x"]),
    ("cat <<EOF; rm y\nbody\nEOF", ["rm", "y"]),
    ("cat <<EOF\nbody\nEOF\nrm y", ["rm", "y"]),
    ("cat <<A <<B\n1\nA\n$(rm x)\nB", DOUBT),
    ("cat <<EOF\nno end $(rm x)", ["rm", "x"]),
    ("cat <<< $(rm q)", ["rm", "q"]),
    # bash -c and friends
    ('bash -c "rm x"', ["rm", "x"]),
    ("sh -c 'cd / && rm -rf x'", ["rm", "-rf", "x"]),
    ("bash -xec 'rm x'", ["rm", "x"]),
    ('bash -c "$CMD"', DOUBT),
    ("bash -lc 'rm x'", ["rm", "x"]),  # -l: a login shell (the profile is the user's)
    ("bash -ic 'ls'", DOUBT),  # -i: interactive, aliases and ~/.bashrc
    ("bash -O extglob -c 'rm x'", DOUBT),
    ("bash -c 'echo $(rm x)'", ["rm", "x"]),
    # quoting tricks
    ("echo $'\\x3b' ; rm x", ["rm", "x"]),
    ("$'\\x72m' x", DOUBT_OR_EXPANDED_NAME := "name-expansion"),
    ("r\\\nm -rf x", ["rm", "-rf", "x"]),
    ("'r'm x", ["rm", "x"]),
    ('r""m x', ["rm", "x"]),
    ("\\rm x", ["rm", "x"]),
    ("echo ok # ; rm -rf ~", ("data", ["echo", "ok"])),
    ("echo ok #\nrm x", ["rm", "x"]),
    ("echo 'unbalanced; rm x", DOUBT),
    ('echo "unbalanced; rm x', DOUBT),
    ("echo ok\x00; rm x", DOUBT),
    ("echo a''\\;rm x", ("data", ["echo", "a;rm", "x"])),
    # braces, process substitution, redirections
    ("{rm,-rf,x}", DOUBT),
    ("diff <(rm x) y", ["rm", "x"]),
    ("echo > >(rm x)", ["rm", "x"]),
    ("echo x >| /etc/passwd", "write:/etc/passwd"),
    ("echo x &> /etc/passwd", "write:/etc/passwd"),
    ("echo x &>> /etc/passwd", "write:/etc/passwd"),
    ("echo x >& /etc/passwd", "write:/etc/passwd"),
    ("echo x 2>/etc/passwd 2>&1", "write:/etc/passwd"),
    ("cat <> /etc/passwd", "write:/etc/passwd"),
    ("exec 3>/etc/passwd", "write:/etc/passwd"),
    ("(echo x) > /etc/passwd", "write:/etc/passwd"),
    ("echo x > /etc/pa''sswd", "write:/etc/passwd"),
    ("echo x {fd}>/etc/passwd", DOUBT),
    ("echo x 4>&- {fd}>/etc/passwd", DOUBT),
    # constructs the walker does not follow
    ("f() { rm x; }; f", DOUBT),
    ("function f { rm x; }", DOUBT),
    ("coproc rm x", DOUBT),
    ("(( x = $(rm x) ))", DOUBT),
    ("[[ $(rm x) ]]", DOUBT),
    ("for f in *; do rm $f; done", DOUBT),
    ("while true; do rm x; done", DOUBT),
    ("case x in x) rm x;; esac", DOUBT),
    ("select x in a; do rm x; done", DOUBT),
    ("arr=(a $(rm x))", DOUBT),
    # control flow the walker follows
    ("! rm x", ["rm", "x"]),
    ("if rm x; then :; fi", ["rm", "x"]),
    ("ls |& rm x", ["rm", "x"]),
    ("ls & rm x", ["rm", "x"]),
    ("{ ls; rm x; }", ["rm", "x"]),
    ("X=$(rm x) ls", ["rm", "x"]),
    ("echo $(<secret)", "read:secret"),
]


def _argvs(analysis: CommandAnalysis) -> list[list[str]]:
    return [[w.text for w in c.words] for c in analysis.commands]


def _passes(line: str, expected: object) -> bool:
    analysis = analyze(line)
    if expected == DOUBT:
        return analysis.doubt != ""
    if expected == DOUBT_OR_EXPANDED_NAME:
        return analysis.doubt != "" or any(c.words and not c.words[0].literal
                                           for c in analysis.commands)
    if isinstance(expected, tuple):
        return analysis.doubt == "" and _argvs(analysis) == [expected[1]]
    if isinstance(expected, str):
        kind, path = expected.split(":", 1)
        return analysis.doubt != "" or any(r.kind == kind and r.target.text == path
                                           for c in analysis.commands for r in c.redirects)
    return expected in _argvs(analysis) or analysis.doubt != ""


@pytest.mark.parametrize("line, expected", ATTACKS)
def test_attack(line: str, expected: object) -> None:
    assert _passes(line, expected), (line, analyze(line))


def test_attacks_never_run_under_a_prefix_rule(tmp_path: Path) -> None:
    """Through the manager: with `echo`, `cat`, `diff`, `ls` allowed by rule and `rm`
    denied, no attack line is simply allowed."""
    pm = PermissionManager(Workspace.at(tmp_path), layers=[RuleLayer(
        "cli", allow=("bash(echo:*)", "bash(cat:*)", "bash(diff:*)", "bash(ls:*)"),
        deny=("bash(rm:*)",))])
    for line, expected in ATTACKS:
        if isinstance(expected, tuple) or str(expected).startswith("read:"):
            continue  # data, or a read inside the workspace: allowed on purpose
        decision = pm.check("bash", CommandRun(line, str(tmp_path)), is_read_only=False)
        assert decision.behavior != "allow", (line, decision.reason)


def test_a_320_kb_command_asks_without_being_parsed(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    def no_parse(text: str, depth: int = 0) -> object:
        raise AssertionError("a line over the cap must not be parsed")

    monkeypatch.setattr(_bash_tree, "walk_source", no_parse)
    line = "echo " + "a && echo " * 32_000 + "done"
    assert len(line.encode()) >= 320_000 > MAX_ANALYSED_BYTES
    analysis = analyze(line)
    assert "too long" in analysis.doubt and analysis.commands == ()
    monkeypatch.undo()  # the manager parses its rules
    decision = PermissionManager(Workspace.at(tmp_path), layers=[RuleLayer(
        "cli", allow=("bash(echo:*)",))]).check("bash", CommandRun(line, str(tmp_path)),
                                                 is_read_only=False)
    assert decision.behavior == "ask" and "too long" in decision.reason


def test_long_chains_and_deep_nesting_under_the_cap_give_an_answer() -> None:
    chain = " && ".join(["ls"] * 9_000)
    assert len(chain.encode()) < MAX_ANALYSED_BYTES
    analysis = analyze(chain)
    assert analysis.doubt == "" and len(analysis.commands) == 9_000
    nested = "echo " + "$(echo " * 200 + "rm x" + ")" * 200
    assert "nesting too deep" in analyze(nested).doubt
    parens = "(" * 5_000 + "rm x" + ")" * 5_000
    assert analyze(parens).doubt


def test_code_points_that_crash_the_grammar_do_not_crash_the_check() -> None:
    """tree-sitter-bash 0.25.1 reads out of bounds on `a{` and a rare code point (a
    segfault in about half the runs): the grammar must only ever see ASCII. The child
    process tries many such code points, so a regression fails this test (most runs)
    instead of killing the test run."""
    text = "cat 'naïve' \U00058bcc{\U0002ac31 > résumé"
    stand_in = _bash_tree._ascii_stand_in(text, text.encode())
    assert stand_in.isascii() and len(stand_in) == len(text.encode())
    probe = ("from loom_engine.permissions.shell import analyze\n"
             "for cp in range(0x30000, 0x110000, 0x101):\n"
             "    analyze('a{' + chr(cp))\n"
             "print('alive')")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=120, check=False, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0 and "alive" in result.stdout, result.returncode
    cmd = analyze("cat naïve\U00058bcc > résumé").commands[0]
    assert [w.text for w in cmd.words] == ["cat", "naïve\U00058bcc"]
    assert [r.target.text for r in cmd.redirects] == ["résumé"]


@settings(max_examples=500, deadline=None)
@given(line=st.one_of(st.text(max_size=60), st.text(alphabet="$(){}[]<>|&;'\"`\\#!\n\t ~*?=-ab0",
                                                     max_size=60)))
def test_any_text_gets_an_analysis_and_never_an_exception(line: str) -> None:
    analysis = analyze(line)
    assert isinstance(analysis, CommandAnalysis)
    assert "\n" not in analysis.doubt and "\r" not in analysis.doubt


# -- the check runs off the event loop ------------------------------------------------


class _BlockingPermissions:
    """A real manager whose check waits until the event loop has ticked: if the check
    ran on the loop, the ticks could never happen and the wait would time out."""

    def __init__(self, manager: PermissionManager, ticked: threading.Event) -> None:
        self.manager = manager
        self.ticked = ticked
        self.saw_ticks = False

    def check(self, tool: str, target: object, **kw: object) -> object:
        self.saw_ticks = self.ticked.wait(timeout=30)
        return self.manager.check(tool, target, **kw)  # type: ignore[arg-type]


def test_the_permission_check_does_not_block_the_event_loop(tmp_path: Path) -> None:
    from builtin_tools import default_tools

    workspace = Workspace.at(tmp_path)
    ticked = threading.Event()
    permissions = _BlockingPermissions(PermissionManager(
        workspace, layers=[RuleLayer("cli", deny=("bash",))]), ticked)
    state = ToolSessionState()

    def make_context(call_id: str) -> ToolContext:
        return ToolContext(workspace=workspace, cancel=CancelToken(), state=state,
                           call_id=call_id, emit=lambda event: None)

    pipeline = ToolPipeline(registry=ToolRegistry(list(default_tools())), bus=EventBus(),
                            metrics=RunMetrics(), make_context=make_context,
                            emit=lambda event: None, stamp=dict, permissions=permissions,
                            interactive=False)

    async def scenario() -> tuple[int, str]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                if ticks >= 3:
                    ticked.set()
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        run = await pipeline.run(ToolUsePart(id="c1", name="bash",
                                             input={"command": "echo " + "x " * 40_000}))
        task.cancel()
        return ticks, str(run.result.content)

    ticks, content = asyncio.run(scenario())
    assert permissions.saw_ticks and ticks >= 3
    assert "Permission denied" in content
