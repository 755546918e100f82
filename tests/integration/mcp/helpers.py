"""Running `loom run` with MCP servers against the fake LLM server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.doubles.fake_llm import FakeLLMServer, RecordedRequest
from tests.doubles.loom_command import loom, loom_env


def write_servers(path: Path, servers: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}, indent=1))
    return path


def run_loom(tmp_path: Path, cwd: Path, server: FakeLLMServer, args: list[str], *,
             user_servers: Mapping[str, Any] | None = None, timeout: float = 120,
             **env: str) -> subprocess.CompletedProcess[str]:
    if user_servers is not None:
        write_servers(tmp_path / "config" / "mcp.json", user_servers)
    environment = loom_env(tmp_path, server, MCP_TIMEOUT="60000", **env)
    return loom(["run", *args], cwd, environment, timeout=timeout)


def tool_names(request: RecordedRequest) -> list[str]:
    return [t["name"] for t in request.body.get("tools", [])]


def tool_results(request: RecordedRequest) -> list[dict[str, Any]]:
    """The tool_result blocks (and images) of the request's last user message."""
    return [b for b in request.messages[-1]["content"] if isinstance(b, dict)]


def result_text(request: RecordedRequest) -> str:
    blocks = [b for b in tool_results(request) if b.get("type") == "tool_result"]
    out = []
    for block in blocks:
        content = block.get("content", "")
        out.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(out)
