"""Builds an Agent from settings and flags; shared by `loom run` and the TUI."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.paths import config_dir, data_dir, protected_paths, sessions_dir, user_config_file
from loom_engine.permissions.modes import PermissionMode
from loom_engine.providers.endpoints import API_KEY_VARIABLES
from loom_engine.providers.names import DEFAULT_MODELS
from loom_engine.sandbox.config import SandboxMode
from loom_engine.usage_wait import UsageLimitPolicy, UsageLimitWaiter
from loom_engine.workspace import Workspace, find_workspace_root

from .project_trust import ProjectChange, ignored_line
from .sandbox_report import start_line
from .sandbox_settings import read_denials, refused_line
from .sandbox_setup import open_session_sandbox
from .settings import (
    BASE_URL_VARIABLES,
    DEFAULT_SOURCE,
    ConfigError,
    LoadedSettings,
    Settings,
    SnapshotSettings,
    choose_provider,
    load_settings,
)
from .window_setup import server_windows
from .workspace_records import SAVED_RULES_SOURCE, WorkspaceRecords

if TYPE_CHECKING:
    from loom_engine.agent import Agent
    from loom_engine.mcp.manager import McpManager
    from loom_engine.mcp.tools import McpToolset
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.redact import Redactor
    from loom_engine.sessions.store import SessionWriter
    from loom_engine.snapshots.restore import Snapshots

    from .hook_setup import HookPlan
    from .mcp_setup import McpPlan
    from .memory_setup import ProjectMemory
    from .settings import SettingsFile


# Why an edit of Loom's own config or data folder asks (in every mode, bypass too).
OWN_FILES_SOURCE = "Loom's own files"
# How the rules that guard project hook folders are named in a permission question.
HOOK_FOLDERS_SOURCE = "project hook folders"


class UsageError(Exception):
    """A bad flag value: exit code 2."""


@dataclass(frozen=True)
class RunOptions:
    cwd: Path = field(default_factory=Path.cwd)
    provider: str | None = None
    model: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    continue_session: bool = False
    resume_id: str | None = None
    # Continue a copy of the resumed session in a new one (the original may be in use).
    fork_session: bool = False
    permission_mode: PermissionMode | None = None
    sandbox: SandboxMode | None = None  # --sandbox: beats LOOM_SANDBOX and every settings file
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    add_dirs: tuple[Path, ...] = ()
    script: Path | None = None  # for the scripted provider
    # What the project's settings files would widen: True applies it (--trust-project, or
    # the user said yes), False leaves it out (the user said no), None asks the trust records.
    trust_project: bool | None = None
    # MCP: more server files (--mcp-config), and the project's .mcp.json servers used
    # without the user's recorded approval (--trust-project-mcp).
    mcp_config: tuple[Path, ...] = ()
    trust_project_mcp: bool = False
    # Run the project's hooks that the user has not trusted (--trust-project-hooks, one run).
    trust_project_hooks: bool = False
    # Whether a usage limit is waited for (`loom run --wait-for-reset`, the chat); None:
    # the run stops at one.
    usage_limits: UsageLimitPolicy | None = None
    # The waiter itself, when it is shared beyond this agent (`loom batch`'s workers wait
    # together); None: one of its own, with ``usage_limits``.
    usage_waiter: UsageLimitWaiter | None = None
    # The folder whose records (trusted settings, hooks and servers, saved rules) this
    # workspace uses: a batch task's worktree uses its repository's. None: its own.
    records_of: Path | None = None
    # Rewind's snapshots of the workspace, as the settings say; False: none (a batch task's
    # worktree is thrown away and its diff is the record; a shadow copy per task would pile up).
    snapshots: bool = True


@dataclass
class Built:
    agent: Agent
    session: SessionWriter  # the agent's session file (``agent.session``), closed at exit
    settings: Settings
    workspace: Workspace
    resumed: bool
    warnings: list[str]
    # What the project's settings would have widened, left out: the workspace is not trusted.
    ignored: tuple[ProjectChange, ...] = ()
    # The MCP servers (None: none configured, and ``mcp`` is never imported). The caller
    # starts it on its event loop (``mcp.start()``) and closes it (``await mcp.aclose()``);
    # the agent takes up their tools at turn boundaries through ``agent.tool_source``.
    mcp: McpManager | None = None
    # Which servers were used, left for the user to approve, or refused, and config problems.
    mcp_plan: McpPlan | None = None
    # Every hook read, which run, which were left out (project hooks not trusted), and problems.
    hook_plan: HookPlan | None = None
    # The workspace snapshots rewind restores from (None: turned off, or no git).
    checkpoints: Snapshots | None = None
    # Which setting chose the sandbox's mode ("default", "--sandbox", "LOOM_SANDBOX", a file);
    # the sandbox itself is the agent's (``agent.sandbox``).
    sandbox_source: str = DEFAULT_SOURCE


def build_agent(options: RunOptions, *, interactive: bool, answers_permissions: bool | None = None) -> Built:
    """``interactive``: the chat (its warnings); ``answers_permissions``: whether a
    permission question reaches someone who answers it (default: ``interactive``; `loom
    acp` is not the chat, but its client answers)."""
    from builtin_tools import default_tools
    from builtin_tools.task import with_agents
    from loom_engine.agent import Agent
    from loom_engine.config import AgentConfig
    from loom_engine.parts import AgentParts
    from loom_engine.permissions.layers import RuleLayer, protected_layer
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.permissions.tool_facts import ToolFacts
    from loom_engine.providers.factory import create_provider
    from loom_engine.sessions.store import SessionError, SessionStore

    root = find_workspace_root(options.cwd)
    for extra in options.add_dirs:
        if not extra.is_dir():
            raise UsageError(f"--add-dir {extra}: not a directory")
    privacy_problems = _make_private()
    records = WorkspaceRecords(data_dir(), same_as=(root, options.records_of) if options.records_of else None)
    from .claude_folder import find_claude_home
    from .claude_home import apply_claude_env

    claude_home = find_claude_home(user_config_file())
    # Claude Code's user env first: it may name the endpoint or model the settings read.
    privacy_problems += apply_claude_env(claude_home, os.environ)
    layered = load_settings(root, user_config_file(), trusted=options.trust_project,
                            trusted_hash=records.trusted_hash(root), sandbox_mode=options.sandbox)
    settings = layered.settings
    project_dirs = [folder for folder in layered.add_dirs if folder.is_dir()]
    workspace = Workspace.at(root, (*options.add_dirs, *project_dirs))
    agents = _agents(workspace, layered, claude_home)
    tools = with_agents(default_tools(), agents)
    from .memory_setup import with_recall_by_meaning, without_memory_tools

    tools = with_recall_by_meaning(tools, settings.memory) if settings.memory.enabled else without_memory_tools(tools)
    from builtin_tools.stale_files import remove_stale_files_in_background

    remove_stale_files_in_background(workspace.root)  # what a killed Loom left behind
    provider_name = choose_provider(settings, options.provider)
    model = options.model or settings.model or DEFAULT_MODELS.get(provider_name, "")
    base_url = None  # the provider reads its environment variable itself (and names it in errors)
    if provider_name in BASE_URL_VARIABLES and \
            layered.sources.get(f"{provider_name}.base_url") != BASE_URL_VARIABLES[provider_name]:
        base_url = getattr(settings, provider_name).base_url
    script = options.script or (Path(os.environ["LOOM_SCRIPT"]) if os.environ.get("LOOM_SCRIPT") else None)
    from loom_engine.providers.base import StreamTimeouts

    timeouts = StreamTimeouts(settings.stream_first_byte_timeout, settings.stream_idle_timeout)
    provider = create_provider(provider_name, base_url=base_url, script=script, stream_timeouts=timeouts,
                               wire_api=settings.openai.wire_api, reasoning_effort=settings.openai.reasoning_effort)

    hook_plan = _hooks(options, workspace, records, layered.files)
    try:
        claude_folder = (claude_home,) if claude_home is not None else ()
        layers = [protected_layer(OWN_FILES_SOURCE, protected_paths(claude_folder)),
                  # What a project hook's trust covers: changed by the model, the hook would run its code.
                  protected_layer(HOOK_FOLDERS_SOURCE, hook_plan.protected_paths())]
        layers += [RuleLayer(r.source, r.allow, r.deny, r.ask) for r in layered.rules]
        saved = records.saved_rules(workspace.root)
        if saved:
            layers.append(RuleLayer(SAVED_RULES_SOURCE, allow=saved))
        if options.allow or options.deny:
            layers.append(RuleLayer(source="command line", allow=tuple(options.allow), deny=tuple(options.deny)))
        permissions = PermissionManager(workspace, mode=options.permission_mode or settings.permission_mode,
                                        layers=layers, tool_facts=ToolFacts.of(tools),
                                        save_rules=lambda rules: records.save_rules(workspace.root, rules),
                                        forget_rules=lambda rules: records.forget_rules(workspace.root, rules))
    except ValueError as error:
        if options.allow or options.deny:
            raise UsageError(str(error)) from None
        raise ConfigError(str(error)) from None

    store = SessionStore(sessions_dir())
    # One Redactor for everything that leaves the process, the session file included:
    # it knows the exact keys Loom holds as well as every known secret shape.
    redactor = _held_secrets(settings)
    session_redactor = redactor if settings.redact_secrets else None
    messages: tuple = ()
    turn_state = None
    resumed = False
    skipped: list[str] = []
    if options.fork_session and not (options.resume_id or options.continue_session):
        raise UsageError("--fork-session needs --continue or --resume")
    if options.resume_id or options.continue_session:
        if options.resume_id:
            try:
                loaded = store.load(options.resume_id)
            except SessionError as error:
                raise ConfigError(f"cannot resume: {error}") from None
        else:
            latest, skipped = store.latest(workspace.root)
            if latest is None:
                why = f" ({'; '.join(skipped)})" if skipped else ""
                raise ConfigError(f"no earlier session in {workspace.root} to continue{why}")
            loaded = latest
        if not options.model and loaded.info.model and loaded.info.provider == provider_name:
            model = loaded.info.model  # the session's model (its last /model) unless --model says another
        if options.fork_session:
            session = store.fork(loaded, workspace.root, provider=provider_name, model=model,
                                 redactor=session_redactor)
        else:
            try:
                session, loaded = store.resume(loaded, redactor=session_redactor)
            except SessionError as error:  # SessionLocked: another loom is appending to it
                raise ConfigError(str(error)) from None
        messages, turn_state, resumed = loaded.messages, loaded.turn_state, True
    else:
        session = store.create(workspace.root, provider=provider_name, model=model,
                               redactor=session_redactor)

    from .memory_setup import project_memory

    memory = project_memory(workspace.root, settings.memory, redactor)
    skills, context, warnings = _context(workspace, claude_home, options.cwd, memory)
    from .slash_commands import discover_commands
    from .tui.commands.registry import BUILTIN_NAMES

    # Custom commands are read again when run; here, what is wrong with them is said once.
    warnings = (privacy_problems + skipped + list(layered.problems)
                + [f"{folder}: additional directory from the project settings is not a directory: left out"
                   for folder in layered.add_dirs if folder not in project_dirs]
                + warnings + [f"agent file {problem.line(workspace.root)}" for problem in agents.problems]
                + list(discover_commands(workspace.root, BUILTIN_NAMES).warnings))
    if layered.ignored and interactive:
        warnings.insert(0, "project settings not applied (workspace not trusted): " + ignored_line(layered.ignored))
    config = AgentConfig(model=model, provider=provider_name,
                         max_turns=options.max_turns or settings.max_turns, max_tokens=settings.max_tokens,
                         max_budget_usd=options.max_budget_usd, compact_threshold=settings.compact_threshold,
                         context_window=settings.context_window, thinking_budget=settings.thinking_budget,
                         redact_secrets=settings.redact_secrets, redactor=redactor,
                         interactive=interactive if answers_permissions is None else answers_permissions)
    mcp_plan, manager, toolset = _mcp(options, workspace, records, settings, model, session, permissions,
                                      claude_home)
    warnings += list(mcp_plan.notes)
    # A Claude Code file that cannot be read is named once, here (the settings' own line goes).
    warnings = [w for w in warnings if w not in hook_plan.problems]
    warnings += [f"hooks: {problem}" for problem in hook_plan.problems]
    if hook_plan.untrusted and interactive:
        count = len(hook_plan.untrusted)
        warnings.append(f"{count} project hook{'' if count == 1 else 's'} not trusted: left off for this session "
                        "(see /hooks; asked again at the next start)")
    if mcp_plan.pending and interactive:
        names = ", ".join(server.name for server in mcp_plan.pending)
        warnings.append(f"project MCP server{'' if len(mcp_plan.pending) == 1 else 's'} {names} not trusted: "
                        "left off for this session (see /mcp; asked again at the next start)")
    checkpoints = make_checkpointer(workspace.root, settings.snapshots) if options.snapshots else None
    denials = read_denials((text for behavior, text, _ in permissions.effective_rules() if behavior == "deny"),
                           workspace.root, home=Path.home())
    sandbox = open_session_sandbox(settings.sandbox, workspace, hook_plan, denials=denials,
                                   read_only=(claude_home,) if claude_home is not None else ())
    said = start_line(sandbox.status)  # why commands are not confined, and the fix
    warnings += [*([refused_line(layered.refused)] if layered.refused else []), *([said] if said else [])]
    make_provider = _provider_maker(provider_name, provider, layered.sources, settings, timeouts)
    from .telemetry_setup import telemetry_observer

    observer = telemetry_observer(session.id, redactor, warnings)
    parts = AgentParts(provider=provider, tools=tools, workspace=workspace, tool_source=toolset,
                       permissions=permissions, skills=skills, make_provider=make_provider,
                       checkpoints=checkpoints, hooks=hook_plan.use, sandbox=sandbox,
                       server_windows=server_windows(provider_name, base_url, model, settings.context_window),
                       usage_limits=options.usage_waiter or UsageLimitWaiter(options.usage_limits),
                       observer=observer,
                       memory=memory.folder if memory is not None else None)
    agent = Agent(config, parts, session=session, messages=messages, turn_state=turn_state, context=context)
    warnings += context.warnings  # the instruction files are read as the agent builds its prompt
    _prepare(provider)
    return Built(agent=agent, session=session, settings=settings, workspace=workspace, resumed=resumed,
                 warnings=warnings, ignored=layered.ignored, mcp=manager, mcp_plan=mcp_plan, hook_plan=hook_plan,
                 checkpoints=checkpoints, sandbox_source=layered.sources.get("sandbox.mode", DEFAULT_SOURCE))


def _make_private() -> list[str]:
    """Loom's folders 0700 and what is in them the user's alone (sessions hold every file the
    model read); what could not be changed, one line each, to warn."""
    from loom_engine.private_files import private_folder, secure_folders

    try:
        private_folder(data_dir())
    except OSError as error:
        raise ConfigError(f"cannot create Loom's data folder {data_dir()}: {error.strerror or error}") from None
    return secure_folders(data_dir(), (config_dir(), data_dir()))


def make_checkpointer(root: Path, chosen: SnapshotSettings) -> Snapshots | None:
    """The workspace's snapshots per the ``[snapshots]`` settings (None: turned off);
    without git, pre-images of the files Loom's edit tools change."""
    from loom_engine.snapshots.checkpoints import Checkpointer
    from loom_engine.snapshots.model import SnapshotCaps
    from loom_engine.snapshots.preimages import PreimageCheckpointer
    from loom_engine.snapshots.shadow import GitUnavailable

    if not chosen.enabled:
        return None
    caps = SnapshotCaps(max_file_bytes=int(chosen.max_file_mb * 1024 * 1024),
                        max_total_bytes=int(chosen.max_total_mb * 1024 * 1024), keep_prompts=chosen.keep_prompts,
                        max_files=chosen.max_files)
    try:
        return Checkpointer(root, data_dir() / "snapshots", caps=caps, exclude=(data_dir(),))
    except GitUnavailable:
        return PreimageCheckpointer(root, data_dir() / "snapshots", caps=caps)


