"""Events a worker task puts on a queue, handed on to whoever iterates the run.

The agent's runs and a custom command's shell lines both work in a task that puts its
events on a queue while the caller's async generator yields them: the task cannot be
an async generator itself, since a permission question must reach the consumer while a
tool call waits on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any, Final

DONE: Final = object()  # what the worker puts on the queue last, however it ends


async def relay(queue: asyncio.Queue[Any], task: asyncio.Task[None], stop: Callable[[], object]
                ) -> AsyncGenerator[Any, None]:
    """The events ``task`` puts on ``queue``, until it puts :data:`DONE`.

    When the consumer stops listening first (it broke off, was closed or cancelled),
    ``stop`` asks the task to end: how is the caller's choice (a run's cancel token lets
    it close its turn cleanly; ``task.cancel`` stops it at once). The task is always
    awaited, so none outlives its events.
    """
    try:
        while True:
            event = await queue.get()
            if event is DONE:
                break
            yield event
    finally:
        if not task.done():
            stop()
        await asyncio.gather(task, return_exceptions=True)
