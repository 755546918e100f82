"""OS confinement for every command Loom runs for the model or for a project.

``config`` holds what the user chose (one place for the modes), ``status`` what this
machine can do, ``sandbox`` the session's sandbox (:func:`open_sandbox`), and beside
them the backends (``bubblewrap``, ``landlock``), the layout both follow and the
seccomp filter. Importing this package is cheap: nothing here starts a process at
import, and the backends load when a sandbox is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import NETWORK_MODES, SANDBOX_MODES, NetworkMode, SandboxConfig, SandboxMode
from .status import SandboxStatus

if TYPE_CHECKING:
    from .sandbox import Launch, Machine, Sandbox, open_sandbox

__all__ = ["NETWORK_MODES", "SANDBOX_MODES", "Launch", "Machine", "NetworkMode", "Sandbox", "SandboxConfig",
           "SandboxMode", "SandboxStatus", "open_sandbox"]

_LAZY = frozenset({"Launch", "Machine", "Sandbox", "open_sandbox"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import sandbox

        return getattr(sandbox, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
