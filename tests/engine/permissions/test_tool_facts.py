"""The manager learns from the tools' declarations which tools read or write files and
which change only the session; a new tool that declares itself joins those checks."""

from __future__ import annotations

from dataclasses import dataclass

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.tool_facts import BUILTIN_TOOL_FACTS, ToolFacts

from .conftest import Env, bash


@dataclass(frozen=True)
class Declared:
    name: str
    reads_files: bool = False
    writes_files: bool = False
    session_only: bool = False


PLUGINS = (Declared("read_notes", reads_files=True), Declared("save_notes", writes_files=True),
           Declared("pin_note", session_only=True))
WITH_PLUGINS = ToolFacts(reads_files=BUILTIN_TOOL_FACTS.reads_files | {"read_notes"},
                         writes_files=BUILTIN_TOOL_FACTS.writes_files | {"save_notes"},
                         session_only=BUILTIN_TOOL_FACTS.session_only | {"pin_note"})


def manager(env: Env, facts: ToolFacts | None, mode: str = "default", **rules: tuple[str, ...]) -> PermissionManager:
    return PermissionManager(env.ws, mode=mode, layers=[RuleLayer("cli", **rules)],  # type: ignore[arg-type]
                             tool_facts=facts)


def test_facts_are_collected_from_the_declarations() -> None:
    assert ToolFacts.of(PLUGINS) == ToolFacts(frozenset({"read_notes"}), frozenset({"save_notes"}),
                                              frozenset({"pin_note"}))


def test_a_declared_file_reader_s_deny_rule_stops_a_bash_read(env: Env) -> None:
    declared = manager(env, WITH_PLUGINS, deny=("read_notes(src/**)",))
    assert bash(declared, "cat src/app.py").behavior == "deny"
    unknown = manager(env, None, deny=("read_notes(src/**)",))
    assert bash(unknown, "cat src/app.py").behavior == "allow"


def test_a_declared_file_writer_s_allow_rule_covers_a_redirection(env: Env) -> None:
    declared = manager(env, WITH_PLUGINS, allow=("save_notes(docs/**)",))
    assert bash(declared, "echo hi > docs/new.txt").behavior == "allow"
    unknown = manager(env, None, allow=("save_notes(docs/**)",))
    assert bash(unknown, "echo hi > docs/new.txt").behavior == "ask"


def test_plan_mode_allows_a_tool_that_changes_only_the_session(env: Env) -> None:
    declared = manager(env, WITH_PLUGINS, mode="plan")
    assert declared.check("pin_note", None, is_read_only=False).behavior == "allow"
    assert manager(env, None, mode="plan").check("pin_note", None, is_read_only=False).behavior == "deny"
    assert declared.check("todo_write", None, is_read_only=False).behavior == "allow"


def test_a_sub_agent_s_manager_keeps_the_facts(env: Env) -> None:
    child = manager(env, WITH_PLUGINS, mode="plan").child()
    assert child.tool_facts == WITH_PLUGINS
    assert child.check("pin_note", None, is_read_only=False).behavior == "allow"
