"""How a project's MCP server is shown before it is trusted, and `/mcp`.

The chat's start-up question about the project (:mod:`.trust_screen`) lists each server the
repository's ``.mcp.json`` would start with :func:`pending_text`: its command line (or URL),
the file it comes from, the names of the environment variables and headers it is given
(never their values) and the user's own variables its entry reads.

`/mcp` shows each server's state (connected, connecting, failed and why, needs login,
disabled) and what it offers; ``r`` reconnects the chosen server, ``l`` logs in to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .hanging import Hanging
from .question_box import box_css

if TYPE_CHECKING:
    from loom_engine.mcp.config import ServerConfig
    from loom_engine.mcp.manager import McpManager, ServerStatus

_STATE_STYLE = {"connected": "bold green", "connecting": "yellow", "failed": "bold red",
                "needs_login": "bold yellow", "disabled": "dim"}
_STATE_WORDS = {"connected": "connected", "connecting": "connecting…", "failed": "failed",
                "needs_login": "needs login", "disabled": "disabled"}
_SHOWN_NAMES = 12  # tools, prompts or resources listed by name per server; more are counted


def pending_text(servers: Sequence[ServerConfig], marks: Sequence[Text | None] = (),
                 workspace: Path | None = None) -> Text:
    """Each server as the question shows it; ``marks`` (new, changed) follow the names; a
    file inside ``workspace`` is named from it, as the settings' and hooks' files are."""
    text = Text()
    for server, mark in zip(servers, (*marks, *[None] * (len(servers) - len(marks))), strict=True):
        text.append("  • ")
        text.append(server.name, style="bold")
        if mark is not None:
            text.append("  ")
            text.append_text(mark)
        text.append(f"\n    {server.describe()}\n", style="bold yellow")
        source = server.source
        shown = source.relative_to(workspace) if workspace is not None and source.is_relative_to(workspace) \
            else source
        text.append(f"    from {shown}\n", style="dim")
        given = [*(f"env {name}" for name in server.env), *(f"header {name}" for name in server.headers)]
        if given:  # names only: a value may be a secret
            text.append(f"    gets {', '.join(given)} (values not shown)\n", style="dim")
        read = server.environment_read()
        if read:  # a header or env value may carry one of these to the server
            text.append(f"    passes it your {', '.join('$' + name for name in read)}\n", style="bold red")
    text.rstrip()
    return text


def _names(title: str, names: Sequence[str]) -> Text:
    text = Text(f"    {title} ({len(names)}): ", style="dim")
    shown = ", ".join(names[:_SHOWN_NAMES]) + (f", … {len(names) - _SHOWN_NAMES} more"
                                               if len(names) > _SHOWN_NAMES else "")
    text.append(shown)
    return text


def server_text(status: ServerStatus, *, selected: bool = False) -> Text:
    """One server: its state line, where it runs, and what it offers."""
    config = status.config
    text = Text()
    text.append("› " if selected else "  ", style="bold")
    text.append(config.name, style="bold reverse" if selected else "bold")
    text.append("  ")
    text.append(_STATE_WORDS.get(status.state, status.state), style=_STATE_STYLE.get(status.state, ""))
    if status.reason:
        text.append(f": {status.reason}", style="red" if status.state == "failed" else "")
    if status.state == "needs_login":
        text.append("  (l logs in)", style="dim")
    text.append(f"\n    {config.describe()}  [{config.origin}]", style="dim")
    if status.state == "connected":
        for title, names in (("tools", [t.name for t in status.tools]),
                             ("prompts", [p.name for p in status.prompts]),
                             ("resources", [r.uri for r in status.resources])):
            if names:
                text.append("\n")
                text.append_text(_names(title, names))
    return text


def servers_text(statuses: Sequence[ServerStatus], selected: int,
                 left_out: Sequence[tuple[ServerConfig, str]] = ()) -> Text:
    text = Text()
    for index, status in enumerate(statuses):
        if index:
            text.append("\n")
        text.append_text(server_text(status, selected=index == selected))
    for index, (config, why) in enumerate(left_out, start=len(statuses)):
        text.append("\n" if text.plain else "")
        text.append("› " if index == selected else "  ", style="bold")
        text.append(config.name, style="bold reverse" if index == selected else "bold")
        text.append(f"  {why}", style="dim")
        text.append(f"\n    {config.describe()}  [{config.origin}]", style="dim")
    if not text.plain:
        text.append("No MCP servers. Add one with: loom mcp add NAME -- COMMAND ARGS…", style="dim")
    return text


class McpScreen(ModalScreen[None]):
    """`/mcp`: the servers, live (it follows the manager's changes)."""

    DEFAULT_CSS = box_css("McpScreen", "$primary") + """
    McpScreen #mcp-message {
        color: $text-warning;
    }
    """

    def __init__(self, manager: McpManager | None, left_out: Sequence[tuple[ServerConfig, str]] = (),
                 trust: Callable[[ServerConfig], str | None] | None = None) -> None:
        super().__init__()
        self.manager = manager
        self.left_out = tuple(left_out)  # project servers not started, with why
        # Trusts a left-out project server (records it, starts it); a one-line problem or None.
        self.trust = trust
        self.selected = 0
        self._unsubscribe: Callable[[], None] | None = None

    def _statuses(self) -> tuple[ServerStatus, ...]:
        return self.manager.statuses() if self.manager is not None else ()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("MCP servers", classes="title")
            with VerticalScroll():
                yield Static(Hanging(servers_text(self._statuses(), self.selected, self.left_out)), id="mcp-servers")
            yield Static("", id="mcp-message")
            yield Static(Text.assemble(("↑/↓", "bold"), " choose   ", ("r", "bold"), " reconnect   ",
                                       ("l", "bold"), " log in   ",
                                       *((("t", "bold"), " trust a left-out server   ") if self.left_out else ()),
                                       ("Esc", "bold"), " close"), id="mcp-keys")

    def on_mount(self) -> None:
        if self.manager is not None:
            self._unsubscribe = self.manager.subscribe(lambda _status: self.refresh_servers())

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()

    def refresh_servers(self) -> None:
        statuses = self._statuses()
        self.selected = max(0, min(self.selected, len(statuses) + len(self.left_out) - 1))
        self.query_one("#mcp-servers", Static).update(Hanging(servers_text(statuses, self.selected, self.left_out)))

    def say(self, message: str) -> None:
        self.query_one("#mcp-message", Static).update(Text(message))  # names and errors: no markup

    def on_key(self, event: events.Key) -> None:
        event.stop()
        statuses = self._statuses()
        chosen = statuses[self.selected] if self.selected < len(statuses) else None
        left_out = self.left_out[self.selected - len(statuses)][0] if chosen is None and self.left_out else None
        match event.key:
            case "escape" | "q":
                self.dismiss(None)
            case "up" | "k":
                self.selected = max(0, self.selected - 1)
                self.refresh_servers()
            case "down" | "j":
                self.selected = min(len(statuses) + len(self.left_out) - 1, self.selected + 1)
                self.refresh_servers()
            case "t" if left_out is not None and self.trust is not None:
                problem = self.trust(left_out)
                if problem is not None:
                    self.say(problem)
                    return
                self.left_out = tuple(item for item in self.left_out if item[0] is not left_out)
                self.say(f"{left_out.name}: trusted, connecting (remembered until its entry changes)")
                self.refresh_servers()
            case "r" if chosen is not None and self.manager is not None:
                self.say(f"reconnecting {chosen.name}…")
                self.run_worker(self.manager.reconnect(chosen.name), exit_on_error=False)
            case "l" if chosen is not None and self.manager is not None:
                if chosen.config.transport == "stdio":
                    self.say(f"{chosen.name} runs on this machine: it needs no login")
                    return
                self.say(f"logging in to {chosen.name}…")
                self.run_worker(self._login(chosen.name), exit_on_error=False)

    async def _login(self, name: str) -> None:
        assert self.manager is not None

        async def show_url(url: str) -> None:
            self.say(f"open this address to log in to {name}: {url}")
            try:
                import webbrowser

                webbrowser.open(url)
            except Exception:  # no browser here: the address is on the screen
                pass

        try:
            status = await self.manager.login(name, show_url)
        except Exception as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            self.say(f"login to {name} failed: {reason}")
            return
        self.say(f"{name}: {_STATE_WORDS.get(status.state, status.state)}"
                 + (f" ({status.reason})" if status.reason else ""))
