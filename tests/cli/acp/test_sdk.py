"""The SDK has one door, and nothing reaches the client without the redactor."""

from __future__ import annotations

import ast
from pathlib import Path

from loom_cli.acp.sdk import agent_text, redacted
from loom_engine.redact import Redactor

ROOT = Path(__file__).resolve().parents[3]


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_only_the_sdk_module_imports_the_acp_package() -> None:
    importers = {path.relative_to(ROOT).as_posix()
                 for package in ("loom_cli", "loom_engine", "builtin_tools") for path in (ROOT / package).rglob("*.py")
                 if any(name == "acp" or name.startswith("acp.") for name in _imported(path))}
    assert importers == {"loom_cli/acp/sdk.py"}


def test_an_update_is_redacted_whole() -> None:
    key = "sk-ant-api03-" + "a" * 90
    update = redacted(agent_text(f"the key is {key}"), Redactor.for_values([key]).redact_tree)
    assert key not in update.content.text and update.session_update == "agent_message_chunk"
