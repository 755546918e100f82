"""Start-up asks a custom base URL's server for its window, and Loom says which window it
uses: `loom config`, `loom run -o json` (init and result), the chat's /cost."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loom_cli.bootstrap import RunOptions, build_agent
from loom_cli.headless import EXIT_OK, run_headless
from loom_cli.tui.commands.info import cost_text
from loom_cli.tui.status_bar import StatusInfo
from loom_cli.window_setup import server_windows
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.metrics import RunMetrics
from loom_engine.parts import AgentParts
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import isolate_loom, loom, loom_env
from tests.doubles.window_servers import WindowStub, llama_cpp, vllm


def test_the_official_apis_are_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert server_windows("openai", None, "gpt-4o", None) is None
    assert server_windows("anthropic", "https://api.anthropic.com", "claude-haiku-4-5", None) is None
    assert server_windows("scripted", None, "x", None) is None


def test_the_probe_carries_the_key_the_requests_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-123")
    with WindowStub(vllm("served", 8192)) as stub:
        windows = server_windows("openai", stub.root + "/v1", "served", None)
        assert windows is not None and windows.wait("served", 10)
    assert windows.fact("served") is not None
    assert {asked.headers.get("Authorization") for asked in stub.asked} == {"Bearer sk-local-123"}


def test_with_the_setting_the_server_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    with WindowStub(llama_cpp(4096)) as stub:
        windows = server_windows("openai", stub.root + "/v1", "m", 50_000)
        assert windows is not None and windows.wait("m", 10)
    assert stub.asked == []


def test_build_agent_asks_the_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             workspace: Path) -> None:
    isolate_loom(monkeypatch, tmp_path)
    with WindowStub(llama_cpp(4096)) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.root + "/v1")
        built = build_agent(RunOptions(cwd=workspace, provider="openai", model="smollm2"), interactive=False)
        windows = built.agent.client.server_windows
        assert windows is not None and windows.wait("smollm2", 10)
    assert built.agent.window_in_use().tokens == 4096
    assert built.agent.window_in_use().source == f"llama.cpp (GET /props) at {stub.root}"
    built.session.close()


def test_loom_config_names_the_window_and_its_source(tmp_path: Path, workspace: Path,
                                                      fake_llm: FakeLLMServer) -> None:
    with WindowStub(llama_cpp(4096)) as stub:
        env = loom_env(tmp_path, fake_llm, LOOM_PROVIDER="openai", LOOM_MODEL="smollm2",
                       OPENAI_BASE_URL=stub.root + "/v1")
        done = loom(["config"], workspace, env)
    assert done.returncode == 0, done.stderr
    assert f"context window: 4096 tokens for smollm2 (llama.cpp (GET /props) at {stub.root})" in done.stdout


def test_loom_config_says_when_the_server_does_not_say(tmp_path: Path, workspace: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm, LOOM_PROVIDER="openai", LOOM_MODEL="smollm2",
                   OPENAI_BASE_URL=fake_llm.openai_base_url)  # the fake serves no window endpoint
    done = loom(["config"], workspace, env)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("context window:"))
    assert "128000 tokens for smollm2 (assumed for an unknown model;" in line
    assert "does not say its window" in line


async def test_json_output_says_the_window_and_where_it_came_from(tmp_path: Path,
                                                                  fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("All good."))
    with WindowStub(llama_cpp(4096)) as stub:
        windows = server_windows("openai", stub.root + "/v1", "smollm2", None)
        assert windows is not None and windows.wait("smollm2", 10)
    agent = Agent(AgentConfig(model="smollm2", provider="openai", interactive=False),
                  AgentParts(provider=create_provider("openai", api_key="k", base_url=fake_llm.openai_base_url),
                             workspace=Workspace.at(tmp_path), server_windows=windows))
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(agent, "hi", "json", out, err) == EXIT_OK
    result = json.loads(out.getvalue())
    assert result["context_window"] == {"tokens": 4096, "source": f"llama.cpp (GET /props) at {stub.root}"}
    fake_llm.enqueue(Reply.text("again"))
    out = io.StringIO()
    assert await run_headless(agent, "hi", "stream-json", out, err) == EXIT_OK
    init = json.loads(out.getvalue().splitlines()[0])
    assert init["subtype"] == "init" and init["context_window"]["tokens"] == 4096


def test_cost_names_where_the_window_came_from() -> None:
    info = StatusInfo(context_used=3300, context_window=4096)
    text = cost_text(info, RunMetrics(), "llama.cpp (GET /props) at http://127.0.0.1:8080")
    assert "context 3.3k of 4.1k (81%)" in text
    assert text.splitlines()[-1] == "  window: llama.cpp (GET /props) at http://127.0.0.1:8080"
