"""Building a real Agent (ScriptedProvider, built-in tools, PermissionManager) for TUI tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loom_cli.tui.app import LoomApp
from loom_cli.tui.options import TuiOptions
from tests.doubles.gated_provider import GatedProvider


class Harness:
    """What a test needs: options to start the app, and the agents and providers it built."""

    def __init__(self, workspace: Path, data_dir: Path, script: Sequence[Any], mode: str = "default") -> None:
        self.workspace = workspace
        self.data_dir = data_dir
        self.script = script
        self.mode = mode
        self.agents: list[Any] = []
        self.providers: list[Any] = []
        self.messages: Sequence[Any] = ()
        self.sessions: Sequence[Any] = ()
        self.gated = False
        self.saved_rules: list[str] = []  # "allow always in this project" answers

    def factory(self, options: TuiOptions) -> Any:
        from builtin_tools import default_tools
        from loom_engine.agent import Agent
        from loom_engine.config import AgentConfig
        from loom_engine.parts import AgentParts
        from loom_engine.permissions.manager import PermissionManager
        from loom_engine.providers.scripted import ScriptedProvider
        from loom_engine.workspace import Workspace

        workspace = Workspace.at(options.workspace)
        permissions = PermissionManager(workspace, mode=options.permission_mode or self.mode,
                                        save_rules=self.saved_rules.extend)
        messages = self.messages if (options.resume_id or options.continue_session) else ()
        provider: Any = ScriptedProvider(list(self.script), chunk_size=16)
        if self.gated:
            provider = GatedProvider(provider)
        self.providers.append(provider)
        agent = Agent(AgentConfig(model=options.model or "claude-sonnet-4-5", provider="scripted",
                                         context_window=200_000),
                      AgentParts(provider=provider, tools=default_tools(), workspace=workspace,
                                 permissions=permissions),
                      messages=messages, system_prompt="You are a test assistant.")
        self.agents.append(agent)
        return agent

    def options(self, **changes: Any) -> TuiOptions:
        base = dict(workspace=self.workspace, agent_factory=self.factory, data_dir=self.data_dir,
                    permission_guard_s=0.0, session_lister=lambda _root: list(self.sessions),
                    history_loader=lambda _options: list(self.messages), manage_gc=False)
        base.update(changes)
        return TuiOptions(**base)

    def app(self, **changes: Any) -> LoomApp:
        return LoomApp(self.options(**changes))

    @property
    def agent(self) -> Any:
        return self.agents[-1]


async def wait_for(pilot: Any, condition: Any, timeout: float = 60.0) -> None:
    """Let the app run until ``condition()`` holds (a bound, not a timing assertion)."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {condition}")
        await pilot.pause(0.02)


async def wait_idle(pilot: Any, app: LoomApp) -> None:
    await wait_for(pilot, lambda: app.agent is not None and not app.busy and not app.queue)
    await pilot.pause()


def screen_text(app: LoomApp) -> str:
    """Every line currently painted on the active screen, as plain text."""
    from rich.console import Console

    console = Console(width=app.size.width, record=True, file=open("/dev/null", "w"), color_system=None)
    update = app.screen._compositor.render_update(full=True)
    console.print(update)  # type: ignore[arg-type]
    return console.export_text()