def _hooks(options: RunOptions, workspace: Workspace, records: WorkspaceRecords,
           files: Sequence[SettingsFile]) -> HookPlan:
    """The hooks of every settings file; a project hook only when trusted (or the flag)."""
    from .hook_setup import plan_hooks

    return plan_hooks(workspace.root, files, records.trusted_hooks(workspace.root),
                      trust_project=options.trust_project_hooks)


def _agents(workspace: Workspace, layered: LoadedSettings, claude_home: Path | None) -> Any:
    """The custom sub-agents (~/.claude/agents, user config dir, .claude/agents, .loom/agents); a project
    agent's model only when the user trusted it with the rest of the project's settings."""
    from loom_engine.paths import config_dir
    from loom_engine.subagents.definitions import AgentCatalog

    from .project_trust import trusted_agent_models

    catalog = AgentCatalog.discover(workspace.root, user_config_dir=config_dir(), claude_home=claude_home)
    trusted = trusted_agent_models(workspace.root, layered.widening) if layered.trusted else frozenset()
    return catalog.with_trusted_models(trusted)


def _provider_maker(name: str, provider: Any, sources: Any, settings: Settings, timeouts: Any) -> Any:
    """Builds, once each, the provider a sub-agent's model needs when it is another
    vendor's (an agent file's ``model: gpt-4o`` under an Anthropic session)."""
    from loom_engine.providers.factory import create_provider

    built: dict[str, Any] = {name: provider}

    def make(wanted: str) -> Any:
        if wanted not in built:
            base_url = None
            if wanted in BASE_URL_VARIABLES and sources.get(f"{wanted}.base_url") != BASE_URL_VARIABLES[wanted]:
                base_url = getattr(settings, wanted).base_url
            built[wanted] = create_provider(wanted, base_url=base_url, stream_timeouts=timeouts,
                                            wire_api=settings.openai.wire_api,
                                            reasoning_effort=settings.openai.reasoning_effort)
        return built[wanted]

    return make


