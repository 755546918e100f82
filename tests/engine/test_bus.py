import asyncio

import pytest

from loom_engine.bus import EventBus


async def test_request_waits_for_the_matching_response() -> None:
    bus = EventBus()
    seen: list[tuple[str, object]] = []
    bus.subscribe("permission", seen.append)
    waiter = asyncio.create_task(bus.request("permission", {"tool": "bash"}, request_id="perm_1"))
    await asyncio.sleep(0)
    assert seen == [("perm_1", {"tool": "bash"})]
    assert bus.pending_requests == ("perm_1",)
    assert not bus.respond("perm_2", "nope")
    assert bus.respond("perm_1", "yes")
    assert await waiter == "yes"
    assert bus.pending_requests == ()


async def test_abort_cancels_pending_requests_and_sets_the_token() -> None:
    bus = EventBus()
    waiter = asyncio.create_task(bus.request("permission", None))
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
    await asyncio.wait_for(waiter, 1)
    bus.pause()
    waiter = asyncio.create_task(bus.wait_if_paused())
    bus.abort()
    await asyncio.wait_for(waiter, 1)


def test_unsubscribe() -> None:
    bus = EventBus()
    got: list[object] = []
    unsubscribe = bus.subscribe("x", got.append)
    bus.publish("x", 1)
    unsubscribe()
    bus.publish("x", 2)
    assert got == [1]
