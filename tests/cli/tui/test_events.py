"""Event rendering: sub-agents nested under their task, retries, notices, limits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from textual.pilot import Pilot

from loom_cli.tui.app import LoomApp
from loom_cli.tui.markdown_stream import MarkdownStream
from loom_cli.tui.options import TuiOptions
from loom_cli.tui.tool_block import ToolBlock
from loom_cli.tui.transcript import Notice
from loom_engine.attachments import UserPrompt
from loom_engine.events import (
    AgentEvent,
    CompactionApplied,
    MaxTurnsReached,
    PermissionRequested,
    Retrying,
    TextDelta,
    ToolCallStarted,
    ToolFinished,
    TurnStarted,
)
from loom_engine.events import (
    Notice as NoticeEvent,
)
from loom_engine.permissions.answer import PermissionAnswer
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle
from tests.doubles.replay_agent import ReplayAgent


async def test_subagent_work_is_nested_under_its_task(harness: Harness) -> None:
    harness.script = [
        {"tool_calls": [{"name": "task", "input": {"description": "read the readme",
                                                     "prompt": "Read README.md and summarise it."}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
        {"text": "The README describes a demo project."},
        {"text": "The sub-agent says it is a demo project."},
    ]
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press(*"what is this", "enter")
        await wait_idle(pilot, app)
        top = [w for w in app.transcript.widgets() if isinstance(w, ToolBlock)]
        assert [b.data.name for b in top] == ["task"]
        task = top[0]
        assert task.data.status == "done"
        assert task.children_box is not None
        nested_tools = list(task.children_box.query(ToolBlock))
        assert [b.data.name for b in nested_tools] == ["read_file"]
        assert nested_tools[0].data.status == "done"
        nested_text = [m.source for m in task.children_box.query(MarkdownStream)]
        assert nested_text == ["The README describes a demo project."]
        # the main answer is a top-level block after the task
        answers = [w.source for w in app.transcript.widgets() if isinstance(w, MarkdownStream)]
        assert answers == ["The sub-agent says it is a demo project."]
        assert "task  read the readme" in screen_text(app)


@asynccontextmanager
async def prompted(agent: ReplayAgent, tmp_path: Path, size: tuple[int, int]) -> AsyncIterator[tuple[LoomApp, Pilot]]:
    """The app running ``agent``, with a prompt sent: the agent is playing its events."""
    app = LoomApp(TuiOptions(workspace=tmp_path, agent_factory=lambda _o: agent, data_dir=tmp_path / "data",
                             permission_guard_s=0.0, manage_gc=False))
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press(*"go", "enter")
        yield app, pilot


async def test_retries_notices_compaction_and_limits(tmp_path: Path) -> None:
    agent = ReplayAgent(workspace=tmp_path, script=[
        TurnStarted(turn=1),
        TextDelta(text="This partial answer will be dropped"),
        Retrying(attempt=1, delay_s=0.5, reason="overloaded (529)", discard_partial=True),
        TextDelta(text="The fresh answer."),
        NoticeEvent(level="warning", message="skipped skill 'broken': no description"),
        CompactionApplied(tokens_before=180_000, tokens_after=40_000, method="summary"),
        ToolCallStarted(call_id="c1", name="read_file", input={"path": "/etc/hosts"}),
        PermissionRequested(request_id="perm_1", call_id="c1", tool="read_file", input={"path": "/etc/hosts"},
                            reason="reading outside the workspace needs approval",
                            preview={"kind": "path", "path": "/etc/hosts"}),
        ToolFinished(call_id="c1", name="read_file", content="The user denied this tool call.", is_error=True,
                     duration_ms=3.0),
        MaxTurnsReached(max_turns=1, num_turns=1),
    ])
    async with prompted(agent, tmp_path, size=(100, 40)) as (app, pilot):
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        shown = screen_text(app)
        assert "read_file wants to access /etc/hosts (outside the workspace)" in shown
        await pilot.press("d", "enter")  # deny with no note: the run goes on
        await wait_idle(pilot, app)
        assert agent.answers == [("perm_1", PermissionAnswer("deny"))]
        [answer] = [w for w in app.transcript.widgets() if isinstance(w, MarkdownStream)]
        assert answer.source == "The fresh answer." and "dropped" not in answer.plain_text()
        notices = [(n.level, n.text) for n in app.transcript.query(Notice)]
        # The retry showed in the activity line while it was waited for, not as a line of its own.
        assert not any("retrying" in text for _, text in notices)
        assert ("warning", "skipped skill 'broken': no description") in notices
        assert ("info", "context compacted automatically: summarised the earlier conversation · "
                        "180,000 → 40,000 tokens") in notices
        assert ("warning", "stopped: reached the limit of 1 turn") in notices
        [block] = list(app.transcript.query(ToolBlock))
        assert block.data.status == "denied"
        assert "ctx 25%" in screen_text(app)


async def test_a_one_line_result_is_shown_once_and_longer_ones_below_the_header(tmp_path: Path) -> None:
    agent = ReplayAgent(workspace=tmp_path, script=[
        ToolCallStarted(call_id="c1", name="grep", input={"pattern": "def add"}),
        ToolFinished(call_id="c1", name="grep", content="calc.py:1:def add(a, b):", is_error=False,
                     duration_ms=3.0),
        ToolCallStarted(call_id="c2", name="bash", input={"command": "ls"}),
        ToolFinished(call_id="c2", name="bash", content="calc.py\ntest_calc.py\nExit code: 0", is_error=False,
                     duration_ms=3.0),
    ])
    async with prompted(agent, tmp_path, size=(100, 40)) as (app, pilot):
        await wait_idle(pilot, app)
        shown = screen_text(app)
        assert shown.count("calc.py:1:def add(a, b):") == 1
        assert "✓ bash  ls  · 3 lines" in shown
        assert "⎿ calc.py" in shown and "test_calc.py" in shown


async def test_a_fetch_asks_with_the_url_and_always_allow_names_the_host(tmp_path: Path) -> None:
    url = "https://docs.python.org/3/library/asyncio.html"
    agent = ReplayAgent(workspace=tmp_path, script=[
        ToolCallStarted(call_id="c1", name="web_fetch", input={"url": url}),
        PermissionRequested(request_id="perm_1", call_id="c1", tool="web_fetch", input={"url": url},
                            reason="fetching from docs.python.org needs approval",
                            preview={"kind": "url", "url": url},
                            suggested_rules=("web_fetch(domain:docs.python.org)",)),
        ToolFinished(call_id="c1", name="web_fetch", content=f"{url} · 200 · text/html · 10 characters\n\nasyncio",
                     is_error=False, duration_ms=3.0),
    ])
    async with prompted(agent, tmp_path, size=(110, 40)) as (app, pilot):
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        shown = screen_text(app)
        assert "web_fetch wants to fetch a web page" in shown
        assert url in shown and "web_fetch(domain:docs.python.org)" in shown
        await pilot.press("a")
        await wait_idle(pilot, app)
        assert agent.answers == [("perm_1", PermissionAnswer("allow_session"))]
        assert f"✓ web_fetch  {url}" in screen_text(app)


async def test_the_run_clock_stands_still_while_a_permission_question_waits(tmp_path: Path) -> None:
    gate = asyncio.Event()  # holds the run after the answer, as a slow tool would
    request = PermissionRequested(request_id="perm_1", call_id="c1", tool="bash", input={"command": "make test"},
                                  reason="running a command needs approval",
                                  preview={"kind": "command", "command": "make test"})

    async def slow_command(_prompt: str | UserPrompt) -> AsyncIterator[AgentEvent]:
        yield ToolCallStarted(call_id="c1", name="bash", input={"command": "make test"})
        yield request
        yield await agent.answer_to(request)
        await gate.wait()
        yield ToolFinished(call_id="c1", name="bash", content="ok", is_error=False, duration_ms=3000.0)

    agent = ReplayAgent(slow_command, workspace=tmp_path)
    now = [1000.0]
    app = LoomApp(TuiOptions(workspace=tmp_path, agent_factory=lambda _o: agent, data_dir=tmp_path / "data",
                             permission_guard_s=0.0, manage_gc=False))
    app.clock.now = lambda: now[0]
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await pilot.press(*"go", "enter")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        now[0] += 60.0  # the user reads the command for a minute
        app._tick()
        assert "waiting for your approval · 0s" in app.activity.message
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.permission_prompt.is_open)
        now[0] += 3.0  # the command runs for three seconds
        app._tick()
        assert "running bash · 3s" in app.activity.message
        gate.set()
        await wait_idle(pilot, app)


def test_run_clock_pauses_and_resumes() -> None:
    from loom_cli.tui.status_bar import RunClock

    now = [0.0]
    clock = RunClock(now=lambda: now[0])
    clock.start()
    now[0] = 5.0
    clock.pause()
    clock.pause()  # a second question while one is open changes nothing
    now[0] = 65.0
    assert clock.elapsed == 5.0
    clock.resume()
    now[0] = 67.0
    assert clock.elapsed == 7.0
    clock.start()
    assert clock.elapsed == 0.0
