"""`loom run "explain @file"` attaches the file as the TUI does."""

from __future__ import annotations

import io
from pathlib import Path

from builtin_tools import default_tools
from loom_cli.headless import EXIT_OK, run_headless
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.factory import create_provider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply


async def test_a_mentioned_file_reaches_the_model_and_a_refused_one_is_reported(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.md").write_text("remember the milk\n")
    (tmp_path / "secret.txt").write_text("outside the workspace\n")
    fake_llm.enqueue(Reply.text("Milk."))
    provider = create_provider("anthropic", api_key="k", base_url=fake_llm.anthropic_base_url)
    workspace = Workspace.at(root)
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=provider, tools=default_tools(), workspace=workspace,
                             permissions=PermissionManager(workspace)))
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(agent, "what is in @notes.md and @../secret.txt?", "text", out, err)
    assert code == EXIT_OK and out.getvalue() == "Milk.\n"
    [user] = fake_llm.last_request.messages
    texts = [block["text"] for block in user["content"]]
    assert texts[0] == "what is in @notes.md and @../secret.txt?"
    assert texts[1].startswith('<attached path="notes.md"') and "remember the milk" in texts[1]
    assert "outside the workspace" not in "".join(texts[:2])
    assert "@../secret.txt was not attached" in texts[2]
    assert "loom: @" in err.getvalue() and "not attached: it is outside the workspace" in err.getvalue()
