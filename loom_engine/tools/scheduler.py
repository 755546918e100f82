"""Runs one batch of tool calls: safe calls in parallel, the others one at a time.

Consecutive concurrency-safe calls form a parallel group bounded by a semaphore; an
unsafe call runs alone, after everything before it finished and before anything after
it starts. Results come back in the model's call order whatever order they finish in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

Call = TypeVar("Call")
Result = TypeVar("Result")


def group_calls(calls: Sequence[Call], is_safe: Callable[[Call], bool]) -> list[list[Call]]:
    groups: list[list[Call]] = []
    for call in calls:
        if is_safe(call) and groups and is_safe(groups[-1][0]):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


class Scheduler:
    def __init__(self, max_parallel: int = 10) -> None:
        if max_parallel < 1:
            raise ValueError("max_parallel must be at least 1")
        self.max_parallel = max_parallel

    async def run(self, calls: Sequence[Call], run_one: Callable[[Call], Awaitable[Result]],
                  is_safe: Callable[[Call], bool]) -> list[Result]:
        semaphore = asyncio.Semaphore(self.max_parallel)

        async def bounded(call: Call) -> Result:
            async with semaphore:
                return await run_one(call)

        results: list[Result] = []
        for group in group_calls(calls, is_safe):
            if len(group) == 1:
                results.append(await run_one(group[0]))
            else:
                results.extend(await _gather_or_cancel([bounded(c) for c in group]))
        return results


async def _gather_or_cancel(coros: list[Awaitable[Result]]) -> list[Result]:
    """Like gather, but if we are cancelled every sibling is cancelled and awaited too,
    so no tool keeps running after an abort."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