def _mcp(options: RunOptions, workspace: Workspace, records: WorkspaceRecords, settings: Settings,
         model: str, session: SessionWriter, permissions: PermissionManager, claude_home: Path | None
         ) -> tuple[McpPlan, McpManager | None, McpToolset | None]:
    """The MCP servers to connect and the agent's tool source for them (None: none
    configured); ``claude_home``: Claude Code's user folder when it is read (its
    ``~/.claude.json`` servers are the user's own)."""
    from loom_engine.paths import claude_config_file, config_dir

    from .mcp_setup import make_manager, max_output_tokens, plan_servers, startup_wait_s

    plan = plan_servers(workspace.root, config_dir(), records, extra_files=options.mcp_config,
                        trust_project=options.trust_project_mcp, claude_file=claude_config_file(claude_home))
    manager = make_manager(plan)
    if manager is None:
        return plan, None, None
    from loom_engine.mcp.tools import McpToolset
    from loom_engine.permissions.layers import RuleLayer
    from loom_engine.providers.models import lookup

    # Big outputs are saved next to the session file; the model may read them back.
    spill: Path | None = Path(session.path).with_suffix("") / "mcp-output" if session.path else None
    if spill is not None:
        try:
            permissions.rules.add(RuleLayer("MCP output files", allow=(f"read({spill}/**)",)))
        except ValueError:  # a data dir whose path a rule cannot spell: reading it asks
            pass
    toolset = McpToolset(manager, context_window=settings.context_window or lookup(model).context_window,
                         max_output_tokens=max_output_tokens(), spill_dir=lambda: spill,
                         startup_wait_s=startup_wait_s())
    return plan, manager, toolset


