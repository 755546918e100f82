"""`loom run` when the request is too long for the model: words that fit a headless run
(no /compact there) and no claim of compacting when nothing could be."""

from __future__ import annotations

import io
from pathlib import Path

from loom_cli.headless import EXIT_ERROR, run_headless
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply


async def test_a_first_prompt_too_long_names_what_a_headless_user_can_do(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.prompt_too_long(), Reply.prompt_too_long())
    provider = create_provider("anthropic", api_key="k", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=provider, tools=[], workspace=Workspace.at(tmp_path)))
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(agent, "a very long prompt", "text", out, err) == EXIT_ERROR
    said = err.getvalue()
    assert "too long" in said
    assert "/compact" not in said and "compacting" not in said and "compacted" not in said
    assert "start a new session (without --continue or --resume) or send a shorter prompt" in said
    assert len(fake_llm.requests) == 1  # nothing to compact: no summary request, no resend


async def test_a_conversation_compacted_after_the_refusal_says_so_and_answers(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    from builtin_tools import default_tools

    for k in range(3):
        (tmp_path / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(80)))
    summary = "\n".join(f"## {name}\n- point" for name in (
        "Background context", "Key decisions", "Tool usage", "User intent evolution", "Execution results",
        "Errors and solutions", "Open issues", "Next steps"))  # the compressor's required sections
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(3)],
                     Reply.prompt_too_long(), Reply.text(summary), Reply.text("answered after the retry"))
    provider = create_provider("anthropic", api_key="k", base_url=fake_llm.anthropic_base_url)
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path)))
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(agent, "read them all", "text", out, err) == 0, err.getvalue()
    assert out.getvalue() == "answered after the retry\n"
    assert err.getvalue().startswith("loom: context compacted (the request was too long for the model): "
                                     "summarised the earlier conversation")
