"""The chat (TUI) path of issue 9 item 17: a session in use is refused with the same
line as `loom run`, and --fork-session opens a copy instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loom_cli.settings import ConfigError
from loom_cli.tui.options import TuiOptions, default_agent_factory
from loom_engine.messages import Message, TextPart
from loom_engine.paths import sessions_dir
from loom_engine.sessions.store import SessionStore
from loom_engine.workspace import find_workspace_root
from tests.doubles.loom_command import isolate_loom


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_loom(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_the_chat_refuses_a_session_in_use_and_forks_on_request(env: Path) -> None:
    store = SessionStore(sessions_dir())
    running = store.create(find_workspace_root(env), provider="anthropic", model="claude-sonnet-4-6")
    running.append_message(Message.user("the running conversation"))
    running.append_message(Message.assistant(TextPart("an answer")))
    try:
        with pytest.raises(ConfigError) as info:
            default_agent_factory(TuiOptions(workspace=env, continue_session=True))
        assert str(info.value) == (f"session {running.id} is in use by another loom (pid {os.getpid()}); "
                                   "use --fork-session to continue a copy")
        built = default_agent_factory(TuiOptions(workspace=env, continue_session=True, fork_session=True))
        try:
            assert built.agent.session_id != running.id
            assert [m.text for m in built.agent.messages] == ["the running conversation", "an answer"]
        finally:
            built.agent.session.close()
    finally:
        running.close()
