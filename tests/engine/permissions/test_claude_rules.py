"""Claude Code's permission rules read as Loom's: the same rule where Loom can say it, and
never a wider one where it cannot (an allow left out or narrowed; a deny or ask asking)."""

from __future__ import annotations

import pytest

from loom_engine.permissions.claude_rules import ClaudeRule, claude_rule
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.rules import Behavior

from .conftest import Env, bash, read, write


@pytest.mark.parametrize("text, loom", [
    ("Read(./secrets/**)", "read(./secrets/**)"),
    ("Read(*.env)", "read(*.env)"),
    ("Read(~/.zshrc)", "read(~/.zshrc)"),
    ("Read(//etc/passwd)", "read(/etc/passwd)"),
    ("Read(///etc/**)", "read(/etc/**)"),
    ("Edit(/src/**/*.ts)", "edit(./src/**/*.ts)"),  # `/path`: from the project root
    ("Edit", "edit"),
    ("Grep(src/**)", "grep(src/**)"),
    ("LS", "ls"),
    ("MultiEdit(docs/**)", "multi_edit(docs/**)"),
    ("Bash", "bash"),
    ("Bash(*)", "bash"),
    ("Bash(npm run test:*)", "bash(npm run test:*)"),
    ("Bash(npm run build)", "bash(npm run build)"),
    ("Bash(npm run *)", "bash(npm run:*)"),  # Claude Code's newer form of the same prefix rule
    ("WebFetch(domain:docs.python.org)", "web_fetch(domain:docs.python.org)"),
    ("mcp__github__create_issue", "mcp__github__create_issue"),
    ("mcp__github__*", "mcp__github__*"),
    ("TodoWrite", "todo_write"),
    ("Task(reviewer)", "task(reviewer)"),
    ("WebSearch", "WebSearch"),  # no such tool in Loom: a rule that matches nothing
])
@pytest.mark.parametrize("behavior", ["allow", "deny", "ask"])
def test_rules_loom_can_say_exactly_map_one_to_one(text: str, loom: str, behavior: Behavior) -> None:
    assert claude_rule(text, behavior) == ClaudeRule(text, behavior, loom)


def test_write_is_write_file_when_allowed_and_every_writer_when_denied() -> None:
    assert claude_rule("Write(docs/**)", "allow").rule == "write_file(docs/**)"
    assert claude_rule("Write(docs/**)", "deny").rule == "write(docs/**)"
    assert claude_rule("Write(docs/**)", "ask").rule == "write(docs/**)"


@pytest.mark.parametrize("text, allow, fenced", [
    # A `*` glued to the last word: allowed as whole words only; denied or asked for every
    # command that starts with the words before it.
    ("Bash(npm run test*)", "bash(npm run test:*)", "bash(npm run:*)"),
    ("Bash(rm*)", "bash(rm:*)", "bash"),
    # A `*` inside the command: no allow rule; deny or ask for the words before it.
    ("Bash(git * --force)", None, "bash(git:*)"),
    ("Bash(* --version)", None, "bash"),
    ("Bash(docker compose*up)", None, "bash(docker:*)"),
])
def test_what_loom_cannot_match_exactly_never_widens(text: str, allow: str | None, fenced: str) -> None:
    allowed = claude_rule(text, "allow")
    assert allowed.rule == allow and allowed.note
    for behavior in ("deny", "ask"):
        rule = claude_rule(text, behavior)  # type: ignore[arg-type]
        assert (rule.behavior, rule.rule) == ("ask", fenced)
        assert rule.note is not None and rule.note.endswith(f"every call of {fenced} asks instead")


@pytest.mark.parametrize("text, fenced", [
    ("Read(!secrets/**)", "read"),  # a negation Loom's patterns do not have
    ("Bash(rm -rf $HOME)", "bash"),  # an expansion in a command rule
    ("Read(./a", "read"),  # no closing bracket
])
def test_a_rule_loom_cannot_read_asks_for_its_whole_tool(text: str, fenced: str) -> None:
    denied = claude_rule(text, "deny")
    assert (denied.behavior, denied.rule) == ("ask", fenced)
    assert claude_rule(text, "allow").rule is None


def test_a_name_that_is_no_tool_name_is_left_out() -> None:
    for behavior in ("allow", "deny"):
        rule = claude_rule("not a tool(x)", behavior)  # type: ignore[arg-type]
        assert rule.rule is None and rule.note is not None and rule.note.endswith("left out")


def _manager(env: Env, behavior: Behavior, *texts: str, mode: str = "bypass") -> PermissionManager:
    rules = [claude_rule(text, behavior) for text in texts]

    def of(wanted: Behavior) -> tuple[str, ...]:
        return tuple(r.rule for r in rules if r.behavior == wanted and r.rule is not None)

    layer = RuleLayer(".claude/settings.json", allow=of("allow"), deny=of("deny"), ask=of("ask"))
    return PermissionManager(env.ws, mode=mode, layers=[layer])  # type: ignore[arg-type]


def test_a_read_deny_rule_covers_every_reading_tool_and_bash(env: Env) -> None:
    (env.root / "secrets").mkdir()
    (env.root / "secrets" / "token.txt").write_text("t0ken\n")
    pm = _manager(env, "deny", "Read(./secrets/**)")
    for tool in ("read_file", "grep", "glob", "ls"):
        assert read(pm, "secrets/token.txt", tool=tool).behavior == "deny"
    assert bash(pm, "cat secrets/token.txt").behavior == "deny"
    assert read(pm, "src/app.py").behavior == "allow"


def test_an_absolute_rule_matches_outside_the_workspace(env: Env) -> None:
    pm = _manager(env, "deny", f"Read(/{env.outside}/**)")
    assert read(pm, str(env.outside / "secret.txt")).behavior == "deny"
    assert read(pm, "src/app.py").behavior == "allow"


def test_an_edit_rule_from_the_project_root(env: Env) -> None:
    pm = _manager(env, "deny", "Edit(/src/**)")
    assert write(pm, "src/app.py", tool="edit_file").behavior == "deny"
    assert write(pm, "src/app.py", tool="apply_patch").behavior == "deny"
    assert write(pm, "docs/src/x.md", tool="write_file").behavior == "allow"  # anchored at the root


def test_the_newer_bash_prefix_form_keeps_word_boundaries(env: Env) -> None:
    pm = _manager(env, "deny", "Bash(git push *)")
    assert bash(pm, "git push origin main").behavior == "deny"
    assert bash(pm, "git push").behavior == "deny"
    assert bash(pm, "git pushy").behavior == "allow"


def test_a_narrowed_allow_rule_allows_less_never_more(env: Env) -> None:
    pm = _manager(env, "allow", "Bash(touch made*)", mode="default")
    assert bash(pm, "touch made").behavior == "allow"
    assert bash(pm, "touch made.txt").behavior == "ask"  # Claude Code would allow it: here it asks
