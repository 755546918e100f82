"""Issue 19: read deny and ask rules hold against bash, not only the search tools.

With `Read(./secrets/**)` denied, the auto-allowed read-only `grep -r tok- .` printed
`./secrets/token.txt:tok-SECRET123`: the command check looked only at the paths named on
the line. Now a read-only command that reads through a folder (`grep -r`, `rg`, `find`,
`du`, `ls -R`, or the entries of a folder for `ls dir` and `diff`) asks when a read deny
or ask rule could cover something in it, in every mode, bypass included (where a rule's
deny of a named path holds too). A command cannot leave those files out the way a search does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_cli.sandbox_settings import SandboxSettings, read_denials, sandbox_config
from loom_cli.settings import load_settings
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.paths import compile_path_pattern
from loom_engine.permissions.targets import CommandRun, Confinement
from loom_engine.sandbox.status import Backend
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env
from tests.doubles.sandbox import BACKENDS, bash, real_path, real_sandbox, tool_context

TOKEN = "tok-SECRET123"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _rules(repo: Path, source: str, behavior: str) -> None:
    if source == "loom":
        _write(repo / ".loom" / "settings.toml", f'[permissions]\n{behavior} = ["read(secrets/**)"]\n')
    else:
        _write(repo / ".claude" / "settings.json", json.dumps({"permissions": {behavior: ["Read(./secrets/**)"]}}))


@pytest.fixture
def repo(workspace: Path) -> Path:
    _write(workspace / "secrets" / "token.txt", TOKEN + "\n")
    _write(workspace / "src" / "main.py", "print('tok-public')\n")
    _write(workspace / "notes.txt", "tok-public\n")
    return workspace


def _manager(repo: Path, tmp_path: Path, mode: str) -> PermissionManager:
    """The rules as the application loads them (a project's deny and ask rules need no trust)."""
    loaded = load_settings(repo, tmp_path / "config" / "config.toml", trusted=False)
    return PermissionManager(Workspace.at(repo), mode=mode,  # type: ignore[arg-type]
                             layers=[RuleLayer(r.source, r.allow, r.deny, r.ask) for r in loaded.rules])


WALKS = ["grep -r tok- .", "grep -r tok-", "grep --recur tok-", "grep -d recurse tok- .", "rg tok-",
         "rg tok- .", "find .", "find . -name '*.txt'", "ls -R", "ls secrets", "du -a", "du -a .",
         "diff -r src secrets", "diff src secrets"]


@pytest.mark.parametrize("source", ["loom", "claude"])
@pytest.mark.parametrize("behavior", ["deny", "ask"])
@pytest.mark.parametrize("mode", ["default", "accept-edits", "plan", "bypass"])
@pytest.mark.parametrize("command", WALKS)
def test_a_walk_through_a_covered_folder_asks(repo: Path, tmp_path: Path, source: str, behavior: str,
                                             mode: str, command: str) -> None:
    _rules(repo, source, behavior)
    decision = _manager(repo, tmp_path, mode).check("bash", CommandRun(command, str(repo)), is_read_only=False)
    assert decision.behavior == "ask", decision.reason
    assert "secrets/**) from ." in decision.reason and "needs approval" in decision.reason


def test_accept_edits_in_the_sandbox_still_asks_about_the_walk(repo: Path, tmp_path: Path) -> None:
    """The sandbox lets accept-edits run commands unasked, but not past a rule's ask."""
    _rules(repo, "claude", "deny")
    confined = CommandRun("grep -r tok- .", str(repo), confinement=Confinement(network="off"))
    decision = _manager(repo, tmp_path, "accept-edits").check("bash", confined, is_read_only=False)
    assert decision.behavior == "ask" and "may cover some" in decision.reason


@pytest.mark.parametrize("mode", ["default", "accept-edits", "plan", "bypass"])
@pytest.mark.parametrize("command", ["cat secrets/*", "cat */token.txt", "head secrets/token.txt"])
def test_a_glob_into_a_covered_folder_is_denied(repo: Path, tmp_path: Path, mode: str, command: str) -> None:
    _rules(repo, "claude", "deny")
    decision = _manager(repo, tmp_path, mode).check("bash", CommandRun(command, str(repo)), is_read_only=False)
    assert decision.behavior == "deny", decision.reason
    assert "denied by rule read(./secrets/**) from .claude/settings.json" in decision.reason


@pytest.mark.parametrize("command", ["grep -r tok- src", "find src", "rg tok- src notes.txt", "ls", "ls src",
                                     "du -a src", "grep tok- notes.txt", "ls -R src"])
def test_walks_no_rule_can_reach_still_run(repo: Path, tmp_path: Path, command: str) -> None:
    _rules(repo, "loom", "deny")
    decision = _manager(repo, tmp_path, "default").check("bash", CommandRun(command, str(repo)), is_read_only=False)
    assert decision.behavior == "allow", decision.reason


def test_without_a_read_rule_the_walk_runs(repo: Path, tmp_path: Path) -> None:
    _write(repo / ".loom" / "settings.toml", '[permissions]\ndeny = ["edit(secrets/**)"]\n')
    decision = _manager(repo, tmp_path, "default").check("bash", CommandRun("grep -r tok- .", str(repo)),
                                                         is_read_only=False)
    assert decision.behavior == "allow", decision.reason


@pytest.mark.parametrize(("spec", "walked", "could"), [
    ("secrets/**", "", True), ("secrets/**", "secrets/deeper", True), ("secrets/**", "src", False),
    ("./secrets/deeper/*.txt", "secrets", True), ("./secrets/deeper/*.txt", "secret", False),
    ("**/token.txt", "src", True), ("*.pem", "src", True), (".env", "src", True),
    ("SECRETS/**", "secrets", True),  # deny rules match folded: a case-insensitive disk
])
def test_which_patterns_could_cover_something_in_a_folder(tmp_path: Path, spec: str, walked: str,
                                                          could: bool) -> None:
    pattern = compile_path_pattern(spec, tmp_path)
    assert pattern.could_match_below(tmp_path / walked if walked else tmp_path) is could


def test_an_outside_pattern_is_checked_by_its_resolved_folder(tmp_path: Path) -> None:
    root, private = tmp_path / "ws", tmp_path / "private"
    pattern = compile_path_pattern(f"{private}/**", root)
    assert pattern.could_match_below(tmp_path) and pattern.could_match_below(private / "x")
    assert not pattern.could_match_below(root)
    assert pattern.could_match_below(private, one_level=True)
    assert not pattern.could_match_below(tmp_path, one_level=True)


def test_loom_run_grep_r_is_refused_and_the_token_stays_out(repo: Path, tmp_path: Path,
                                                            fake_llm: FakeLLMServer) -> None:
    """The repro, end to end: `Read(./secrets/**)` denied in .claude/settings.json, default mode."""
    _rules(repo, "claude", "deny")
    fake_llm.enqueue(Reply.tool("bash", {"command": "grep -r tok- ."}), Reply.text("done"))
    done = loom(["run", "find the tokens"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    result = json.dumps(fake_llm.requests[-1].messages[-1])
    assert TOKEN not in result
    assert "read(./secrets/**) from .claude/settings.json" in result


# -- the sandbox's wall: what a read deny rule names, no command inside can read --------

def test_read_deny_rules_naming_one_place_become_walls(tmp_path: Path) -> None:
    root, home = tmp_path / "ws", tmp_path / "home"
    denials = read_denials(["read(./secrets/**)", "read_file(keys/)", "grep(.env)", "read(~/private/**)",
                            "read(*.pem)", "read(**/id_rsa)", "read(./src/*/x)", "edit(./build/**)",
                            "bash(rm:*)", "read"], root, home=home)
    assert denials.paths == (root / "secrets", root / "keys", root / ".env", home / "private")
    assert denials.unbound == ("read(*.pem)", "read(**/id_rsa)", "read(./src/*/x)", "read")
    assert denials.note() == ("read deny rules with a wildcard are not walls, only asked about: "
                              "read(*.pem), read(**/id_rsa), read(./src/*/x), read")
    assert read_denials(["read(./secrets/**)"], root, home=home).note() == ""


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_command_the_check_allows_cannot_read_a_denied_folder(repo: Path, backend: Backend) -> None:
    root = real_path(repo)
    denials = read_denials(["read(./secrets/**)"], root, home=Path.home())
    config = sandbox_config(SandboxSettings(), root, home=Path.home(), own_folders=(),
                            denied_reads=denials.paths)
    ctx = tool_context(Workspace.at(root), real_sandbox(Workspace.at(root), backend, config))
    out = await bash(ctx, "cat secrets/token.txt; grep -r tok- .")
    assert TOKEN not in out.content and "tok-public" in out.content
    shown = await bash(ctx, "cat secrets/token.txt", unsandboxed=True)
    assert TOKEN in shown.content  # the wall is what kept it out


def test_loom_run_in_bypass_cannot_read_a_denied_file_through_another_program(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """Bypass allows `tac secrets/token.txt` (a program the check does not know); the sandbox,
    built with the rule's folder hidden, keeps the token out all the same."""
    _rules(repo, "claude", "deny")
    fake_llm.enqueue(Reply.tool("bash", {"command": "tac secrets/token.txt"}), Reply.text("done"))
    done = loom(["run", "read the token", "--permission-mode", "bypass"], repo,
                loom_env(tmp_path, fake_llm, LOOM_SANDBOX="on"))
    assert done.returncode == 0, done.stderr
    result = json.dumps(fake_llm.requests[-1].messages[-1])
    assert TOKEN not in result
    assert "secrets/token.txt" in result and "Permission denied" not in result  # it ran, and read nothing


def test_loom_sandbox_names_the_rules_it_cannot_make_walls(repo: Path, tmp_path: Path,
                                                           fake_llm: FakeLLMServer) -> None:
    _write(repo / ".claude" / "settings.json",
           json.dumps({"permissions": {"deny": ["Read(./secrets/**)", "Read(**/*.pem)"]}}))
    done = loom(["sandbox"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "read deny rules with a wildcard are not walls, only asked about: read(**/*.pem)" in done.stdout
    [unreadable] = [line for line in done.stdout.splitlines() if line.startswith("  unreadable")]
    assert unreadable.endswith(", secrets")  # the rule's folder, shown from the workspace
