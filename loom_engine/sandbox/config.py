"""What the user chose for the sandbox: the one list of its modes, and its settings.

``auto`` confines commands wherever the machine can (and says once why not where it
cannot); ``on`` refuses to run a command it cannot confine; ``off`` is the user's own
choice to run without walls. Only the user turns it off or widens it (their config, a
flag, ``LOOM_SANDBOX``): a project's settings may only narrow it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

SandboxMode = Literal["auto", "on", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
# ``allowlist``: only the hosts in ``allowed_domains``, through Loom's proxy.
NetworkMode = Literal["off", "allowlist", "on"]
NETWORK_MODES: tuple[NetworkMode, ...] = get_args(NetworkMode)

# Unreadable inside the sandbox unless the user says otherwise: credentials a command
# has no business reading (home-relative; Loom's own config and data folders are added
# by whoever builds the config, since only it knows where they are).
DEFAULT_DENY_READ_IN_HOME: tuple[str, ...] = (
    ".ssh", ".aws", ".gnupg", ".netrc", ".config/gcloud", ".azure", ".kube", ".docker",
    ".git-credentials", ".config/gh", ".npmrc", ".pypirc",
)


@dataclass(frozen=True)
class SandboxConfig:
    mode: SandboxMode = "auto"
    network: NetworkMode = "off"
    # Hosts reachable when ``network`` is ``allowlist`` (``example.com``, ``*.example.com``).
    allowed_domains: tuple[str, ...] = ()
    # Writable besides the workspace, its --add-dir folders and a private temp folder.
    allow_write: tuple[Path, ...] = ()
    # Unreadable (and unwritable) inside the sandbox.
    deny_read: tuple[Path, ...] = field(default_factory=tuple)
    # accept-edits: a confined command that can only change the workspace runs unasked.
    auto_allow_in_accept_edits: bool = True

    @property
    def enabled(self) -> bool:
        return self.mode != "off"


def default_deny_read(home: Path, *own_folders: Path) -> tuple[Path, ...]:
    """The default unreadable paths: the credentials in ``home`` and Loom's own folders."""
    return tuple(home / name for name in DEFAULT_DENY_READ_IN_HOME) + tuple(own_folders)
