"""`loom run` at a usage limit, through the real SDKs against the fake server: without
--wait-for-reset it stops with exit 5 and names the reset (text, json, stream-json);
with it, it waits and resumes the same turn - the request that hit the limit is sent
again, and a tool call made before it does not run a second time."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_cli.headless import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE_LIMIT, run_headless
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Aborted, UsageLimitWait
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.usage_wait import UsageLimitPolicy, UsageLimitWaiter
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply

# No margin past the reset: the tests wait only for the fake server's short resets.
WAIT = UsageLimitPolicy(wait=True, margin_s=0.0, unknown_reset_first_s=0.05)


def _agent(tmp_path: Path, server: FakeLLMServer, provider_name: str,
           policy: UsageLimitPolicy | None = None) -> Agent:
    base_url = server.anthropic_base_url if provider_name == "anthropic" else server.openai_base_url
    provider = create_provider(provider_name, api_key="k", base_url=base_url)
    model = "claude-haiku-4-5" if provider_name == "anthropic" else "gpt-4.1-mini"
    return Agent(AgentConfig(model=model, interactive=False),
                 AgentParts(provider=provider, tools=default_tools(), workspace=Workspace.at(tmp_path),
                            usage_limits=UsageLimitWaiter(policy)))


async def _run(agent: Agent, output_format: str, policy: UsageLimitPolicy | None = None
               ) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(agent, "do the work", output_format, out, err, usage_limits=policy)
    return code, out.getvalue(), err.getvalue()


async def test_anthropic_limit_without_the_flag_exits_5_and_names_the_reset(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.usage_limit(reset_in=2 * 3600 + 600))
    code, out, err = await _run(_agent(tmp_path, fake_llm, "anthropic"), "text")
    assert code == EXIT_USAGE_LIMIT == 5
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("loom: Anthropic usage limit reached (the 5-hour limit)")
    assert "resets at " in err and "(in 2h 10m)" in err
    assert "`loom run --wait-for-reset` waits for it" in err
    assert len(fake_llm.requests) == 1  # a usage limit is not retried


async def test_json_and_stream_json_carry_the_stop_reason_and_the_reset(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.usage_limit(reset_in=3600, window="7d"))
    code, out, _ = await _run(_agent(tmp_path, fake_llm, "anthropic"), "json")
    result = json.loads(out)
    assert code == EXIT_USAGE_LIMIT
    assert result["stop_reason"] == "usage_limit" and result["is_error"] is True
    assert result["resets_at"] == pytest.approx(time.time() + 3600, abs=30)
    assert result["resets_at_iso"].endswith("+00:00")
    assert "weekly limit" in result["result"]

    fake_llm.enqueue(Reply.usage_limit(reset_in=3600))
    code, out, _ = await _run(_agent(tmp_path, fake_llm, "anthropic"), "stream-json")
    last = json.loads(out.splitlines()[-1])
    assert code == EXIT_USAGE_LIMIT
    assert last["type"] == "result" and last["is_error"] is True and last["stop_reason"] == "usage_limit"
    assert last["resets_at"] == pytest.approx(time.time() + 3600, abs=30)

    fake_llm.enqueue(Reply.usage_limit(reset_in=3600))
    code, out, _ = await _run(_agent(tmp_path, fake_llm, "anthropic"), "loom-stream-json")
    last = json.loads(out.splitlines()[-1])
    assert code == EXIT_USAGE_LIMIT
    assert last["type"] == "error" and last["kind"] == "usage_limit" and last["stop_reason"] == "usage_limit"
    assert last["resets_at"] == pytest.approx(time.time() + 3600, abs=30)


async def test_openai_insufficient_quota_exits_5_without_a_reset_time(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.quota_exhausted())
    code, out, err = await _run(_agent(tmp_path, fake_llm, "openai"), "json")
    result = json.loads(out)
    assert code == EXIT_USAGE_LIMIT
    assert result["stop_reason"] == "usage_limit" and result["resets_at"] is None
    assert "the server did not say when it resets" in err and "account quota" in err
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("provider_name", ["anthropic", "openai"])
async def test_waiting_resumes_the_same_turn_and_runs_no_tool_twice(
        tmp_path: Path, fake_llm: FakeLLMServer, provider_name: str) -> None:
    limit = Reply.usage_limit(reset_in=0.3) if provider_name == "anthropic" else Reply.quota_exhausted()
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo ran >> side-effect.txt"}), limit,
                     Reply.text("all done"))
    code, out, err = await _run(_agent(tmp_path, fake_llm, provider_name, WAIT), "text", WAIT)
    assert code == EXIT_OK, err
    assert out == "all done\n"
    assert (tmp_path / "side-effect.txt").read_text() == "ran\n"  # the tool ran once
    assert len(fake_llm.requests) == 3
    # The request that hit the limit went again unchanged: the tool result stays, no call is redone.
    assert fake_llm.requests[2].messages == fake_llm.requests[1].messages
    said = "usage limit — resuming at " if provider_name == "anthropic" else \
        "usage limit, no reset time given — trying again at "
    assert f"loom: {said}" in err


async def test_a_reset_beyond_max_wait_exits_5(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    policy = UsageLimitPolicy(wait=True, max_wait_s=60)
    fake_llm.enqueue(Reply.usage_limit(reset_in=3600))
    code, _, err = await _run(_agent(tmp_path, fake_llm, "anthropic", policy), "text", policy)
    assert code == EXIT_USAGE_LIMIT
    assert "that is beyond --max-wait 1m" in err
    assert len(fake_llm.requests) == 1


async def test_stopping_during_the_wait_leaves_a_resumable_session(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo ran >> side-effect.txt"}),
                     Reply.usage_limit(reset_in=3600))
    agent = _agent(tmp_path, fake_llm, "anthropic", UsageLimitPolicy(wait=True))
    seen = []
    async for event in agent.run("do the work"):
        seen.append(event)
        if isinstance(event, UsageLimitWait):
            assert event.reset_known and event.wait_s > 3500
            agent.abort("interrupted by Ctrl-C")
    assert isinstance(seen[-1], Aborted)
    # The tool's call and result are kept: the next prompt (or --continue) goes on from them.
    roles = [m.role for m in agent.messages]
    assert roles[:3] == ["user", "assistant", "tool"], roles
    assert [m.role for m in agent.messages if m.tool_uses] == ["assistant"]
    assert (tmp_path / "side-effect.txt").read_text() == "ran\n"
    assert len(fake_llm.requests) == 2
    await agent.aclose()


async def test_headless_exits_130_when_interrupted_while_waiting(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.usage_limit(reset_in=3600))
    agent = _agent(tmp_path, fake_llm, "anthropic", UsageLimitPolicy(wait=True))

    class _Out(io.StringIO):
        def write(self, text: str) -> int:
            if '"usage_limit_wait"' in text:
                agent.abort("interrupted by Ctrl-C")  # as the signal handler does
            return super().write(text)

    out, err = _Out(), io.StringIO()
    code = await run_headless(agent, "do the work", "loom-stream-json", out, err,
                              usage_limits=UsageLimitPolicy(wait=True))
    assert code == EXIT_INTERRUPTED
    assert json.loads(out.getvalue().splitlines()[-1])["type"] == "aborted"


async def test_a_sub_agent_waits_too_and_the_run_finishes(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("task", {"description": "look", "prompt": "what is here?"}),
                     Reply.usage_limit(reset_in=0.2), Reply.text("the child's answer"), Reply.text("all done"))
    agent = _agent(tmp_path, fake_llm, "anthropic", WAIT)
    waits = []
    async for event in agent.run("delegate it"):
        if isinstance(event, UsageLimitWait):
            waits.append(event)
    assert [w.depth for w in waits] == [1]  # the sub-agent's request waited, with the shared policy
    assert len(fake_llm.requests) == 4
    assert fake_llm.requests[2].messages == fake_llm.requests[1].messages
    assert agent.messages[-1].text == "all done"
    await agent.aclose()
