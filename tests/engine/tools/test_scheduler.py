import asyncio

from loom_engine.tools.scheduler import Scheduler, group_calls


def test_groups_consecutive_safe_calls() -> None:
    calls = ["r1", "r2", "W1", "r3", "W2", "W3", "r4", "r5"]
    groups = group_calls(calls, lambda c: c.startswith("r"))
    assert groups == [["r1", "r2"], ["W1"], ["r3"], ["W2"], ["W3"], ["r4", "r5"]]


async def test_safe_calls_overlap_unsafe_calls_do_not_and_order_is_kept() -> None:
    log: list[str] = []
    active = 0
    peak_safe = 0

    async def run_one(call: str) -> str:
        nonlocal active, peak_safe
        log.append(f"start {call}")
        active += 1
        if call.startswith("r"):
            peak_safe = max(peak_safe, active)
        else:
            assert active == 1, "an unsafe call ran alongside another"
        await asyncio.sleep(0.05 if call == "r1" else 0.01)
        active -= 1
        log.append(f"end {call}")
        return call.upper()

    results = await Scheduler(10).run(["r1", "r2", "r3", "W1", "r4"], run_one, lambda c: c.startswith("r"))
    assert results == ["R1", "R2", "R3", "W1", "R4"]
    assert peak_safe == 3
    assert log.index("start W1") > log.index("end r1")
    assert log.index("start r4") > log.index("end W1")


async def test_semaphore_bounds_parallelism() -> None:
    active = 0
    peak = 0

    async def run_one(call: int) -> int:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return call

    assert await Scheduler(3).run(list(range(10)), run_one, lambda c: True) == list(range(10))
    assert peak == 3


async def test_cancel_stops_every_parallel_call() -> None:
    cancelled: list[int] = []
    started: list[int] = []
    all_started = asyncio.Event()

    async def run_one(call: int) -> int:
        started.append(call)
        if len(started) == 3:
            all_started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(call)
            raise
        return call

    task = asyncio.create_task(Scheduler(10).run([1, 2, 3], run_one, lambda c: True))
    await asyncio.wait_for(all_started.wait(), 30)  # every call is running: then cancel
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sorted(cancelled) == [1, 2, 3]
