"""The one rule for naming what MCP servers offer: ``mcp__<server>__<tool>``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from loom_engine.mcp.names import (
    belongs_to,
    clean,
    is_mcp_name,
    is_prompt_command,
    server_prefix,
    server_rule_names,
    tool_name,
)

ROOT = Path(__file__).resolve().parents[3]


def test_names_are_built_from_cleaned_parts() -> None:
    assert clean("my server/v2") == "my_server_v2"
    assert tool_name("my server", "get.thing") == "mcp__my_server__get_thing"
    assert server_prefix("my server") == "mcp__my_server__"


def test_a_long_name_is_cut_and_kept_unique_by_a_hash() -> None:
    long = tool_name("s" * 40, "t" * 40)
    other = tool_name("s" * 40, "t" * 39 + "u")
    assert len(long) == len(other) == 64 and long != other
    assert long.startswith("mcp__" + "s" * 40 + "__") and long[-9] == "_"


def test_recognising_names_and_prompt_commands() -> None:
    assert is_mcp_name("mcp__time__now") and not is_mcp_name("read_file")
    assert is_prompt_command("/mcp__time__now zone=UTC")
    assert not is_prompt_command("mcp__time__now") and not is_prompt_command("/help")


def test_a_tool_belongs_to_its_server_as_configured() -> None:
    assert belongs_to("mcp__my_server__get", ("my server",))
    assert not belongs_to("mcp__my_serverx__get", ("my server",))
    assert not belongs_to("mcp__other__get", ("my server", "time"))


def test_server_rules_name_the_server_as_its_tools_do() -> None:
    # The tools of "My Server" are mcp__My_Server__*: a rule names the server the same way.
    assert server_rule_names("My Server") == frozenset({"mcp__my_server", "mcp__my_server__*"})


def test_importing_the_rule_loads_nothing_else() -> None:
    probe = ("import sys; import loom_engine.mcp.names; "
             "print(sorted(m for m in sys.modules if m.startswith(('loom_engine', 'mcp', 'pydantic'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "['loom_engine', 'loom_engine.mcp', 'loom_engine.mcp.names']"
