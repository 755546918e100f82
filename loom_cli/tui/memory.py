"""Keeping the chat's long-lived objects out of the garbage collector's full scans.

A gen-2 collection scans every tracked object; over a long session (start-up's modules,
the transcript's blocks) one takes long enough to stall keys typed while an answer
streams. So between runs what exists is frozen (`gc.freeze`), and every
`full_collect_every` runs the frozen objects are collected for real once (pruned blocks
hold reference cycles), at a moment when no answer is streaming.
"""

from __future__ import annotations

import gc


class MemorySettler:
    def __init__(self, full_collect_every: int = 25) -> None:
        self.full_collect_every = full_collect_every
        self._runs_since_collect = 0

    def settle(self) -> None:
        """Between runs: freeze what exists now so gen-2 collections skip it while streaming."""
        self._runs_since_collect += 1
        if self._runs_since_collect >= self.full_collect_every:
            self._runs_since_collect = 0
            gc.unfreeze()
            gc.collect()
        gc.freeze()
