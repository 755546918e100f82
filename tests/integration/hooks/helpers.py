"""Agents with hooks against the fake LLM server, and hook scripts written the way
Claude Code users write them (reading the JSON payload on stdin)."""

from __future__ import annotations

import json
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import AgentEvent, HookRan
from loom_engine.hooks.config import HookSet, parse_hooks
from loom_engine.parts import AgentParts
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.factory import create_provider
from loom_engine.tools.base import Tool
from loom_engine.transcript import SessionLog
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.fake_llm.scenario import RecordedRequest


def hooks(table: Mapping[str, Any]) -> HookSet:
    """A ``hooks`` table as it would stand in .claude/settings.json."""
    parsed, problems = parse_hooks(json.loads(json.dumps(table)), source=".claude/settings.json", in_project=True)
    assert not problems, problems
    return HookSet(tuple(parsed))


def on(event: str, command: str, matcher: str = "", **entry: Any) -> dict[str, Any]:
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, **entry}]}]}


def script(folder: Path, name: str, text: str) -> Path:
    """An executable hook script in ``folder/.claude/hooks``."""
    where = folder / ".claude" / "hooks"
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def agent(workspace: Path, server: FakeLLMServer, hook_set: HookSet, *, interactive: bool = False,
          permissions: PermissionManager | None = None, tools: Sequence[str] | None = None,
          extra_tools: Sequence[Tool] = (), session: SessionLog | None = None) -> Agent:
    provider = create_provider("anthropic", api_key="test", base_url=server.anthropic_base_url)
    config = AgentConfig(model="claude-haiku-4-5", interactive=interactive,
                         tool_names=tuple(tools) if tools is not None else None)
    return Agent(config,
                 AgentParts(provider=provider, tools=[*default_tools(), *extra_tools],
                            workspace=Workspace.at(workspace), permissions=permissions, hooks=hook_set),
                 session=session, system_prompt="you are a test")


async def collect(agent: Agent, prompt: str) -> list[AgentEvent]:
    return [event async for event in agent.run(prompt)]


def hook_runs(events: Sequence[AgentEvent]) -> list[HookRan]:
    return [e for e in events if isinstance(e, HookRan)]


def tool_results(request: RecordedRequest) -> list[dict[str, Any]]:
    """The tool_result blocks the request's last message carries."""
    last = request.messages[-1]
    content = last["content"] if isinstance(last["content"], list) else []
    return [block for block in content if block.get("type") == "tool_result"]


def result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def user_texts(request: RecordedRequest) -> list[str]:
    """Every text block of the request's user messages, in order."""
    texts = []
    for message in request.messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
            continue
        texts.extend(block["text"] for block in content if block.get("type") == "text")
    return texts
