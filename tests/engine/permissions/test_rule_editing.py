"""The user's own rules changed from inside Loom (/permissions): added for the session,
removed from the session or from the saved answers; other layers are never changed."""

from __future__ import annotations

import pytest

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from tests.engine.permissions.conftest import Env, bash


def test_a_typed_session_rule_of_any_behaviour(env: Env) -> None:
    pm = PermissionManager(env.ws)
    pm.add_session_rule("deny", "bash(rm:*)")
    pm.add_session_rule("allow", "bash(make test:*)")
    assert bash(pm, "rm -rf build").behavior == "deny"
    assert bash(pm, "make test").behavior == "allow"
    with pytest.raises(ValueError, match="invalid permission rule"):
        pm.add_session_rule("allow", "bash(unclosed")


def test_session_and_saved_rules_can_be_removed_and_others_not(env: Env) -> None:
    saved: list[str] = []
    forgotten: list[str] = []
    pm = PermissionManager(env.ws, layers=[RuleLayer("cli", allow=("bash(ls:*)",))], save_rules=saved.extend,
                           forget_rules=forgotten.extend)
    pm.allow_for_session(["bash(make test)"])
    pm.allow_for_project(["bash(make lint)"])
    pm.remove_rule("allow", "bash(make test)", "session")
    assert bash(pm, "make test").behavior == "ask"
    pm.remove_rule("allow", "bash(make lint)", "saved answers")
    assert forgotten == ["bash(make lint)"] and bash(pm, "make lint").behavior == "ask"
    for source in ("cli", "defaults"):
        with pytest.raises(ValueError, match=f"changed in {source}"):
            pm.remove_rule("allow", "bash(ls:*)", source)
    assert ("allow", "bash(ls:*)", "cli") in pm.effective_rules()


def test_a_sub_agent_changes_its_parents_rules(env: Env) -> None:
    pm = PermissionManager(env.ws)
    child = pm.child()
    child.add_session_rule("deny", "bash(curl:*)")
    assert ("deny", "bash(curl:*)", "session") in pm.effective_rules()
    child.remove_rule("deny", "bash(curl:*)", "session")
    assert not [r for r in pm.effective_rules() if r[2] == "session"]


def test_empty_always_allow_answers_add_nothing(env: Env) -> None:
    calls: list[tuple[str, ...]] = []
    pm = PermissionManager(env.ws, save_rules=lambda rules: calls.append(tuple(rules)))
    pm.allow_for_session(())
    pm.allow_for_project(())
    assert calls == [] and not [r for r in pm.effective_rules() if r[2] != "defaults"]
