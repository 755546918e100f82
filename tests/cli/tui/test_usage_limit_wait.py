"""The chat at a usage limit (the real Anthropic SDK against the fake server): one notice
line names the reset, the activity line counts down while Loom waits, the same request
goes again after the wait and the answer arrives; Esc stops the wait."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from loom_cli.tui.markdown_stream import MarkdownStream
from loom_cli.tui.options import TuiOptions
from loom_cli.tui.transcript import Notice
from loom_cli.usage_limits import CHAT_POLICY
from loom_engine.execution import CancelToken
from loom_engine.usage_wait import UsageLimitWaiter
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle
from tests.doubles.fake_llm import FakeLLMServer, Reply


class HeldSleep:
    """The wait's sleep, ended by the test (not by a clock); Esc still ends it."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.asked: list[float] = []

    async def __call__(self, seconds: float, cancel: CancelToken) -> None:
        self.asked.append(seconds)
        self.started.set()
        released = asyncio.ensure_future(self.release.wait())
        aborted = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait((released, aborted), return_when=asyncio.FIRST_COMPLETED)
        finally:
            released.cancel()
            aborted.cancel()
        cancel.raise_if_cancelled()


def factory(harness: Harness, server: FakeLLMServer, sleep: HeldSleep):  # type: ignore[no-untyped-def]
    def build(options: TuiOptions) -> Any:
        from loom_engine.agent import Agent
        from loom_engine.config import AgentConfig
        from loom_engine.parts import AgentParts
        from loom_engine.providers.factory import create_provider
        from loom_engine.workspace import Workspace

        provider = create_provider("anthropic", api_key="k", base_url=server.anthropic_base_url)
        agent = Agent(AgentConfig(model="claude-haiku-4-5", context_window=200_000),
                      AgentParts(provider=provider, tools=[], workspace=Workspace.at(options.workspace),
                                 usage_limits=UsageLimitWaiter(CHAT_POLICY, sleep=sleep)),
                      system_prompt="You are a test assistant.")
        harness.agents.append(agent)
        return agent
    return build


async def send(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def test_the_chat_counts_down_and_goes_on_after_the_reset(harness: Harness, fake_llm: FakeLLMServer) -> None:
    sleep = HeldSleep()
    fake_llm.enqueue(Reply.usage_limit(reset_in=2 * 3600), Reply.text("Back at work."))
    app = harness.app(agent_factory=factory(harness, fake_llm, sleep))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "keep going")
        await wait_for(pilot, lambda: sleep.started.is_set())
        await wait_for(pilot, lambda: "resuming at" in screen_text(app))
        shown = screen_text(app)
        assert "⏸ usage limit — resuming at " in shown
        assert re.search(r"\((2h 00m|1h 59m) \d\ds left\) · esc to stop waiting", shown), shown
        notices = [n.text for n in app.transcript.query(Notice) if n.text.startswith("⏸")]
        assert len(notices) == 1 and notices[0].startswith("⏸ Anthropic usage limit reached (the 5-hour limit)")
        assert "resets at " in notices[0] and "(in 2h 00m)" in notices[0] and "esc stops waiting" in notices[0]
        assert sleep.asked and 7100 < sleep.asked[0] <= 7202
        sleep.release.set()
        await wait_idle(pilot, app)
        assert [a.source for a in app.transcript.query(MarkdownStream)][-1] == "Back at work."
        # The countdown gives way (the activity line is redrawn on its next tick).
        await wait_for(pilot, lambda: "resuming at" not in screen_text(app))
        assert len(fake_llm.requests) == 2 and fake_llm.requests[1].messages == fake_llm.requests[0].messages


async def test_esc_stops_the_wait(harness: Harness, fake_llm: FakeLLMServer) -> None:
    sleep = HeldSleep()
    fake_llm.enqueue(Reply.usage_limit(reset_in=3600))
    app = harness.app(agent_factory=factory(harness, fake_llm, sleep))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "keep going")
        await wait_for(pilot, lambda: sleep.started.is_set())
        await pilot.press("escape")
        await wait_idle(pilot, app)
        assert any(n.text.startswith("⏹ interrupted") for n in app.transcript.query(Notice))
        await wait_for(pilot, lambda: "resuming at" not in screen_text(app))
        assert len(fake_llm.requests) == 1
