"""Matchers (plain names, ``*``, regular expressions, MCP names), the session hooks the
application calls (SessionStart, SessionEnd, Notification), compaction hooks and abort."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from loom_engine.events import Aborted
from loom_engine.tools.function_tool import tool
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.processes import marked_sleep, running_with
from tests.integration.hooks.helpers import agent, collect, hook_runs, hooks, script, tool_results, user_texts

LOGGER = r'''#!/usr/bin/env bash
# usage: log.sh LABEL — appends "LABEL tool_name" for each call it sees
name=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_name"])')
echo "$1 $name" >> "$CLAUDE_PROJECT_DIR/calls.log"
'''


@tool(name="mcp__memory__store")
async def memory_store(text: str) -> str:
    """Store a note (stands in for an MCP server's tool)."""
    return "stored"


async def test_matchers_plain_names_star_regex_and_mcp(workspace: Path, fake_llm: FakeLLMServer) -> None:
    log = script(workspace, "log.sh", LOGGER)

    def group(matcher: str, label: str) -> dict[str, object]:
        return {"matcher": matcher, "hooks": [{"type": "command", "command": str(log), "args": [label]}]}

    table = {"PreToolUse": [group("Edit|Write", "writes"), group("*", "all"), group("", "empty"),
                            group("mcp__memory__.*", "memory"), group("read_file", "loom-name"),
                            group("Gr.p", "regex")]}
    fake_llm.enqueue(Reply.tools(("read_file", {"path": "README.md"}),
                                 ("write_file", {"path": "n.txt", "content": "x"}),
                                 ("mcp__memory__store", {"text": "hi"}), ("grep", {"pattern": "greet"})),
                     Reply.text("ok"))
    await collect(agent(workspace, fake_llm, hooks(table), extra_tools=[memory_store]), "go")
    lines = sorted((workspace / "calls.log").read_text().splitlines())
    assert lines == sorted([
        "all Read", "all Write", "all mcp__memory__store", "all Grep",
        "empty Read", "empty Write", "empty mcp__memory__store", "empty Grep",
        "writes Write", "memory mcp__memory__store", "loom-name Read", "regex Grep"])
    assert all(not block.get("is_error") for block in tool_results(fake_llm.requests[1]))


async def test_session_start_output_is_context_for_the_next_request(workspace: Path,
                                                                     fake_llm: FakeLLMServer) -> None:
    start = script(workspace, "start.sh", r'''#!/usr/bin/env bash
source=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["source"])')
echo "Session $source: the test command is 'make check'"
''')
    table = {"SessionStart": [{"matcher": "startup|resume", "hooks": [{"type": "command", "command": str(start)}]}]}
    loom = agent(workspace, fake_llm, hooks(table))
    events = await loom.session_started("startup")
    assert [(e.event, e.outcome) for e in hook_runs(events)] == [("SessionStart", "ok")]
    assert await loom.session_started("clear") == ()  # the matcher leaves clear out
    fake_llm.enqueue(Reply.text("ok"), Reply.text("ok again"))
    await collect(loom, "hello")
    assert any("Session startup: the test command is 'make check'" in t for t in user_texts(fake_llm.requests[0]))
    await collect(loom, "and now?")  # given once, not repeated
    assert sum("make check" in t for t in user_texts(fake_llm.requests[1])) == 1


RECORD = r'''#!/usr/bin/env python3
import json, sys
with open("events.log", "a") as log:
    log.write(json.dumps(json.load(sys.stdin)) + "\n")
'''


async def test_session_end_and_idle_notification(workspace: Path, fake_llm: FakeLLMServer) -> None:
    record = str(script(workspace, "record.py", RECORD))
    table = {"SessionEnd": [{"hooks": [{"type": "command", "command": record}]}],
             "Notification": [{"matcher": "idle_prompt", "hooks": [{"type": "command", "command": record}]}]}
    loom = agent(workspace, fake_llm, hooks(table))
    await loom.notify_idle("Loom is waiting for your input")
    events = await loom.session_ended("prompt_input_exit")
    assert [e.event for e in hook_runs(events)] == ["SessionEnd"]
    logged = [json.loads(line) for line in (workspace / "events.log").read_text().splitlines()]
    assert [(d["hook_event_name"], d.get("notification_type"), d.get("reason")) for d in logged] == [
        ("Notification", "idle_prompt", None), ("SessionEnd", None, "prompt_input_exit")]
    assert all(d["cwd"] == str(workspace) and d["permission_mode"] for d in logged)


SUMMARY = "\n".join(f"## {name}\n- a point" for name in ("Background context", "Key decisions", "Next steps"))


async def test_compaction_runs_pre_and_post_compact(workspace: Path, fake_llm: FakeLLMServer) -> None:
    record = str(script(workspace, "record.py", RECORD))
    table = {"PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": record}]}],
             "PostCompact": [{"hooks": [{"type": "command", "command": record}]}]}
    loom = agent(workspace, fake_llm, hooks(table))
    fake_llm.enqueue(Reply.tool("read_file", {"path": "README.md"}), Reply.text("read it"), Reply.text(SUMMARY))
    await collect(loom, "read the readme")
    events = [e async for e in loom.compact()]
    logged = [json.loads(line) for line in (workspace / "events.log").read_text().splitlines()]
    assert [(d["hook_event_name"], d["trigger"]) for d in logged] == [("PreCompact", "manual"),
                                                                       ("PostCompact", "manual")]
    assert [e.event for e in hook_runs(events)] == ["PreCompact", "PostCompact"]


