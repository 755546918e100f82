"""First run and leaving: no API key, the welcome, failed prompts given back, Ctrl+D during
a run, and what is printed once the chat has closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loom_cli.tui.exit_summary import exit_summary
from loom_cli.tui.first_run import first_start
from loom_cli.tui.markdown_stream import MarkdownStream
from loom_cli.tui.transcript import Notice
from loom_engine.messages import Message, TextPart
from loom_engine.providers.base import ProviderError
from tests.cli.tui.helpers import Harness, wait_for, wait_idle


def no_key_factory(_options: Any) -> Any:
    raise ProviderError("config", "ANTHROPIC_API_KEY is not set; export it")


async def send(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def notices(app: Any) -> list[str]:
    return [n.text for n in app.transcript.query(Notice)]


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


async def test_no_api_key_shows_how_to_set_one_up(harness: Harness, no_key: None) -> None:
    app = harness.app(agent_factory=no_key_factory)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent_error is not None)
        await pilot.pause()
        text = "\n".join(notices(app))
        assert "No API key: ANTHROPIC_API_KEY is not set" in text
        assert "export ANTHROPIC_API_KEY=" in text
        assert "OPENAI_BASE_URL=http://localhost:11434/v1" in text  # a local server
        assert "--provider" in text and "LOOM_PROVIDER" in text
        assert "/help" in text and "/model" in text
        assert "put the key in the config" not in text  # no such setting exists


async def test_a_prompt_with_no_agent_stays_in_the_input_and_is_not_queued(harness: Harness, no_key: None) -> None:
    app = harness.app(agent_factory=no_key_factory)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent_error is not None)
        await send(pilot, "fix the bug")
        await pilot.pause()
        assert not app.queue
        assert app.prompt.text == "fix the bug"
        assert any(n.startswith("✗ not sent: ANTHROPIC_API_KEY is not set") for n in notices(app))
        app._tick()
        assert "queued" not in app.activity.message
        await send(pilot, "/help")  # commands still work
        await pilot.pause()
        assert any("/model" in n for n in notices(app))


async def test_the_first_start_welcomes_with_the_keys_and_the_provider(harness: Harness) -> None:
    app = harness.app()
    app.show_welcome = True
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.pause()
        [welcome] = [n for n in notices(app) if n.startswith("Welcome to Loom")]
        for words in ("Enter", "Esc", "Shift+Tab", "/help", "scripted", "claude-sonnet-4-5"):
            assert words in welcome
        assert not any(n.startswith("Loom · ") for n in notices(app))


def test_the_welcome_is_shown_once_per_data_folder(tmp_path: Path) -> None:
    assert first_start(tmp_path / "data") is True
    assert first_start(tmp_path / "data") is False


async def test_a_prompt_that_failed_goes_back_to_the_input(harness: Harness) -> None:
    harness.script = [{"error": {"kind": "auth", "message": "invalid x-api-key"}}, {"text": "Hello!"}]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "fix the login bug")
        await wait_idle(pilot, app)
        assert app.prompt.text == "fix the login bug"
        assert any(n.startswith("↩ not sent: the provider refused the API key") for n in notices(app))
        app.prompt.set_text("")
        await send(pilot, "hello")
        await wait_idle(pilot, app)
        assert [m.text for m in harness.agent.messages if m.role == "user"] == ["hello"]
        assert list(app.transcript.query(MarkdownStream))[-1].source == "Hello!"


async def test_ctrl_d_during_a_run_asks_first(harness: Harness) -> None:
    harness.gated = True
    harness.script = [{"text": "streaming"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "go")
        await wait_for(pilot, lambda: bool(list(app.transcript.query(MarkdownStream))))
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert app.is_running and app.running
        assert "Ctrl+D again to stop it and quit" in app.activity.message
        await pilot.press("ctrl+d")
        await pilot.pause()
    assert app.return_value == 0


def test_the_exit_summary_shows_the_last_exchange_and_how_to_continue() -> None:
    messages = [Message.user("first"), Message.assistant(TextPart("old answer")),
                Message.user("make greet say hi"), Message.user("[files changed]", reminder=True),
                Message.assistant(TextPart("Let me look.")),
                Message.assistant(TextPart("Done: greet says **hi**.\n\n- edited src/app.py\n" + "x" * 200))]
    text = exit_summary(messages, "20261123-abcd", width=60)
    lines = text.splitlines()
    assert lines[1] == "> make greet say hi"
    assert "Done: greet says hi." in text and "old answer" not in text
    assert all(len(line) <= 60 for line in lines)
    assert "loom --continue" in text and "loom --resume 20261123-abcd" in text
    assert exit_summary([], "x", 80) == ""
    fenced = exit_summary([Message.user("show it"), Message.assistant(TextPart("Here:\n```python\nx = 1\n```"))],
                          None, 80)
    assert "```" not in fenced and "  x = 1" in fenced and "--resume" not in fenced


async def test_ctrl_d_during_a_permission_question_asks_where_it_can_be_seen(harness: Harness) -> None:
    read = {"name": "read_file", "input": {"path": "src/app.py"}}
    edit = {"name": "edit_file", "input": {"path": "src/app.py", "old_string": "hello", "new_string": "hi"}}
    harness.script = [{"tool_calls": [read]}, {"tool_calls": [edit]}]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "edit it")
        await wait_for(pilot, lambda: app.permission_queue.asking)
        await pilot.press("ctrl+d")
        await wait_for(pilot, lambda: app.activity.message == "a run is going — Ctrl+D again to stop it and quit")
        assert app.is_running and app.running
        # The question is docked under the activity line, which stays in view.
        assert app.activity.message == "a run is going — Ctrl+D again to stop it and quit"
        assert app.activity.region.height == 1 and app.activity.region.y < app.screen.size.height
        await pilot.press("ctrl+d")
        await pilot.pause()
    assert app.return_value == 0


def test_the_setup_note_follows_the_provider_in_use() -> None:
    from loom_cli.tui.first_run import missing_key, setup_text
    from loom_cli.tui.options import AgentUnavailable

    def failed(message: str) -> AgentUnavailable:
        try:
            try:
                raise ProviderError("config", message)
            except ProviderError as cause:
                raise AgentUnavailable(message) from cause
        except AgentUnavailable as error:
            return error

    openai = missing_key(failed("OPENAI_API_KEY is not set; export it, or set OPENAI_BASE_URL"), {})
    assert openai is not None and openai.provider == "openai"
    text = setup_text(openai, Path("/home/u/.config/loom/config.toml"))
    assert text.startswith("Set the key for openai") and "export OPENAI_BASE_URL=" in text
    assert "loom --provider anthropic" in text
    assert missing_key(failed("OPENAI_API_KEY is not set"), {"OPENAI_API_KEY": "sk-x"}) is None
    assert missing_key(failed("invalid base URL 'x' from OPENAI_BASE_URL"), {}) is None


def test_the_exit_summary_drops_inline_markup_but_keeps_code_as_it_is() -> None:
    answer = "Fixed `add`: it now returns **a + b**.\n```python\nprint(2**3, `x`)\n```"
    text = exit_summary([Message.user("fix add"), Message.assistant(TextPart(answer))], None, 80)
    assert "  Fixed add: it now returns a + b." in text
    assert "  print(2**3, `x`)" in text  # code lines exactly as written
