"""Keys pressed while a list is on its way to the screen belong to nothing.

Esc Esc (or ``/rewind``) opens the rewind list after a thread has read the snapshots. A
key typed in between would otherwise act where it lands: on the prompt it was not
meant for (Up brings back a prompt, Enter sends it), or in the list once it is up
(Enter picks a prompt the user has not seen). So from the moment the list is asked for
until the frame that draws it, keys are held back and dropped; a key counts by when the
terminal delivered it (Textual stamps each event then), so one still queued when the
list appears is dropped too. Ctrl+C and Ctrl+D always pass: quitting never waits.
"""

from __future__ import annotations

import math

from textual import events
from textual._time import get_time  # the clock Textual stamps its events with

_ALWAYS_PASS = frozenset({"ctrl+c", "ctrl+d"})


class KeyHold:
    def __init__(self) -> None:
        self._until = 0.0  # keys stamped before this are dropped

    def hold(self) -> None:
        """Drop every key from now until `release`."""
        self._until = math.inf

    def release(self) -> None:
        """Keys pressed from now on act again; those pressed before, still queued, do not.
        Nothing to do when nothing is held."""
        if self.holding:
            self._until = get_time()

    @property
    def holding(self) -> bool:
        return self._until == math.inf

    def drops(self, event: events.Key) -> bool:
        return event.time < self._until and event.key not in _ALWAYS_PASS
