"""A process that must not outlive its parent: Linux's parent-death signal."""

from __future__ import annotations

import os
import signal


def end_with_parent(sig: signal.Signals, parent: int | None = None) -> None:
    """``sig`` to this process when the thread that made it ends (its parent process, for
    a single-threaded parent); at once when the parent is already gone - ``parent`` is its
    pid, None: any reparenting to init counts. Elsewhere than Linux: nothing."""
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, sig, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent if parent is not None else os.getppid() == 1:  # gone before the signal was armed
        os.kill(os.getpid(), sig)
