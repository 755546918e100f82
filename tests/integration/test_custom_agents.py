"""Custom sub-agents against the fake server, in each Crew mode users meet them in:
routed (the model picks by description), parallel, sequential (one agent's answer feeds
the next call), coordinated (an agent whose tools include task). Every test checks what
the server received: the child's system prompt and the tools offered to it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from builtin_tools import default_tools
from builtin_tools.task import with_agents
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import AgentEvent, Finished
from loom_engine.parts import AgentParts
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.modes import PermissionMode
from loom_engine.providers.base import Provider
from loom_engine.providers.factory import create_provider
from loom_engine.skills.catalog import SkillCatalog
from loom_engine.subagents.definitions import AgentCatalog
from loom_engine.tools.base import BaseTool, Tool, ToolContext, ToolOutput
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, RecordedRequest, Reply

REVIEWER = """---
name: reviewer
description: Reviews a change for bugs and reports them with file and line.
tools: Read, Grep
---
You are the REVIEWER. Read the code and list real bugs only.
"""
TEST_WRITER = """---
name: test-writer
description: Writes pytest tests for a given function.
tools: Read, Write, Edit, Bash
---
You are the TEST WRITER. Write focused pytest tests.
"""


def _agent_file(workspace: Path, folder: str, name: str, text: str) -> None:
    path = workspace / folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _simple(name: str, tools: str, body: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: The {name} agent.\ntools: {tools}\n{extra}---\n{body}\n"


def _parent(workspace: Path, server: FakeLLMServer, *, mode: PermissionMode = "default",
            extra_tools: tuple[Tool, ...] = (), skills: SkillCatalog | None = None) -> Agent:
    provider = create_provider("anthropic", api_key="test", base_url=server.anthropic_base_url)
    agents = AgentCatalog.discover(workspace, user_config_dir=workspace.parent / "config")
    assert not [p for p in agents.problems if p.skipped], agents.problems

    def make_provider(name: str) -> Provider:
        assert name == "openai"
        return create_provider("openai", api_key="test", base_url=server.openai_base_url)

    return Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                 AgentParts(provider=provider, tools=with_agents([*default_tools(), *extra_tools], agents),
                            workspace=Workspace.at(workspace),
                            permissions=PermissionManager(Workspace.at(workspace), mode=mode), skills=skills,
                            make_provider=make_provider), system_prompt="parent")


def _task(agent: str, prompt: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return ("task", {"description": f"ask {agent}", "prompt": prompt, "subagent_type": agent, **more})


def _system(request: RecordedRequest) -> str:
    system = request.body.get("system")
    if system is None:  # OpenAI: the first message
        return str(request.body["messages"][0]["content"])
    return system if isinstance(system, str) else "".join(block["text"] for block in system)


def _tool_names(request: RecordedRequest) -> list[str]:
    return sorted(t.get("name") or t["function"]["name"] for t in request.body.get("tools", []))


def _task_description(request: RecordedRequest) -> str:
    return next(t["description"] for t in request.body["tools"] if t["name"] == "task")


async def _run(agent: Agent, prompt: str = "go") -> list[AgentEvent]:
    return [e async for e in agent.run(prompt)]


async def test_reviewer_from_claude_folder_gets_its_prompt_and_only_read_and_grep(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".claude/agents", "reviewer", REVIEWER)
    fake_llm.enqueue(Reply.tools(_task("reviewer", "Review src/app.py")),
                     Reply.text("no bugs in src/app.py"), Reply.text("the reviewer found nothing"))
    events = await _run(_parent(workspace, fake_llm))
    assert isinstance(events[-1], Finished) and events[-1].result == "the reviewer found nothing"
    parent, child, after = fake_llm.requests
    assert "- reviewer: Reviews a change for bugs" in _task_description(parent)
    assert _system(child) == "You are the REVIEWER. Read the code and list real bugs only."
    assert _tool_names(child) == ["grep", "read_file"]
    assert child.messages[0]["content"][0]["text"] == "Review src/app.py"
    assert "no bugs in src/app.py" in json.dumps(after.messages[-1])


async def test_routed_the_model_picks_an_agent_from_the_listed_descriptions(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".claude/agents", "reviewer", REVIEWER)
    _agent_file(workspace, ".loom/agents", "test-writer", TEST_WRITER)
    fake_llm.enqueue(Reply.tools(_task("test-writer", "Test greet in src/app.py")), Reply.text("wrote tests"),
                     Reply.text("done"))
    events = await _run(_parent(workspace, fake_llm))
    assert isinstance(events[-1], Finished)
    parent, child, _ = fake_llm.requests
    description = _task_description(parent)
    assert "- reviewer: Reviews a change" in description
    assert "- test-writer: Writes pytest tests for a given function." in description
    assert "subagent_type" in json.dumps(parent.body["tools"])
    assert _system(child) == "You are the TEST WRITER. Write focused pytest tests."
    assert _tool_names(child) == ["bash", "edit_file", "read_file", "write_file"]


async def test_the_task_tool_description_is_byte_identical_across_turns_and_runs(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".claude/agents", "reviewer", REVIEWER)
    _agent_file(workspace, ".loom/agents", "test-writer", TEST_WRITER)
    fake_llm.enqueue(Reply.tool("glob", {"pattern": "*.md"}), Reply.text("one"), Reply.text("two"))
    first = _parent(workspace, fake_llm)
    await _run(first)
    await _run(_parent(workspace, fake_llm))  # a new session: discovered again
    tools = [json.dumps(r.body["tools"]) for r in fake_llm.requests]
    assert len(tools) == 3 and len(set(tools)) == 1


async def test_unknown_subagent_type_is_an_error_naming_the_agents(workspace: Path,
                                                                   fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".claude/agents", "reviewer", REVIEWER)
    fake_llm.enqueue(Reply.tools(_task("auditor", "x")), Reply.text("ok"))
    await _run(_parent(workspace, fake_llm))
    result = json.dumps(fake_llm.requests[1].messages[-1])
    assert "Unknown subagent_type 'auditor'. Available agents: reviewer" in result
    assert len(fake_llm.requests) == 2  # no child was started


async def test_without_subagent_type_the_general_read_only_sub_agent_runs(workspace: Path,
                                                                          fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".claude/agents", "reviewer", REVIEWER)
    fake_llm.enqueue(Reply.tool("task", {"description": "look", "prompt": "where is greet?"}),
                     Reply.text("src/app.py"), Reply.text("done"))
    await _run(_parent(workspace, fake_llm))
    child = fake_llm.requests[1]
    assert _system(child).startswith("You are a Loom sub-agent")
    assert _tool_names(child) == ["glob", "grep", "ls", "read_file"]


async def test_parallel_two_custom_agents_run_at_the_same_time(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".claude/agents", "reviewer", REVIEWER)
    _agent_file(workspace, ".loom/agents", "test-writer", TEST_WRITER)
    first, gate_1 = Reply.text("answer one").held()
    second, gate_2 = Reply.text("answer two").held()
    fake_llm.enqueue(Reply.tools(_task("reviewer", "review"), _task("test-writer", "write tests")),
                     first, second, Reply.text("both done"))
    run = asyncio.create_task(_run(_parent(workspace, fake_llm)))
    # Both children reach the server before either is answered: they overlap.
    arrived = await asyncio.to_thread(fake_llm.wait_for_requests, 3, 20.0)
    gate_1.set()
    gate_2.set()
    events = await asyncio.wait_for(run, 30)
    assert arrived and isinstance(events[-1], Finished)
    children = {_system(r): _tool_names(r) for r in fake_llm.requests[1:3]}
    assert children == {"You are the REVIEWER. Read the code and list real bugs only.": ["grep", "read_file"],
                        "You are the TEST WRITER. Write focused pytest tests.":
                            ["bash", "edit_file", "read_file", "write_file"]}
    final = json.dumps(fake_llm.requests[3].messages[-1])
    assert "answer one" in final and "answer two" in final


async def test_sequential_one_agents_answer_feeds_the_next_agent(workspace: Path,
                                                                 fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".loom/agents", "planner", _simple("planner", "Read, Grep", "You PLAN."))
    _agent_file(workspace, ".loom/agents", "implementer", _simple("implementer", "Read, Edit", "You IMPLEMENT."))
    plan = "PLAN: rename greet to welcome in src/app.py"
    fake_llm.enqueue(Reply.tools(_task("planner", "Plan the rename")), Reply.text(plan),
                     Reply.tools(_task("implementer", f"Carry out this plan:\n{plan}")), Reply.text("renamed"),
                     Reply.text("planned and implemented"))
    events = await _run(_parent(workspace, fake_llm), "plan it, then implement it")
    assert isinstance(events[-1], Finished) and events[-1].result == "planned and implemented"
    requests = fake_llm.requests
    assert [_system(r) for r in requests] == ["parent", "You PLAN.", "parent", "You IMPLEMENT.", "parent"]
    assert plan in json.dumps(requests[2].messages[-1])  # the planner's answer came back...
    assert plan in requests[3].messages[0]["content"][0]["text"]  # ...and went on to the implementer
    assert _tool_names(requests[1]) == ["grep", "read_file"]
    assert _tool_names(requests[3]) == ["edit_file", "read_file"]


async def test_coordinated_a_coordinator_delegates_and_the_depth_limit_holds(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".loom/agents", "coordinator",
                _simple("coordinator", "Task, Read, Grep", "You COORDINATE: hand each part to the right agent."))
    # The worker's file asks for bash, which its parent (the coordinator) lacks, and for
    # task, which at the deepest level could only be refused: it gets neither.
    _agent_file(workspace, ".loom/agents", "worker", _simple("worker", "Read, Grep, Bash, Task", "You WORK."))
    fake_llm.enqueue(Reply.tools(_task("coordinator", "Find greet and report")),
                     Reply.tools(_task("worker", "grep for greet")),
                     Reply.text("greet is at src/app.py:1"),
                     Reply.text("the worker says src/app.py:1"),
                     Reply.text("coordinated answer"))
    events = await _run(_parent(workspace, fake_llm))
    assert isinstance(events[-1], Finished) and events[-1].result == "coordinated answer"
    _, coordinator, worker, coordinator_after, parent_after = fake_llm.requests
    assert _system(coordinator).startswith("You COORDINATE")
    assert _tool_names(coordinator) == ["grep", "read_file", "task"]
    assert "- worker: The worker agent." in _task_description(coordinator)
    assert _system(worker) == "You WORK." and _tool_names(worker) == ["grep", "read_file"]
    assert "src/app.py:1" in json.dumps(coordinator_after.messages[-1])
    assert "the worker says src/app.py:1" in json.dumps(parent_after.messages[-1])
    assert {e.depth for e in events} == {0, 1, 2}


async def test_permission_mode_only_narrows(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".loom/agents", "planner", _simple("planner", "Read, Write", "You PLAN.",
                                                             "permissionMode: plan\n"))
    fake_llm.enqueue(Reply.tools(_task("planner", "write notes")),
                     Reply.tool("write_file", {"path": "notes.md", "content": "x"}), Reply.text("could not"),
                     Reply.text("done"))
    await _run(_parent(workspace, fake_llm, mode="accept-edits"))  # the parent itself may write
    assert not (workspace / "notes.md").exists()
    assert "plan mode" in json.dumps(fake_llm.requests[2].messages[-1])


async def test_a_wider_permission_mode_is_not_granted(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".loom/agents", "writer", _simple("writer", "Read, Write", "You WRITE.",
                                                           "permissionMode: bypassPermissions\n"))
    fake_llm.enqueue(Reply.tools(_task("writer", "write notes")),
                     Reply.tool("write_file", {"path": "notes.md", "content": "x"}), Reply.text("could not"),
                     Reply.text("done"))
    await _run(_parent(workspace, fake_llm, mode="default"))  # headless: a question is a denial
    assert not (workspace / "notes.md").exists()


async def test_a_model_of_another_vendor_gets_that_vendors_provider(workspace: Path,
                                                                    fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".loom/agents", "second-opinion",
                _simple("second-opinion", "Read", "You GIVE A SECOND OPINION.", "model: gpt-4o\n"))
    fake_llm.enqueue(Reply.tools(_task("second-opinion", "Look at src/app.py")), Reply.text("looks fine"),
                     Reply.text("done"))
    events = await _run(_parent(workspace, fake_llm))
    assert isinstance(events[-1], Finished)
    parent, child, _ = fake_llm.requests
    assert (parent.api, child.api) == ("anthropic", "openai")
    assert child.body["model"] == "gpt-4o"
    assert "You GIVE A SECOND OPINION." in _system(child)
    assert _tool_names(child) == ["read_file"]


class _NoArgs(BaseModel):
    pass


class _McpLike(BaseTool[_NoArgs]):
    """Stands for an MCP server's tool: only its name matters here."""

    input_model = _NoArgs
    is_read_only = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"{name} (test)"

    async def run(self, args: _NoArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("ok")


def _skill(workspace: Path, name: str) -> None:
    folder = workspace / ".loom/skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n")


