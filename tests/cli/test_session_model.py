"""Issue 22 item 10: the model the user picked with /model survives --continue and
--resume; --model on the command line still wins."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def _session_switched_to(root: Path, model: str) -> str:
    """A session started on the default model, then switched with /model (as the chat does)."""
    built = default_agent_factory(TuiOptions(workspace=root))
    try:
        built.agent.transcript.append(Message.user("hello"))
        built.agent.transcript.append(Message.assistant(TextPart("hi")))
        assert built.agent.config.model != model
        built.agent.choose_model(model)
        return built.agent.session_id
    finally:
        built.agent.session.close()


@pytest.mark.parametrize("how", ["continue", "resume"])
def test_the_chosen_model_comes_back_with_the_session(env: Path, how: str) -> None:
    session_id = _session_switched_to(env, "claude-haiku-4-5")
    options = TuiOptions(workspace=env, continue_session=True) if how == "continue" else \
        TuiOptions(workspace=env, resume_id=session_id)
    built = default_agent_factory(options)
    try:
        assert built.agent.session_id == session_id
        assert built.agent.config.model == "claude-haiku-4-5"
    finally:
        built.agent.session.close()


def test_model_on_the_command_line_wins_over_the_sessions(env: Path) -> None:
    _session_switched_to(env, "claude-haiku-4-5")
    built = default_agent_factory(TuiOptions(workspace=env, continue_session=True, model="claude-opus-4-1"))
    try:
        assert built.agent.config.model == "claude-opus-4-1"
    finally:
        built.agent.session.close()


def test_the_last_switch_is_the_sessions_model(env: Path) -> None:
    store = SessionStore(sessions_dir())
    writer = store.create(find_workspace_root(env), provider="anthropic", model="claude-sonnet-4-5")
    writer.append_message(Message.user("hello"))
    writer.append_model("claude-haiku-4-5")
    writer.append_model("claude-opus-4-1")
    writer.close()
    assert store.load(writer.id).info.model == "claude-opus-4-1"
