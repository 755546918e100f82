"""What every surface says about the session's sandbox: `loom sandbox`, `/sandbox`, the start
line, and the ``sandbox`` object of `loom run`'s json and stream-json output."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.sandbox.status import SandboxStatus

if TYPE_CHECKING:
    from .chat_agent import ChatAgent

# What runs inside, and what does not (the README says the same at more length).
COVERS = "bash commands (the model's and your !commands), project hooks, project commands' !`cmd`"
NOT_COVERED = "file tools (the permission rules govern them), MCP servers, your own hooks"


@dataclass(frozen=True)
class SandboxFacts:
    """The session's sandbox as a person is shown it."""

    status: SandboxStatus
    mode_source: str  # "default", "--sandbox", "LOOM_SANDBOX", "user config (…)", ".loom/settings.toml"
    workspace: Path
    writable: tuple[Path, ...] = ()  # the workspace, --add-dir folders, allow_write
    read_only: tuple[Path, ...] = ()  # inside the writable folders (.git/hooks, .loom, trusted hook folders…)
    unreadable: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()  # what could not be arranged (a deny_read path holding the workspace)

    def as_json(self) -> dict[str, Any]:
        return {**self.status.as_json(), "mode_source": self.mode_source,
                "writable": [str(p) for p in self.writable], "read_only": [str(p) for p in self.read_only],
                "unreadable": [str(p) for p in self.unreadable], "notes": list(self.notes)}


def status_of(agent: ChatAgent) -> SandboxStatus | None:
    """The sandbox status of ``agent``'s session; None when it has no sandbox (an embedder's agent)."""
    return agent.sandbox.status if agent.sandbox is not None else None


def start_line(status: SandboxStatus | None) -> str | None:
    """The one line said at start when commands cannot be confined (mode auto: they ask as
    before; mode on: they are refused), naming why and the fix; None otherwise."""
    if status is None or status.active or status.mode == "off":
        return None
    return status.summary()


def report_lines(facts: SandboxFacts, home: Path | None = None) -> list[str]:
    """`loom sandbox` and `/sandbox`: whether commands are confined and by what (or why not,
    and the fix), then what is writable, read-only, unreadable, and the network."""
    status = facts.status
    home = home if home is not None else Path(os.path.expanduser("~"))

    def shown(path: Path) -> str:
        return _shown(path, facts.workspace, home)

    lines = [status.summary(), f"  mode        {status.mode} ({facts.mode_source})"]
    if status.mode == "off":
        lines.append(f"  commands run without walls; {_turn_on(facts.mode_source)} to confine them")
        return lines
    if not status.active:
        lines.append('  [sandbox] mode = "on" refuses commands instead' if status.mode == "auto"
                     else '  --sandbox auto runs them unconfined, asking first')
        return lines
    lines.append(f"  covers      {COVERS}")
    lines.append(f"  outside     {NOT_COVERED}")
    lines.append("  writable    " + ", ".join([*(shown(p) for p in facts.writable), "a private /tmp"]))
    lines.append("  read-only   everything else" + (", and in there: " + ", ".join(map(shown, facts.read_only))
                                                    if facts.read_only else ""))
    lines.append("  unreadable  " + (", ".join(map(shown, facts.unreadable)) or "nothing"))
    lines.append(f"  network     {_network(status)}")
    lines += [f"  note        {note}" for note in facts.notes]
    return lines


def _turn_on(mode_source: str) -> str:
    """How to undo the setting that turned the sandbox off."""
    if mode_source == "--sandbox":
        return "leave out --sandbox off"
    if mode_source == "LOOM_SANDBOX":
        return "unset LOOM_SANDBOX"
    return f'remove [sandbox] mode = "off" from your {mode_source}'


def _network(status: SandboxStatus) -> str:
    if status.network == "on":
        return "on: any host"
    if status.reaches_allowed_domains:
        return (f"{status.network_words()}, through Loom's proxy (http and https on ports 80 and 443)"
                if status.allowed_domains else "allow-list with no domains: no connections")
    if status.network == "allowlist":
        return ("off: no connections; the allow-list (" + (", ".join(status.allowed_domains) or "empty")
                + ") needs bubblewrap's private network, which this machine cannot give")
    return 'off: no connections ([sandbox] network = "allowlist" with allowed_domains opens some hosts)'


def _shown(path: Path, workspace: Path, home: Path) -> str:
    """A path as a person reads it: relative in the workspace, ``~/…`` in the home folder."""
    if path == workspace:
        return f"{path} (the workspace)"
    for base, prefix in ((workspace, ""), (home, "~/")):
        if path.is_relative_to(base) and path != base:
            return prefix + path.relative_to(base).as_posix()
    return str(path)
