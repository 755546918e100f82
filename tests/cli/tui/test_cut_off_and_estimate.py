"""The chat: an answer cut off by the output limit says so and /continue asks the model
to go on; the status bar estimates what a first request sends until its usage arrives."""

from __future__ import annotations

from loom_cli.stop_reason import CONTINUE_PROMPT
from loom_cli.tui.markdown_stream import MarkdownStream
from loom_cli.tui.transcript import Notice, UserMessage
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle


async def send(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press(*text)
    await pilot.press("enter")


async def test_a_cut_off_answer_says_so_and_continue_asks_the_model_to_go_on(harness: Harness) -> None:
    harness.script = [{"text": "The first half, and then", "stop_reason": "max_tokens"},
                      {"text": " the second half."}]
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "write a lot")
        await wait_idle(pilot, app)
        warnings = [n.text for n in app.transcript.query(Notice) if n.level == "warning"]
        assert warnings == ["✂ the answer was cut off at the output limit (8,192 tokens, max_tokens in "
                            "config.toml) · /continue goes on"]
        await send(pilot, "/continue")
        await wait_idle(pilot, app)
        assert [u.text for u in app.transcript.query(UserMessage)] == ["write a lot", CONTINUE_PROMPT]
        assert [a.source for a in app.transcript.query(MarkdownStream)][-1] == " the second half."
        # The second answer ended by itself: no second notice.
        assert len([n for n in app.transcript.query(Notice) if n.level == "warning"]) == 1


async def test_a_whole_answer_shows_no_cut_off_notice(harness: Harness) -> None:
    harness.script = [{"text": "Done."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "hi")
        await wait_idle(pilot, app)
        assert not [n for n in app.transcript.query(Notice) if "cut off" in n.text]


async def test_the_bar_estimates_the_first_request_until_its_usage_arrives(harness: Harness) -> None:
    harness.gated = True
    harness.script = [{"text": "Answer.", "usage": {"input_tokens": 4321, "output_tokens": 12}}]
    app = harness.app()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        assert "↑0 ↓0" in screen_text(app)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: app.status.sending_estimate > 0)
        estimate = app.status.sending_estimate
        used, _window = app.agent.context_usage()
        assert estimate == used  # the engine's own estimate of the context
        await pilot.pause()
        shown = screen_text(app)
        assert "↑~" in shown and "↑0" not in shown
        harness.providers[-1].gate.set()
        await wait_idle(pilot, app)
        shown = screen_text(app)
        assert "↑4.3k ↓12" in shown and "↑~" not in shown