async def test_abort_stops_a_running_hook(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo hi"}, id="c1"))
    sleeping = marked_sleep()
    table = {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"touch started; {sleeping}; touch finished"}]}]}
    loom = agent(workspace, fake_llm, hooks(table))
    run = asyncio.create_task(collect(loom, "go"))
    deadline = time.monotonic() + 60  # a bound on a hang
    while not (workspace / "started").exists():
        assert time.monotonic() < deadline, "the hook never started"
        await asyncio.sleep(0.05)
    loom.abort()
    # A limit on a hang, not a timing: a hook left running would hold the run for 600 s
    # (10 s was once too short for the clean-up on a loaded CI machine).
    events = await asyncio.wait_for(run, 60)
    assert isinstance(events[-1], Aborted)
    assert running_with(sleeping) == [] and not (workspace / "finished").exists()


async def test_hooks_see_the_project_dir_in_both_spellings(workspace: Path, fake_llm: FakeLLMServer) -> None:
    command = 'cat >/dev/null; echo "$LOOM_PROJECT_DIR|$CLAUDE_PROJECT_DIR|$PWD" > dirs.txt'
    fake_llm.enqueue(Reply.text("ok"))
    await collect(agent(workspace, fake_llm, hooks({"Stop": [{"hooks": [{"type": "command", "command": command}]}]})),
                  "hi")
    assert (workspace / "dirs.txt").read_text().strip() == "|".join([str(workspace)] * 3)



async def test_session_start_after_a_manual_compaction(workspace: Path, fake_llm: FakeLLMServer) -> None:
    table = {"SessionStart": [{"matcher": "compact", "hooks": [
        {"type": "command", "command": "cat >/dev/null; echo 'Remember: the API is frozen'"}]}]}
    loom = agent(workspace, fake_llm, hooks(table))
    fake_llm.enqueue(Reply.tool("read_file", {"path": "README.md"}), Reply.text("read it"), Reply.text(SUMMARY),
                     Reply.text("ok"))
    await collect(loom, "read the readme")
    events = [e async for e in loom.compact()]
    assert [(e.event, e.outcome) for e in hook_runs(events)] == [("SessionStart", "ok")]
    await collect(loom, "next")
    assert any("Remember: the API is frozen" in t for t in user_texts(fake_llm.requests[-1]))


async def test_session_start_after_an_automatic_compaction(workspace: Path, fake_llm: FakeLLMServer) -> None:
    from builtin_tools.read_file import ReadFileTool
    from loom_engine.agent import Agent
    from loom_engine.config import AgentConfig
    from loom_engine.parts import AgentParts
    from loom_engine.providers.factory import create_provider
    from loom_engine.workspace import Workspace

    for k in range(4):
        (workspace / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(145)))
    table = {"SessionStart": [{"matcher": "compact", "hooks": [
        {"type": "command", "command": "cat >/dev/null; echo 'Remember: the API is frozen'"}]}],
             "PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": "cat > pre.json"}]}]}
    # A 16k window compacts at 8k: after the fourth read, before the fifth request.
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(4)], Reply.text(SUMMARY),
                     Reply.text("finished"))
    provider = create_provider("anthropic", api_key="test", base_url=fake_llm.anthropic_base_url)
    loom = Agent(AgentConfig(model="claude-haiku-4-5", context_window=16_000, compact_threshold=0.5,
                                    interactive=False),
                 # only the tool it reads with: when it compacts must not move as Loom gains tools
                 AgentParts(provider=provider, tools=[ReadFileTool()], workspace=Workspace.at(workspace),
                            hooks=hooks(table)), system_prompt="test")
    events = await collect(loom, "summarise the files")
    assert [(e.event, e.outcome) for e in hook_runs(events)] == [("PreCompact", "ok"), ("SessionStart", "ok")]
    assert json.loads((workspace / "pre.json").read_text())["trigger"] == "auto"
    assert any("Remember: the API is frozen" in t for t in user_texts(fake_llm.requests[-1]))
