"""Property tests: thousands of generated paths and command lines."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.rules import parse_rule
from loom_engine.permissions.shell import analyze
from loom_engine.permissions.targets import CommandRun, FileAccess
from loom_engine.workspace import Workspace

PROPERTY = settings(max_examples=1000, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


# -- paths --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """root/ with folders and symlinks in every direction, and a sibling outside/."""
    base = tmp_path_factory.mktemp("prop")
    root = base / "root"
    outside = base / "outside"
    for folder in (root / "a" / "b", outside / "a", root / "root"):
        folder.mkdir(parents=True)
    (root / "a" / "l_out").symlink_to(outside, target_is_directory=True)
    (root / "l_in").symlink_to(root / "a", target_is_directory=True)
    (root / "a" / "b" / "l_up").symlink_to("../..", target_is_directory=True)
    (root / "l_rel_out").symlink_to("../outside/a", target_is_directory=True)
    (root / "l_dangling").symlink_to("../outside/missing")
    (outside / "l_back").symlink_to(root / "a", target_is_directory=True)
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    return Path(os.path.realpath(root)), Path(os.path.realpath(outside))


def _oracle(path: str) -> str:
    """Resolve like the kernel would, one component at a time (independent of realpath)."""
    pending = [p for p in path.split("/") if p]
    current = "/"
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current) or "/"
            continue
        candidate = os.path.join(current, part)
        if os.path.islink(candidate) and hops < 40:
            hops += 1
            target = os.readlink(candidate)
            pending = [p for p in target.split("/") if p] + pending
            if target.startswith("/"):
                current = "/"
            continue
        current = candidate
    return current


def _inside(resolved: str, root: Path) -> bool:
    return resolved == str(root) or resolved.startswith(str(root) + "/")


SEGMENTS = st.sampled_from(["a", "b", "..", ".", "l_out", "l_in", "l_up", "l_rel_out", "l_back",
                            "root", "outside", "x.py", "missing", "l_dangling", "loop1", ""])
ANCHORS = st.sampled_from(["", "", "", "/", "ROOT/", "OUTSIDE/", "~/", "./", "/tmp/"])


@PROPERTY
@given(anchor=ANCHORS, segments=st.lists(SEGMENTS, min_size=0, max_size=8))
def test_generated_paths_are_inside_only_when_they_really_are(
        tree: tuple[Path, Path], anchor: str, segments: list[str]) -> None:
    root, outside = tree
    raw = anchor.replace("ROOT", str(root)).replace("OUTSIDE", str(outside)) + "/".join(segments)
    if not raw:
        raw = "."
    expanded = os.path.expanduser(raw)
    absolute = expanded if expanded.startswith("/") else f"{root}/{expanded}"
    # A symlink loop cannot be followed to an answer (checked separately below).
    truly_inside = "loop1" not in segments and _inside(_oracle(absolute), root)
    pm = PermissionManager(Workspace.at(root), mode="accept-edits", include_defaults=False)
    wrote = pm.check("write_file", FileAccess((raw,), True), is_read_only=False)
    seen = pm.check("read_file", FileAccess((raw,), False), is_read_only=True)
    if truly_inside:
        assert wrote.behavior == "allow", (raw, wrote.reason)
        assert seen.behavior == "allow", (raw, seen.reason)
    elif "loop1" not in segments:
        assert wrote.behavior == "deny", (raw, wrote.reason)
        assert seen.behavior == "ask", (raw, seen.reason)
    else:
        assert wrote.behavior != "allow" or pm.workspace.contains(pm.workspace.resolve(raw))


@PROPERTY
@given(segments=st.lists(SEGMENTS, min_size=1, max_size=8))
def test_generated_paths_in_shell_commands_never_read_outside(
        tree: tuple[Path, Path], segments: list[str]) -> None:
    root, _ = tree
    raw = "/".join(segments) or "."
    # A symlink loop inside the workspace leads nowhere (the read fails): count it inside.
    truly_inside = "loop1" in segments or _inside(_oracle(f"{root}/{raw}"), root)
    pm = PermissionManager(Workspace.at(root), include_defaults=False)
    decision = pm.check("bash", CommandRun(f"cat {shlex.quote(raw)}", str(root)), is_read_only=False)
    if not truly_inside:
        assert decision.behavior != "allow", (raw, decision.reason)
    redirected = pm.check("bash", CommandRun(f"echo x > {shlex.quote(raw)}", str(root)),
                          is_read_only=False)
    if not truly_inside:
        assert redirected.behavior != "allow", (raw, redirected.reason)


# -- compound commands ----------------------------------------------------------------

ALLOWED = ["git status", "git diff --stat", "npm test", "make test", "ls -la", "cat src/app.py",
           "git log --oneline"]
RULES = ("bash(git status:*)", "bash(git diff:*)", "bash(npm test:*)", "bash(make test:*)")
DANGEROUS = ["rm", "curl", "python", "sh", "chmod", "dd", "mv", "touch", "node", "wget", "kill",
             "/bin/rm", "tee", "cp", "ssh", "scp", "shutdown", "docker", "pip", "truncate"]
ARG_TEXT = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")),
                   max_size=15)
FORMS = [
    "{x} && {r}", "{x} || {r}", "{x}; {r}", "{x} | {r}", "{x} & {r}", "{x}\n{r}", "{x} |& {r}",
    "{x} $({r})", "{x} `{r}`", '{x} "$({r})"', "{x} <({r})", "{x} >({r})", "({r}) && {x}",
    "{{ {r}; }} ; {x}", "{x}; ({r})", "{x} && if true; then {r}; fi", "{x} <<< $({r})",
    "{x}&&{r}", "{x};{r}", "{x}|{r}", "{x} && ({r})", "{x} || {{ {r}; }}", "{x}\n\n{r} # c",
    "timeout 5 {x} && {r}", "{x} 2>/dev/null && {r}", "{x} > /dev/null; {r}",
]


@st.composite
def random_command(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(DANGEROUS))
    args = draw(st.lists(ARG_TEXT, max_size=4))
    quoted = draw(st.booleans())
    rendered = [shlex.quote(a) if quoted or not a else a for a in args]
    return " ".join([name, *rendered])


@pytest.fixture(scope="module")
def plain_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("ws")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    return Workspace.at(root)


@PROPERTY
@given(first=st.sampled_from(ALLOWED), form=st.sampled_from(FORMS), other=random_command())
def test_a_prefix_rule_of_the_first_part_never_allows_the_rest(
        plain_ws: Workspace, first: str, form: str, other: str) -> None:
    pm = PermissionManager(plain_ws, layers=[RuleLayer("cli", allow=RULES)])
    alone = pm.check("bash", CommandRun(first, str(plain_ws.root)), is_read_only=False)
    assert alone.behavior == "allow", alone.reason
    command = form.format(x=first, r=other)
    decision = pm.check("bash", CommandRun(command, str(plain_ws.root)), is_read_only=False)
    assert decision.behavior != "allow", (command, decision.reason)


@PROPERTY
@given(first=st.sampled_from(ALLOWED), form=st.sampled_from(FORMS), other=random_command())
def test_deny_rules_are_found_in_any_position(
        plain_ws: Workspace, first: str, form: str, other: str) -> None:
    name = other.split(" ", 1)[0]
    pm = PermissionManager(plain_ws, mode="bypass",
                           layers=[RuleLayer("cli", deny=(f"bash({os.path.basename(name)}:*)",))])
    command = form.format(x=first, r=other)
    decision = pm.check("bash", CommandRun(command, str(plain_ws.root)), is_read_only=False)
    assert decision.behavior != "allow", (command, decision.reason)


# -- the scanner agrees with shlex's quoting ---------------------------------------------


@PROPERTY
@given(args=st.lists(st.text(max_size=12).filter(lambda t: "\0" not in t), min_size=0, max_size=6))
def test_shlex_quoted_arguments_come_back_unchanged(args: list[str]) -> None:
    result = analyze(shlex.join(["echo", *args]))
    assert result.doubt == ""
    assert len(result.commands) == 1
    assert [w.text for w in result.commands[0].words] == ["echo", *args]
    assert all(w.literal for w in result.commands[0].words)


SIMPLE_WORDS = st.sampled_from(["npm", "test", "run", "build", "-q", "--watch", "x.py", "src/",
                                "cargo", "a b", "it's", "$HOME", "*.py", "--flag=v", "(", ")", "&&"])


@PROPERTY
@given(head=st.sampled_from(["npm", "cargo", "python", "./run.sh", "make", "pytest"]),
       rest=st.lists(SIMPLE_WORDS, max_size=5))
def test_always_allow_rules_parse_and_allow_the_same_command(
        plain_ws: Workspace, head: str, rest: list[str]) -> None:
    command = shlex.join([head, *rest])
    pm = PermissionManager(plain_ws)
    decision = pm.check("bash", CommandRun(command, str(plain_ws.root)), is_read_only=False)
    assert decision.behavior == "ask"
    assert len(decision.suggested_rules) == 1
    for rule in decision.suggested_rules:
        parse_rule(rule)
    pm.allow_for_session(decision.suggested_rules)
    again = pm.check("bash", CommandRun(command, str(plain_ws.root)), is_read_only=False)
    assert again.behavior == "allow", (command, decision.suggested_rules)
    # ... and a rule saved for one command never lets a second one ride along.
    chained = pm.check("bash", CommandRun(command + " && rm -rf ~", str(plain_ws.root)),
                       is_read_only=False)
    assert chained.behavior != "allow"


SHELLISH = st.lists(st.sampled_from([*"ab /.~-*?[]{},;&|<>()$`'\"\\#=!\n\t0123456789",
                                     "git status", "rm", "cd ..", "$(", "<<EOF\n", "EOF",
                                     "2>&1", ">/dev/null", "\u00e9", "\x00", "\r"]),
                    max_size=30).map("".join)


@PROPERTY
@given(command=SHELLISH, mode=st.sampled_from(["default", "accept-edits", "plan", "bypass"]))
def test_any_input_gets_an_answer_and_never_an_exception(
        plain_ws: Workspace, command: str, mode: str) -> None:
    pm = PermissionManager(plain_ws, mode=mode,  # type: ignore[arg-type]
                           layers=[RuleLayer("cli", allow=RULES, deny=("bash(rm:*)",))])
    decision = pm.check("bash", CommandRun(command, str(plain_ws.root)), is_read_only=False)
    assert decision.behavior in ("allow", "ask", "deny")
    assert "\n" not in decision.reason
    for rule in decision.suggested_rules:
        parse_rule(rule)
    as_path = pm.check("write_file", FileAccess((command,), True), is_read_only=False)
    assert as_path.behavior in ("allow", "ask", "deny")
    for rule in as_path.suggested_rules:
        parse_rule(rule)
