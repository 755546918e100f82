"""Cancellation: the token an abort sets, awaited and checked at every await point."""

from __future__ import annotations

import asyncio


class Cancelled(Exception):
    """Raised inside the engine when the run was aborted."""


class CancelToken:
    """A one-shot flag that can be awaited; children share or chain it."""

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event = asyncio.Event()
        self.reason = ""
        # The tool calls the user refused when stopping the run (the "n" of a permission
        # question): they did not run, which the closed turn must say, not "interrupted".
        self.refused: tuple[str, ...] = ()
        self._children: list[CancelToken] = []
        if parent is not None:
            parent._children.append(self)
            if parent.cancelled:
                self.cancel(parent.reason, parent.refused)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "interrupted by user", refused: tuple[str, ...] = ()) -> None:
        if self._event.is_set():
            return
        self.reason = reason
        self.refused = refused
        self._event.set()
        for child in self._children:
            child.cancel(reason, refused)

    async def wait(self) -> None:
        await self._event.wait()

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled(self.reason)

    def child(self) -> CancelToken:
        return CancelToken(self)

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, or raise :class:`Cancelled` the moment the token is set
        (at once when it already is)."""
        self.raise_if_cancelled()
        if seconds <= 0:
            return
        try:
            await asyncio.wait_for(self._event.wait(), timeout=seconds)
        except TimeoutError:
            return
        raise Cancelled(self.reason)
