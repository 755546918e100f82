"""EventBus: control flowing into the engine (abort, pause, request/response).

The event stream carries what happens out to the UI; the bus carries the UI's answers
back in: a permission request waits on a future here until the UI answers it by id.
Everything is asyncio: waiting never polls.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from .execution import CancelToken


class EventBus:
    def __init__(self) -> None:
        self._cancel = CancelToken()
        self._running = asyncio.Event()
        self._running.set()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)

    # --- abort -----------------------------------------------------------------------

    @property
    def cancel_token(self) -> CancelToken:
        return self._cancel

    def abort(self, reason: str = "interrupted by user", refused: tuple[str, ...] = ()) -> None:
        """Stop the current run at its next await point; ``refused``: the ids of the tool
        calls the user said no to in stopping it (they did not run)."""
        self._cancel.cancel(reason, refused)
        for future in self._pending.values():
            if not future.done():
                future.cancel()
        self._running.set()  # a paused run must wake up to notice the abort

    @property
    def aborted(self) -> bool:
        return self._cancel.cancelled

    def reset(self) -> None:
        """Arm a fresh cancel token for the next run."""
        self._cancel = CancelToken()

    # --- pause / resume --------------------------------------------------------------

    def pause(self) -> None:
        """Hold the run at the start of its next turn (tools already running finish)."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    async def wait_if_paused(self) -> None:
        await self._running.wait()

    # --- request / response ----------------------------------------------------------

    def new_request_id(self, prefix: str = "req") -> str:
        return f"{prefix}_{next(self._ids)}"

    async def request(self, request_id: str) -> Any:
        """Wait for :meth:`respond` with ``request_id`` (the UI learnt of the request
        from an event carrying that id).

        Raises ``asyncio.CancelledError`` if the run is aborted while waiting.
        """
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            return await future
        finally:
            self._pending.pop(request_id, None)

    def respond(self, request_id: str, value: Any) -> bool:
        """Answer a pending request; False if nobody waits for that id any more."""
        future = self._pending.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(value)
        return True