async def test_mcp_servers_and_skills_only_narrow(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _agent_file(workspace, ".loom/agents", "triager",
                "---\nname: triager\ndescription: Triage issues.\nmcpServers: [github]\nskills: [alpha]\n"
                "disallowedTools: Bash, Write, Edit, MultiEdit, apply_patch, web_fetch, todo_write\n---\nYou TRIAGE.\n")
    _skill(workspace, "alpha")
    _skill(workspace, "beta")
    skills = SkillCatalog.discover(workspace, user_config_dir=workspace.parent / "config",
                                   builtin_dir=workspace.parent / "no-builtins")
    assert skills.names() == ["alpha", "beta"]
    fake_llm.enqueue(Reply.tools(_task("triager", "triage")), Reply.tool("skill", {"name": "beta"}),
                     Reply.tool("skill", {"name": "alpha"}), Reply.text("triaged"), Reply.text("done"))
    parent = _parent(workspace, fake_llm, skills=skills,
                     extra_tools=(_McpLike("mcp__github__issues"), _McpLike("mcp__db__query")))
    await _run(parent)
    first, child, after_beta, after_alpha, _ = fake_llm.requests
    assert {"mcp__github__issues", "mcp__db__query", "task"} <= set(_tool_names(first))
    assert _tool_names(child) == ["glob", "grep", "ls", "mcp__github__issues", "memory", "read_file", "recall",
                                  "session_search", "skill"]
    assert "Unknown skill 'beta'. Available skills: alpha." in json.dumps(after_beta.messages[-1])
    assert "Do alpha." in json.dumps(after_alpha.messages[-1])
