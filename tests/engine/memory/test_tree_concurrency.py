"""Writers racing on one shared store: every write lands exactly once or is refused with
the entry as it now is, and writers that retry from that entry all get through."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator

import pytest

from loom_engine.memory.entries import Entry, Scope, StaleVersion
from loom_engine.memory.tree import TreeStore


@pytest.fixture(autouse=True)
def switch_often() -> Iterator[None]:
    """Threads switch every microsecond, so a check and a write that were not one step
    would be torn apart many times over a run."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _append(store: TreeStore, line: str) -> int:
    """Add ``line`` to ``log.md`` by compare-and-set; how many times it was refused."""
    current: Entry | None = store.get("log.md")
    refusals = 0
    while True:
        text = (current.content if current is not None else "") + line + "\n"
        try:
            store.put("log.md", text, expected=current.version if current is not None else None)
            return refusals
        except StaleVersion as stale:
            refusals += 1
            assert stale.current is not None  # nobody deletes here: the refusal carries the entry
            current = stale.current  # retry from what the refusal says is there now


def test_threads_appending_to_one_entry_lose_nothing() -> None:
    store = TreeStore(Scope.SHARED)
    writers, each = 8, 100
    start = threading.Barrier(writers)
    refusals: list[int] = []

    def work(n: int) -> None:
        start.wait()
        refusals.append(sum(_append(store, f"w{n}-{i}") for i in range(each)))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entry = store.get("log.md")
    assert entry is not None
    lines = entry.content.splitlines()
    assert sorted(lines) == sorted(f"w{n}-{i}" for n in range(writers) for i in range(each))
    # Each writer's own lines keep their order (a write never jumps over an earlier one).
    for n in range(writers):
        mine = [line for line in lines if line.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in range(each)]
    assert len(refusals) == writers


def test_racing_creates_one_wins_the_others_see_the_winner() -> None:
    store = TreeStore(Scope.SHARED)
    writers = 8
    start = threading.Barrier(writers)
    won: list[Entry] = []
    refused: list[Entry | None] = []

    def work(n: int) -> None:
        start.wait()
        try:
            won.append(store.put("lead.md", f"writer {n}", expected=None))
        except StaleVersion as stale:
            refused.append(stale.current)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(refused) == writers - 1
    assert all(current == won[0] for current in refused)
    assert store.get("lead.md") == won[0]


async def test_tasks_that_read_then_yield_then_write_converge() -> None:
    """Every task reads, lets the others run, then writes: all but one are refused each
    round, and each retries from the entry its refusal carried until all have landed."""
    store = TreeStore(Scope.SHARED)
    refused = 0

    async def add(name: str) -> None:
        nonlocal refused
        current = store.get("log.md")
        while True:
            await asyncio.sleep(0)  # the other tasks read the same version meanwhile
            text = (current.content if current is not None else "") + name + "\n"
            try:
                store.put("log.md", text, expected=current.version if current is not None else None)
                return
            except StaleVersion as stale:
                refused += 1
                current = stale.current

    names = [f"task-{n}" for n in range(12)]
    await asyncio.gather(*(add(name) for name in names))
    entry = store.get("log.md")
    assert entry is not None and sorted(entry.content.splitlines()) == sorted(names)
    assert refused >= len(names) - 1  # they really collided


async def test_tasks_and_worker_threads_together_each_on_their_own_entry_and_one_common() -> None:
    store = TreeStore(Scope.SHARED)

    def in_thread(n: int) -> None:
        store.put(f"threads/{n}.md", f"thread {n}", expected=None)
        _append(store, f"thread {n}")

    async def in_task(n: int) -> None:
        store.put(f"tasks/{n}.md", f"task {n}", expected=None)
        await asyncio.sleep(0)
        _append(store, f"task {n}")

    await asyncio.gather(*(asyncio.to_thread(in_thread, n) for n in range(6)), *(in_task(n) for n in range(6)))
    assert [e.path for e in store.list("threads")] == [f"threads/{n}.md" for n in range(6)]
    assert [e.path for e in store.list("tasks")] == [f"tasks/{n}.md" for n in range(6)]
    log = store.get("log.md")
    assert log is not None
    expected = [f"thread {n}" for n in range(6)] + [f"task {n}" for n in range(6)]
    assert sorted(log.content.splitlines()) == sorted(expected)
    versions = [e.version for e in store.list()]
    assert len(set(versions)) == len(versions)  # no two writes share a version