def _prepare(provider: object) -> None:
    """Import the provider's SDK and build its client here, last: the caller is a worker
    thread (the chat) or start-up before any event loop (`loom run`), and an import begun
    early in another thread (:mod:`loom_engine.providers.sdk_preload`) has had everything
    above to overlap with. A failure is left to the first request, which reports it."""
    from loom_engine.providers.base import PreparableProvider

    if isinstance(provider, PreparableProvider):
        try:
            provider.prepare()
        except Exception:  # reported by the first request, in its words
            pass


# Where Loom's own keys come from; a command can print them (`printenv`), so redaction
# must know their exact values, whatever their shape.
_KEY_VARIABLES = tuple(API_KEY_VARIABLES.values())
_URL_VARIABLES = tuple(BASE_URL_VARIABLES.values())


def _held_secrets(settings: Settings) -> Redactor:
    """A Redactor for the API keys (and base-URL passwords) this Loom holds."""
    from urllib.parse import urlsplit

    from loom_engine.redact import Redactor

    values = [os.environ.get(name) for name in _KEY_VARIABLES]
    urls = [os.environ.get(name) for name in _URL_VARIABLES]
    urls += [settings.anthropic.base_url, settings.openai.base_url]
    for url in urls:
        try:
            values.append(urlsplit(url).password if url else None)
        except ValueError:  # a malformed URL fails later, where it is used
            continue
    return Redactor.for_values(values)


def _context(workspace: Workspace, claude_home: Path | None, cwd: Path,
             memory: ProjectMemory | None = None) -> tuple[Any, Any, list[str]]:
    """The skills catalog and the system-prompt assembler (with the memory index, read now)."""
    from loom_engine.context.assembler import ContextAssembler
    from loom_engine.paths import builtin_skills_dir, config_dir
    from loom_engine.skills.catalog import SkillCatalog

    skills = SkillCatalog.discover(workspace.root, user_config_dir=config_dir(), builtin_dir=builtin_skills_dir(),
                                   claude_home=claude_home)
    extra = (memory.prompt_component(),) if memory is not None else ()
    context = ContextAssembler(workspace, skills=skills, claude_home=claude_home, cwd=cwd, extra_components=extra)
    return skills, context, list(skills.warnings)
