"""File tools: modes, rules and paths that lead outside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loom_engine.permissions.layers import DEFAULT_LAYER, RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.modes import MODES, next_mode
from loom_engine.permissions.targets import FileAccess
from loom_engine.workspace import Workspace

from .conftest import Env, read, write

READ_TOOLS = ("read_file", "glob", "grep", "ls")
WRITE_TOOLS = ("write_file", "edit_file", "multi_edit", "apply_patch")

# mode -> (read inside, write inside, read outside, write outside)
EXPECTED = {
    "default": ("allow", "ask", "ask", "deny"),
    "accept-edits": ("allow", "allow", "ask", "deny"),
    "plan": ("allow", "deny", "ask", "deny"),
    "bypass": ("allow", "allow", "allow", "deny"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", READ_TOOLS)
def test_read_tools_in_every_mode(env: Env, mode: str, tool: str) -> None:
    pm = env.manager(mode)
    assert read(pm, "src/app.py", tool=tool).behavior == EXPECTED[mode][0]
    assert read(pm, str(env.outside / "secret.txt"), tool=tool).behavior == EXPECTED[mode][2]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", WRITE_TOOLS)
def test_write_tools_in_every_mode(env: Env, mode: str, tool: str) -> None:
    pm = env.manager(mode)
    assert write(pm, "src/app.py", tool=tool).behavior == EXPECTED[mode][1]
    assert write(pm, str(env.outside / "new.txt"), tool=tool).behavior == EXPECTED[mode][3]


@pytest.mark.parametrize("mode", MODES)
def test_tools_without_a_target(env: Env, mode: str) -> None:
    pm = env.manager(mode)
    assert pm.check("todo_write", None, is_read_only=False).behavior == "allow"
    assert pm.check("skill", None, is_read_only=True).behavior == "allow"
    custom = pm.check("deploy", None, is_read_only=False)
    assert custom.behavior == ("deny" if mode == "plan" else "allow")
    if mode == "plan":
        assert "plan mode" in custom.reason


def test_plan_mode_tells_the_model_why(env: Env) -> None:
    decision = write(env.manager("plan"), "src/app.py")
    assert decision.behavior == "deny"
    assert "plan mode" in decision.reason and "src/app.py" in decision.reason
    assert "\n" not in decision.reason


@pytest.mark.parametrize("path", [
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "link_out/secret.txt",
    "link_out",
    "file_out",
    "link_in/../../outside/x",
])
def test_paths_that_lead_outside_count_as_outside(env: Env, path: str) -> None:
    pm = env.manager("accept-edits")
    assert read(pm, path).behavior == "ask"
    denied = write(pm, path)
    assert denied.behavior == "deny"
    assert "outside the workspace" in denied.reason
    assert str(env.outside) in denied.reason  # the resolved place, not what the model wrote


def test_absolute_and_home_paths(env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    pm = env.manager("accept-edits")
    assert write(pm, "~/.bashrc").behavior == "deny"
    assert str(home / ".bashrc") in write(pm, "~/.bashrc").reason
    assert write(pm, "/etc/passwd").behavior == "deny"
    assert write(pm, str(env.root / "src" / "new.py")).behavior == "allow"


def test_symlink_into_the_workspace_is_inside(env: Env) -> None:
    pm = env.manager("accept-edits")
    assert write(pm, "link_in/app.py").behavior == "allow"
    link = env.outside / "back_in"
    link.symlink_to(env.root / "src", target_is_directory=True)
    assert write(pm, str(link / "app.py")).behavior == "allow"


def test_a_path_that_does_not_exist_yet_is_still_resolved(env: Env) -> None:
    pm = env.manager("accept-edits")
    assert write(pm, "new/dir/file.py").behavior == "allow"
    assert write(pm, "link_out/new/dir/file.py").behavior == "deny"


def test_several_paths_take_the_strictest_answer(env: Env) -> None:
    pm = env.manager("accept-edits")
    decision = pm.check("apply_patch", FileAccess(("src/a.py", "../outside/b.py"), True),
                        is_read_only=False)
    assert decision.behavior == "deny"


def test_add_dir_allows_writes_there(env: Env) -> None:
    ws = Workspace.at(env.root, extra_dirs=(env.outside,))
    pm = PermissionManager(ws, mode="accept-edits")
    assert write(pm, "../outside/secret.txt").behavior == "allow"
    assert read(pm, "../outside/secret.txt").behavior == "allow"
    assert write(PermissionManager(ws, mode="default"), "../outside/x").behavior == "ask"


def test_rules_can_allow_outside_paths(env: Env) -> None:
    pm = env.manager("default", allow=(f"edit_file({env.outside}/**)", "read_file(../outside/*.txt)"))
    assert write(pm, "../outside/new.txt").behavior == "allow"
    assert write(pm, "../outside/new.txt", tool="write_file").behavior == "deny"  # rule names edit_file
    assert read(pm, "link_out/secret.txt").behavior == "allow"
    assert read(pm, "link_out/other.md").behavior == "ask"


def test_home_rules(env: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    pm = env.manager("default", allow=("edit(~/notes/**)",))
    assert write(pm, "~/notes/todo.md").behavior == "allow"
    assert write(pm, "~/other.md").behavior == "deny"


def test_a_bare_allow_rule_never_reaches_outside(env: Env) -> None:
    pm = env.manager("default", allow=("write_file",))
    assert write(pm, "src/x.py", tool="write_file").behavior == "allow"
    assert write(pm, "../outside/x.py", tool="write_file").behavior == "deny"


def test_gitignore_style_globs(env: Env) -> None:
    pm = env.manager("default", allow=("edit_file(src/**)", "edit_file(*.md)", "edit_file(./top.txt)"))
    assert write(pm, "src/pkg/deep/mod.py").behavior == "allow"
    assert write(pm, "docs/guide/intro.md").behavior == "allow"  # no slash: any depth
    assert write(pm, "top.txt").behavior == "allow"
    assert write(pm, "docs/top.txt").behavior == "ask"  # ./ anchors at the root
    assert write(pm, "tests/test_x.py").behavior == "ask"
    # `..` is resolved first, so it cannot smuggle a path into a matching folder name.
    assert write(pm, "src/../tests/x.py").behavior == "ask"


def test_deny_beats_ask_beats_allow_across_layers(env: Env) -> None:
    layers = [
        RuleLayer("user config (~/.config/loom/config.toml)", allow=("edit_file(src/**)",)),
        RuleLayer(".loom/settings.toml", ask=("edit_file(src/pkg/**)",)),
        RuleLayer("cli", deny=("edit_file(src/pkg/secret.py)",), allow=("edit_file(src/pkg/**)",)),
    ]
    pm = PermissionManager(env.ws, mode="accept-edits", layers=layers)
    assert write(pm, "src/app.py").behavior == "allow"
    asked = write(pm, "src/pkg/mod.py")
    assert asked.behavior == "ask" and ".loom/settings.toml" in asked.reason
    denied = write(pm, "src/pkg/secret.py")
    assert denied.behavior == "deny"
    assert denied.reason.endswith("edit_file(src/pkg/secret.py) from cli")


def test_deny_rules_apply_in_bypass_mode(env: Env) -> None:
    pm = env.manager("bypass", deny=("read(.env)",))
    (env.root / ".env").write_text("KEY=1\n")
    assert read(pm, ".env").behavior == "deny"
    assert read(pm, "src/.env", tool="grep").behavior == "deny"
    assert read(pm, "src/app.py").behavior == "allow"


def test_deny_patterns_without_a_slash_also_match_outside(env: Env) -> None:
    pm = env.manager("bypass", deny=("read(*.txt)",))
    assert read(pm, str(env.outside / "secret.txt")).behavior == "deny"


def test_git_and_loom_settings_always_ask(env: Env) -> None:
    for mode in ("accept-edits", "bypass"):
        pm = env.manager(mode, allow=("edit_file",))
        for path in (".git/config", ".git/hooks/pre-commit", ".loom/settings.toml",
                     ".loom/settings.local.toml", "vendor/lib/.git/config", "vendor/lib/.git"):
            decision = write(pm, path)
            assert decision.behavior == "ask", (mode, path)
            assert "defaults" in decision.reason
        assert read(pm, ".git/config").behavior == "allow"
        assert write(pm, ".github/workflows/ci.yml").behavior == "allow"
        assert write(pm, ".gitignore").behavior == "allow"


def test_suggestions_and_hints_for_edits(env: Env) -> None:
    pm = env.manager("default")
    decision = write(pm, "src/app.py")
    # Every file's rule has the same shape, anchored at the workspace root.
    assert decision.suggested_rules == ("edit_file(./src/app.py)",)
    assert "--permission-mode accept-edits" in decision.hint
    assert "--allow 'edit_file(./src/app.py)'" in decision.hint
    pm.allow_for_session(decision.suggested_rules)
    assert write(pm, "src/app.py").behavior == "allow"
    assert write(pm, "other/src/app.py").behavior == "ask"
    top = write(pm, "README.md")
    assert top.suggested_rules == ("edit_file(./README.md)",)
    pm.allow_for_session(top.suggested_rules)
    assert write(pm, "README.md").behavior == "allow"
    assert write(pm, "docs/README.md").behavior == "ask"


def test_suggestions_for_outside_reads_and_hints_for_denials(env: Env) -> None:
    pm = env.manager("default")
    asked = read(pm, "../outside/secret.txt")
    assert asked.suggested_rules == (f"read_file({env.outside / 'secret.txt'})",)
    assert f"--add-dir {env.outside}" in asked.hint
    pm.allow_for_session(asked.suggested_rules)
    assert read(pm, "../outside/secret.txt").behavior == "allow"
    denied = write(pm, "../outside/secret.txt")
    assert denied.suggested_rules == ()
    assert "--add-dir" in denied.hint


def test_special_characters_in_suggested_paths_round_trip(env: Env) -> None:
    pm = env.manager("default")
    for name in ("a[1].py", "star*.py", "!bang.py", "#hash.py", "sp ace.py", "q?.py"):
        decision = write(pm, f"docs/{name}")
        assert decision.behavior == "ask"
        pm.allow_for_session(decision.suggested_rules)
        assert write(pm, f"docs/{name}").behavior == "allow", name
    assert write(pm, "docs/a1.py").behavior == "ask"
    assert write(pm, "docs/starX.py").behavior == "ask"


def test_file_paths_are_checked_from_the_root_and_from_the_bash_cwd(env: Env) -> None:
    pm = env.manager("accept-edits")
    # Relative to the root this is outside, relative to src it is not: strictest wins.
    assert write(pm, "../outside/x", cwd=env.root / "src").behavior == "deny"
    assert write(pm, "../x", cwd=env.root / "src").behavior == "deny"


def test_mode_is_settable_and_validated(env: Env) -> None:
    pm = env.manager("default")
    pm.mode = "accept-edits"
    assert write(pm, "src/app.py").behavior == "allow"
    with pytest.raises(ValueError, match="unknown permission mode"):
        pm.mode = "yolo"  # type: ignore[assignment]
    with pytest.raises(ValueError):
        PermissionManager(env.ws, mode="nope")  # type: ignore[arg-type]


def test_shift_tab_cycle() -> None:
    assert next_mode("default") == "accept-edits"
    assert next_mode("accept-edits") == "plan"
    assert next_mode("plan") == "default"
    assert next_mode("plan", include_bypass=True) == "bypass"
    assert next_mode("bypass", include_bypass=True) == "default"
    assert next_mode("bypass") == "default"


def test_invalid_rules_name_their_source(env: Env) -> None:
    with pytest.raises(ValueError) as info:
        PermissionManager(env.ws, layers=[RuleLayer(".loom/settings.toml", allow=("bash(",))])
    message = str(info.value)
    assert "'bash('" in message and ".loom/settings.toml" in message and "\n" not in message
    with pytest.raises(ValueError, match="session"):
        env.manager().allow_for_session(["edit_file(!x)"])


def test_effective_rules_lists_every_layer(env: Env) -> None:
    pm = env.manager(allow=("bash(ls:*)",), deny=("read(.env)",))
    pm.allow_for_session(["bash(make test)"])
    rules = pm.effective_rules()
    assert ("deny", "read(.env)", "cli") in rules
    assert ("allow", "bash(ls:*)", "cli") in rules
    assert ("allow", "bash(make test)", "session") in rules
    assert ("ask", "edit(**/.git)", "defaults") in rules
    defaults = len(DEFAULT_LAYER.ask)
    assert [r for r in rules if r[2] == "defaults"] == rules[:defaults]


def test_without_defaults(env: Env) -> None:
    pm = PermissionManager(env.ws, mode="accept-edits", include_defaults=False)
    assert write(pm, ".git/config").behavior == "allow"
    assert pm.effective_rules() == []


def test_child_follows_the_parent_and_is_never_wider(env: Env) -> None:
    parent = env.manager("accept-edits", deny=("edit_file(src/pkg/**)",))
    child = parent.child()
    assert child.mode == "accept-edits"
    assert write(child, "src/app.py").behavior == "allow"
    assert write(child, "src/pkg/x.py").behavior == "deny"
    child.mode = "plan"
    assert write(child, "src/app.py").behavior == "deny"
    assert parent.mode == "accept-edits"
    with pytest.raises(ValueError, match="wider"):
        child.mode = "bypass"
    child.mode = "accept-edits"
    parent.mode = "default"  # the user narrows the parent while the child runs
    assert child.mode == "default"
    assert write(child, "src/app.py").behavior == "ask"
    # A user's answer given to a child's question counts for the whole session.
    child.allow_for_session(["edit_file(src/app.py)"])
    assert write(parent, "src/app.py").behavior == "allow"
    grandchild = child.child()
    assert grandchild.mode == "default"


def test_permission_decision_is_frozen(env: Env) -> None:
    decision = read(env.manager(), "src/app.py")
    with pytest.raises(AttributeError):
        decision.behavior = "deny"  # type: ignore[misc]


def test_root_itself_and_empty_paths(env: Env) -> None:
    pm = env.manager("default")
    assert read(pm, ".", tool="ls").behavior == "allow"
    assert read(pm, str(env.root), tool="glob").behavior == "allow"
    assert pm.check("glob", FileAccess((), False), is_read_only=True).behavior == "allow"
    assert os.path.isdir(env.root)
