"""The one list of permission modes, their order of width, and sub-agent managers built
through the constructor (issue 10, item 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.modes import MODES, check_mode, is_wider, narrower

from .conftest import Env, write


def test_modes_from_narrowest_to_widest() -> None:
    assert is_wider("default", than="plan")
    assert is_wider("accept-edits", than="default")
    assert is_wider("bypass", than="accept-edits")
    assert not is_wider("plan", than="bypass")
    assert not any(is_wider(mode, than=mode) for mode in MODES)
    assert narrower("bypass", "plan") == "plan"
    assert narrower("default", "accept-edits") == "default"


def test_an_unknown_mode_is_named_with_the_choices() -> None:
    assert check_mode("plan") == "plan"
    with pytest.raises(ValueError, match="'yolo'; use one of: default, accept-edits, plan, bypass"):
        check_mode("yolo")


def test_the_modes_module_loads_nothing_heavy() -> None:
    """The CLI imports it before the first frame: no parser, no other engine module."""
    code = ("import sys, loom_engine.permissions.modes; "
            "print(sorted(m for m in sys.modules if m.startswith(('loom_engine', 'tree_sitter'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['loom_engine', 'loom_engine.permissions', 'loom_engine.permissions.modes']"


def test_a_sub_agent_manager_is_built_by_the_constructor(env: Env) -> None:
    parent = env.manager("accept-edits", deny=("edit_file(src/pkg/**)",))
    kid = PermissionManager(env.ws, mode="default", parent=parent)
    assert kid.mode == "default"
    assert write(kid, "src/pkg/x.py").behavior == "deny"  # the parent's rules
    kid.allow_for_session(["edit_file(src/app.py)"])
    assert write(parent, "src/app.py").behavior == "allow"  # and its answers go back up
    assert kid.effective_rules() == parent.effective_rules()


def test_a_sub_agent_manager_is_never_wider_nor_has_rules_of_its_own(env: Env) -> None:
    parent = env.manager("default")
    with pytest.raises(ValueError, match="wider than its parent's 'default'"):
        PermissionManager(env.ws, mode="bypass", parent=parent)
    with pytest.raises(ValueError, match="from its parent's"):
        PermissionManager(env.ws, parent=parent, layers=[RuleLayer("cli", allow=("bash",))])
    with pytest.raises(ValueError, match="from its parent's"):
        PermissionManager(env.ws, parent=parent, save_rules=lambda rules: None)
