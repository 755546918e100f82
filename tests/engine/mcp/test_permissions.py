"""Permission rules for MCP tools: mcp__server__tool, mcp__server__*, mcp__server."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.modes import PermissionMode
from loom_engine.permissions.targets import McpCall
from loom_engine.workspace import Workspace


def _check(tmp_path: Path, tool: str, call: McpCall, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = (),
           ask: tuple[str, ...] = (), mode: PermissionMode = "default") -> tuple[str, str]:
    manager = PermissionManager(Workspace.at(tmp_path), mode=mode,
                                layers=[RuleLayer("command line", allow=allow, deny=deny, ask=ask)])
    decision = manager.check(tool, call, is_read_only=call.read_only)
    return decision.behavior, decision.hint


WRITE = McpCall("time", "set_clock", read_only=False)
READ = McpCall("time", "get_current_time", read_only=True)


def test_unannotated_tool_asks_and_names_the_flag(tmp_path: Path) -> None:
    behavior, hint = _check(tmp_path, "mcp__time__set_clock", WRITE)
    assert behavior == "ask" and "--allow mcp__time__set_clock" in hint


def test_read_only_tool_runs_in_default_mode(tmp_path: Path) -> None:
    assert _check(tmp_path, "mcp__time__get_current_time", READ)[0] == "allow"


@pytest.mark.parametrize("rule", ["mcp__time__*", "mcp__time", "mcp__time__set_clock", "MCP__Time__*"])
def test_server_and_tool_rules_allow(tmp_path: Path, rule: str) -> None:
    assert _check(tmp_path, "mcp__time__set_clock", WRITE, allow=(rule,))[0] == "allow"


def test_rules_of_another_server_do_not_apply(tmp_path: Path) -> None:
    assert _check(tmp_path, "mcp__time__set_clock", WRITE, allow=("mcp__timer__*", "mcp__tim"))[0] == "ask"


def test_deny_beats_allow_and_covers_read_only_tools(tmp_path: Path) -> None:
    assert _check(tmp_path, "mcp__time__set_clock", WRITE, allow=("mcp__time__*",),
                  deny=("mcp__time__set_clock",))[0] == "deny"
    assert _check(tmp_path, "mcp__time__get_current_time", READ, deny=("mcp__time",))[0] == "deny"
    assert _check(tmp_path, "mcp__time__get_current_time", READ, ask=("mcp__time__*",))[0] == "ask"


def test_modes(tmp_path: Path) -> None:
    assert _check(tmp_path, "mcp__time__set_clock", WRITE, mode="plan")[0] == "deny"
    assert _check(tmp_path, "mcp__time__set_clock", WRITE, mode="plan", allow=("mcp__time",))[0] == "deny"
    assert _check(tmp_path, "mcp__time__get_current_time", READ, mode="plan")[0] == "allow"
    assert _check(tmp_path, "mcp__time__set_clock", WRITE, mode="bypass")[0] == "allow"
    assert _check(tmp_path, "mcp__time__set_clock", WRITE, mode="accept-edits")[0] == "ask"


def test_a_server_rule_names_the_server_as_its_tools_do(tmp_path: Path) -> None:
    # A server configured as "my server" has tools named mcp__my_server__…: the rule the
    # hint suggests, and any rule spelt that way, covers them.
    call = McpCall("my server", "set_clock", read_only=False)
    behavior, hint = _check(tmp_path, "mcp__my_server__set_clock", call)
    assert behavior == "ask" and "--allow 'mcp__my_server__*'" in hint
    assert _check(tmp_path, "mcp__my_server__set_clock", call, allow=("mcp__my_server__*",))[0] == "allow"
    assert _check(tmp_path, "mcp__my_server__set_clock", call, deny=("mcp__my_server",))[0] == "deny"
