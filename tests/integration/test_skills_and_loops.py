"""Skills (progressive disclosure) and the loop guard, against the fake server."""

from __future__ import annotations

import json
from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.context.assembler import ContextAssembler
from loom_engine.events import Error, Finished
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.skills.catalog import SkillCatalog
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

BODY_MARK = "STEP-BY-STEP-DEPLOY-BODY"


def _skill(workspace: Path) -> None:
    folder = workspace / ".loom" / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploy the app to staging. Use when the user asks to deploy.\n---\n"
        f"# Deploy\n{BODY_MARK}: run make deploy, then check the health endpoint.\n")
    (folder / "checklist.md").write_text("- health endpoint\n")
    bad = workspace / ".loom" / "skills" / "Broken"
    bad.mkdir()
    (bad / "SKILL.md").write_text("no front matter here\n")


def _agent(workspace: Path, server: FakeLLMServer, **config: object) -> Agent:
    catalog = SkillCatalog.discover(workspace, user_config_dir=workspace / "no-user-config",
                                    builtin_dir=workspace / "no-builtin")
    ws = Workspace.at(workspace)
    provider = create_provider("anthropic", api_key="test", base_url=server.anthropic_base_url)
    return Agent(AgentConfig(model="claude-haiku-4-5", interactive=False, **config),
                 AgentParts(provider=provider, tools=default_tools(), workspace=ws, skills=catalog),
                 context=ContextAssembler(ws, skills=catalog))


async def test_skill_body_only_after_the_skill_tool(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _skill(workspace)
    fake_llm.enqueue(Reply.tool("skill", {"name": "deploy"}), Reply.text("deployed"))
    agent = _agent(workspace, fake_llm)
    events = [e async for e in agent.run("deploy please")]
    assert isinstance(events[-1], Finished)
    first, second = (json.dumps(r.body) for r in fake_llm.requests)
    assert "Deploy the app to staging" in json.dumps(fake_llm.requests[0].body["system"])
    assert BODY_MARK not in first
    assert BODY_MARK in second and "checklist.md" in second
    assert BODY_MARK not in json.dumps(fake_llm.requests[1].body["system"])


async def test_loop_guard_warns_then_stops(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(*[Reply.tool("ls", {"path": "."}) for _ in range(4)])
    agent = _agent(workspace, fake_llm, loop_guard=2)
    events = [e async for e in agent.run("look")]
    assert isinstance(events[-1], Error) and events[-1].kind == "loop_guard"
    third = json.dumps(fake_llm.requests[2].body["messages"][-1])
    assert "identical arguments" in third
    assert len(fake_llm.requests) == 4


def test_loom_skills_lists_sources_and_skips_broken(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    _skill(workspace)
    done = loom(["skills"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "deploy" in done.stdout and str(workspace / ".loom" / "skills" / "deploy") in done.stdout
    for shipped in ("commit", "review", "fix-tests"):
        assert shipped in done.stdout
    assert "Broken" in done.stderr
