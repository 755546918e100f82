import asyncio
from pathlib import Path

import pytest

from loom_engine.bus import EventBus

BOUND_S = 30  # how long a wait may take before it counts as a hang (a loaded machine is slow)


async def test_request_waits_for_the_matching_response() -> None:
    bus = EventBus()
    request_id = bus.new_request_id("perm")
    waiter = asyncio.create_task(bus.request(request_id))
    await asyncio.sleep(0)
    assert not waiter.done()
    assert not bus.respond("perm_999", "nope")
    assert bus.respond(request_id, "yes")
    assert await waiter == "yes"
    assert not bus.respond(request_id, "again")  # answered requests are forgotten


async def test_abort_cancels_pending_requests_and_sets_the_token() -> None:
    bus = EventBus()
    waiter = asyncio.create_task(bus.request("perm_1"))
    await asyncio.sleep(0)
    bus.abort("esc")
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert bus.aborted and bus.cancel_token.reason == "esc"
    bus.reset()
    assert not bus.aborted


async def test_pause_blocks_until_resume_and_abort_wakes_it() -> None:
    bus = EventBus()
    bus.pause()
    waiter = asyncio.create_task(bus.wait_if_paused())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    bus.resume()
    await asyncio.wait_for(waiter, BOUND_S)
    bus.pause()
    waiter = asyncio.create_task(bus.wait_if_paused())
    bus.abort()
    await asyncio.wait_for(waiter, BOUND_S)


async def test_a_paused_agent_holds_before_its_next_turn(tmp_path: Path) -> None:
    from loom_engine.agent import Agent
    from loom_engine.config import AgentConfig
    from loom_engine.events import Finished, TurnStarted
    from loom_engine.parts import AgentParts
    from loom_engine.providers.scripted import ScriptedProvider
    from loom_engine.workspace import Workspace

    agent = Agent(AgentConfig(model="scripted"),
                  AgentParts(provider=ScriptedProvider([{"text": "hi"}]), tools=[], workspace=Workspace.at(tmp_path)),
                  system_prompt="s")
    agent.pause()
    stream = agent.run("hello")
    first = await asyncio.wait_for(anext(stream), BOUND_S)
    assert isinstance(first, TurnStarted)
    held = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    assert not held.done()  # waiting at the turn's pause point
    agent.resume()
    rest = [await asyncio.wait_for(held, BOUND_S)] + [event async for event in stream]
    assert isinstance(rest[-1], Finished)
