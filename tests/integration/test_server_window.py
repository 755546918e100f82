"""The window a local server says it runs with is the one the agent uses: for the context
share it reports (the status bar's "ctx N%") and for when it compacts; the setting wins;
an overflow error's ``n_ctx`` is learned for the requests after it."""

from __future__ import annotations

import json
from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import CompactionApplied, Error, Finished, UsageUpdated
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.providers.server_window import ServerWindows
from loom_engine.tools.base import Tool
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.window_servers import WindowStub, llama_cpp
from tests.integration.test_compaction import SUMMARY, only_read_file

MODEL = "smollm2-135m-instruct"  # unknown to the model table: 128k would be assumed

# What llama-server answers when the prompt does not fit (see conformance/llama-server).
LLAMA_OVERFLOW = json.dumps({"error": {
    "code": 400, "message": "the request exceeds the available context size, try increasing it",
    "type": "exceed_context_size_error", "n_prompt_tokens": 5210, "n_ctx": 4096}}).encode()


def _probed(stub: WindowStub) -> ServerWindows:
    windows = ServerWindows(stub.root)
    windows.ensure(MODEL)
    assert windows.wait(MODEL, 10)
    return windows


def _agent(workspace: Path, fake_llm: FakeLLMServer, windows: ServerWindows | None, *, provider: str = "openai",
           tools: list[Tool] | None = None, **config: object) -> Agent:
    url = fake_llm.openai_base_url if provider == "openai" else fake_llm.anthropic_base_url
    return Agent(AgentConfig(model=MODEL, provider=provider, interactive=False, **config),  # type: ignore[arg-type]
                 AgentParts(provider=create_provider(provider, api_key="test", base_url=url),
                            tools=default_tools() if tools is None else tools, workspace=Workspace.at(workspace),
                            server_windows=windows),
                 system_prompt="You are a test.")


async def test_the_status_share_uses_the_servers_window(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("hi", usage={"input_tokens": 3300, "output_tokens": 20}))
    with WindowStub(llama_cpp(n_ctx=4096)) as stub:
        agent = _agent(workspace, fake_llm, _probed(stub))
    events = [e async for e in agent.run("hello")]
    usage = [e for e in events if isinstance(e, UsageUpdated)][-1]
    assert usage.context_window == 4096
    assert 0.8 < usage.context_tokens / usage.context_window < 0.85  # "ctx 81%", not "ctx 3%"
    assert agent.window_in_use().source == f"llama.cpp (GET /props) at {stub.root}"


async def test_auto_compaction_fires_at_the_servers_window(workspace: Path, fake_llm: FakeLLMServer) -> None:
    for k in range(4):
        (workspace / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(150)))
    # A 16k window compacts at 8k (threshold 0.5): after the fourth read, before the fifth
    # request (only the read tool is offered, so the arithmetic stays as Loom gains tools).
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(4)],
                     Reply.text(SUMMARY), Reply.text("finished after compaction"))
    with WindowStub(llama_cpp(n_ctx=16_000)) as stub:
        agent = _agent(workspace, fake_llm, _probed(stub), tools=only_read_file(), compact_threshold=0.5)
    events = [e async for e in agent.run("summarise the files")]
    assert isinstance(events[-1], Finished) and events[-1].result == "finished after compaction"
    assert [e.reason for e in events if isinstance(e, CompactionApplied)] == ["auto"]


async def test_without_the_servers_window_nothing_compacts(workspace: Path, fake_llm: FakeLLMServer) -> None:
    # The same run with the 128k assumption: the threshold is never reached (the defect).
    for k in range(4):
        (workspace / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(80)))
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(4)], Reply.text("done"))
    agent = _agent(workspace, fake_llm, None, compact_threshold=0.5)
    events = [e async for e in agent.run("summarise the files")]
    assert isinstance(events[-1], Finished) and not [e for e in events if isinstance(e, CompactionApplied)]
    assert agent.context_window == 128_000


async def test_the_setting_wins_over_the_server(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("hi", usage={"input_tokens": 3300, "output_tokens": 20}))
    with WindowStub(llama_cpp(n_ctx=4096)) as stub:
        agent = _agent(workspace, fake_llm, _probed(stub), context_window=32_000)
    events = [e async for e in agent.run("hello")]
    assert [e for e in events if isinstance(e, UsageUpdated)][-1].context_window == 32_000
    assert agent.window_in_use().source == "the context_window setting"


async def _overflow_run(workspace: Path, fake_llm: FakeLLMServer, provider: str) -> tuple[Agent, list[object]]:
    for k in range(3):
        (workspace / f"f{k}.txt").write_text("\n".join(f"line {i}: " + f"w{k} " * 12 for i in range(80)))
    fake_llm.enqueue(*[Reply.tool("read_file", {"path": f"f{k}.txt"}) for k in range(3)],
                     Reply(status=400, raw_body=LLAMA_OVERFLOW, content_type="application/json"),
                     Reply.text(SUMMARY), Reply.text("answered after the retry"))
    agent = _agent(workspace, fake_llm, None, provider=provider)  # no probe: a server that says nothing
    assert agent.context_window == 128_000
    return agent, [e async for e in agent.run("read them all")]


async def test_an_overflow_errors_n_ctx_is_used_afterwards(workspace: Path, fake_llm: FakeLLMServer) -> None:
    agent, events = await _overflow_run(workspace, fake_llm, "openai")
    assert isinstance(events[-1], Finished) and events[-1].result == "answered after the retry"
    assert [e.reason for e in events if isinstance(e, CompactionApplied)] == ["context_length"]
    assert agent.context_window == 4096
    assert agent.window_in_use().source == "the server's context-overflow error"
    assert [e for e in events if isinstance(e, UsageUpdated)][-1].context_window == 4096


async def test_llama_cpps_anthropic_endpoint_overflow_is_learned_too(workspace: Path,
                                                                     fake_llm: FakeLLMServer) -> None:
    agent, events = await _overflow_run(workspace, fake_llm, "anthropic")
    assert not [e for e in events if isinstance(e, Error)]
    assert [e.reason for e in events if isinstance(e, CompactionApplied)] == ["context_length"]
    assert agent.context_window == 4096
