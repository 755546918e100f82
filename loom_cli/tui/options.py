"""What the chat is started with (`TuiOptions`), and building and closing its agent.

The defaults import the engine's heavy modules inside the function bodies: they run in
a worker thread after the first frame, never when this module is imported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.permissions.modes import PermissionMode
from loom_engine.sandbox.config import SandboxMode
from loom_engine.workspace import find_workspace_root

if TYPE_CHECKING:
    from loom_cli.bootstrap import Built
    from loom_cli.chat_agent import ChatAgent
    from loom_cli.mcp_setup import McpPlan
    from loom_cli.memory_setup import SessionPromoter

# Builds the chat's agent: bootstrap's Built (the default), or the agent alone (tests).
AgentFactory = Callable[["TuiOptions"], "Built | ChatAgent"]
SessionLister = Callable[[Path], Sequence[Any]]
HistoryLoader = Callable[["TuiOptions"], Sequence[Any]]


@dataclass(frozen=True)
class TuiOptions:
    workspace: Path
    continue_session: bool = False
    resume_id: str | None = None
    fork_session: bool = False  # continue a copy of the resumed session (--fork-session)
    model: str | None = None
    provider: str | None = None
    permission_mode: PermissionMode | None = None
    sandbox: SandboxMode | None = None  # --sandbox (None: LOOM_SANDBOX, then the settings)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    # The user's answer to the trust screen about what the project's settings widen (None:
    # not asked, the trust records decide).
    trust_project: bool | None = None
    # Builds the agent (in a worker thread). Returns bootstrap's Built, or the agent
    # alone. None: loom_cli.bootstrap.
    agent_factory: AgentFactory | None = None
    # Lists earlier sessions of a workspace for /resume. None: the SessionStore
    # (commands.session.default_session_lister).
    session_lister: SessionLister | None = None
    # Reads the messages of the session being resumed, so the history shows before the
    # agent (and the provider SDKs) are ready. None: the SessionStore.
    history_loader: HistoryLoader | None = None
    # Where prompt history lives; None: loom_engine.paths.data_dir().
    data_dir: Path | None = None
    permission_guard_s: float = 1.0
    max_mounted_blocks: int = 150
    resume_window: int = 40  # transcript entries mounted when a session is resumed (about 10 turns)
    # Streamed text refreshes at most this often: 10 a second reads as smooth, and each
    # frame re-composes the scrolled screen, so more would cost CPU for nothing seen.
    max_fps: float = 10.0
    # Move the transcript's long-lived objects out of the cyclic GC's way between runs
    # (a full collection over a long session stalls the UI for a quarter second).
    manage_gc: bool = True


def data_dir_of(options: TuiOptions) -> Path:
    """Where the chat keeps its data (prompt history, the first-run marker)."""
    if options.data_dir is not None:
        return options.data_dir
    from loom_engine.paths import data_dir

    return data_dir()


def default_agent_factory(options: TuiOptions) -> Built:
    """Builds the agent the way `loom run` does (imports the provider SDKs)."""
    from loom_cli.bootstrap import RunOptions, build_agent
    from loom_cli.usage_limits import CHAT_POLICY

    run_options = RunOptions(cwd=options.workspace, provider=options.provider, model=options.model,
                             continue_session=options.continue_session, resume_id=options.resume_id,
                             fork_session=options.fork_session,
                             permission_mode=options.permission_mode, sandbox=options.sandbox,
                             allow=options.allow, deny=options.deny,
                             trust_project=options.trust_project, usage_limits=CHAT_POLICY)
    return build_agent(run_options, interactive=True)


def default_history_loader(options: TuiOptions) -> Sequence[Any]:
    from loom_engine.paths import sessions_dir
    from loom_engine.sessions.store import SessionStore

    store = SessionStore(sessions_dir())
    if options.resume_id:
        return store.load(options.resume_id).messages
    if options.continue_session:
        newest = store.newest(find_workspace_root(options.workspace))
        if newest is not None:
            return store.load(newest.id).messages
    return ()


def start_provider_import(options: TuiOptions) -> None:
    """Start importing the provider SDK the chat will most likely use, in a thread (the
    factory's ``prepare`` waits for it and builds the client there too). Only for the
    default factory: a test's or benchmark's agent needs no SDK."""
    if options.agent_factory is not None:
        return
    from loom_engine.providers.sdk_preload import likely_provider, start_sdk_import

    args = ("--provider", options.provider) if options.provider else ()
    start_sdk_import(likely_provider(args))


class AgentUnavailable(Exception):
    """The factory failed; the message is one line for the transcript."""


@dataclass(frozen=True)
class BuiltAgent:
    agent: ChatAgent  # its MCP servers are ``agent.mcp``
    warnings: tuple[str, ...] = ()
    # Which project MCP servers still wait for the user's answer (bootstrap's Built.mcp_plan).
    mcp_plan: McpPlan | None = None
    # Which setting chose the sandbox's mode (bootstrap's Built.sandbox_source), for /sandbox.
    sandbox_source: str = "default"
    # Proposes which facts of the session to remember (asked at /clear and on quitting);
    # None: [memory] promote is off.
    promoter: SessionPromoter | None = None


async def build_agent(options: TuiOptions) -> BuiltAgent:
    """Run the factory in a thread (it imports the provider SDKs) and unwrap what it gives."""
    factory = options.agent_factory or default_agent_factory
    try:
        built = await asyncio.to_thread(factory, options)
    except Exception as error:  # any setup failure is shown, not raised
        text = str(error).strip()
        raise AgentUnavailable(text.splitlines()[0] if text else type(error).__name__) from error
    from loom_cli.bootstrap import Built  # imported already when the default factory ran

    if isinstance(built, Built):
        return BuiltAgent(built.agent, tuple(built.warnings), built.mcp_plan, built.sandbox_source, built.promoter)
    return BuiltAgent(built)


async def close_agent(agent: ChatAgent | None) -> None:
    """Close the agent's session file, its sandbox (its private temp folder goes) and its
    provider connections."""
    if agent is None:
        return
    if agent.session is not None:
        agent.session.close()
        await asyncio.to_thread(index_ended_session, agent.session)
    if agent.sandbox is not None:
        agent.sandbox.close()
    await close_provider(agent)
    await close_mcp(agent)


def index_ended_session(session: object) -> None:
    """Take what a session store's session gained into the search index of its data
    folder (best effort: the next search catches up on anything missed)."""
    from loom_engine.index.session_index import SessionIndex
    from loom_engine.sessions.store import SessionWriter

    if not isinstance(session, SessionWriter):
        return  # an embedder's or a test's log: no file of the store to index
    try:
        SessionIndex.in_data_dir(session.path.parent.parent).index_session(session.path)
    except Exception:  # never in the way of closing
        pass


async def close_mcp(agent: ChatAgent | None) -> None:
    """Stop the MCP servers the agent's tools come from (their processes end with them)."""
    manager = agent.mcp if agent is not None else None
    if manager is not None:
        try:
            await manager.aclose()
        except Exception:  # quitting must not wait on a server that misbehaves
            pass


async def close_provider(agent: ChatAgent | None) -> None:
    if agent is not None:
        try:
            await agent.aclose()
        except Exception:  # a failed close must not block quitting or switching
            pass
