"""Rule layers, and "always allow in this project" handed to the saver the application injects.

The engine reads no settings file and names none: the CLI reads them (tests/cli/
test_settings*.py) and passes RuleLayers; saving an answer is a callable it provides.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest

from loom_engine.permissions.layers import SOURCE_SAVED, RuleLayer
from loom_engine.permissions.manager import PermissionManager

from .conftest import Env, bash


def test_layers_keep_their_order_and_sources(env: Env) -> None:
    layers = [RuleLayer("user config", allow=("bash(make:*)",), deny=("bash(git push:*)",)),
              RuleLayer(".loom/settings.toml", ask=("bash(make deploy:*)",))]
    pm = PermissionManager(env.ws, layers=layers)
    assert bash(pm, "make build").behavior == "allow"
    assert bash(pm, "make deploy prod").behavior == "ask"  # a later ask beats an earlier allow
    assert bash(pm, "git push").behavior == "deny"
    assert bash(pm, "make build").reason == "rule bash(make:*) from user config"


def test_allow_for_project_hands_the_rules_to_the_saver(env: Env) -> None:
    saved: list[Sequence[str]] = []
    pm = PermissionManager(env.ws, save_rules=saved.append)
    assert bash(pm, "make test").behavior == "ask"
    pm.allow_for_project(["bash(make test)", "edit_file(src/**)"])
    assert saved == [("bash(make test)", "edit_file(src/**)")]
    assert bash(pm, "make test").behavior == "allow"
    assert ("allow", "bash(make test)", SOURCE_SAVED) in pm.effective_rules()
    assert not (env.root / ".loom").exists()


def test_a_bad_rule_saves_nothing(env: Env) -> None:
    saved: list[Sequence[str]] = []
    pm = PermissionManager(env.ws, save_rules=saved.append)
    with pytest.raises(ValueError, match="missing"):
        pm.allow_for_project(["bash(make test)", "bash("])
    assert saved == [] and bash(pm, "make test").behavior == "ask"


def test_without_a_saver_the_answer_cannot_be_kept(env: Env) -> None:
    pm = PermissionManager(env.ws)
    with pytest.raises(ValueError, match="nowhere to save"):
        pm.allow_for_project(["bash(make test)"])
    assert bash(pm, "make test").behavior == "ask"


def test_a_failing_saver_leaves_the_rule_out(env: Env) -> None:
    def broken(_rules: Sequence[str]) -> None:
        raise OSError("disk full")

    pm = PermissionManager(env.ws, save_rules=broken)
    with pytest.raises(OSError):
        pm.allow_for_project(["bash(make test)"])
    assert bash(pm, "make test").behavior == "ask"


def test_child_saves_through_the_parent(env: Env) -> None:
    saved: list[Sequence[str]] = []
    parent = PermissionManager(env.ws, save_rules=saved.append)
    parent.child().allow_for_project(["bash(make test)"])
    assert bash(parent, "make test").behavior == "allow"
    assert saved == [("bash(make test)",)]


def test_the_engine_names_no_settings_file_but_the_ones_it_protects() -> None:
    """Only the built-in ask rules (edits of Loom's settings files ask) may mention them."""
    folder = Path(__file__).resolve().parents[3] / "loom_engine" / "permissions"
    tree = ast.parse((folder / "layers.py").read_text())
    default_layer = next(node for node in ast.walk(tree) if isinstance(node, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == "DEFAULT_LAYER" for t in node.targets))
    mentions = [node for node in ast.walk(tree) if isinstance(node, ast.Constant)
                and isinstance(node.value, str) and "settings.local.toml" in node.value]
    protected = {id(node) for node in ast.walk(default_layer)}
    assert all(id(node) in protected for node in mentions)
    others = [p.name for p in folder.glob("*.py") if p.name != "layers.py" and "settings.local.toml" in p.read_text()]
    assert others == []
