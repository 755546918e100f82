"""Slash commands: the table, parsing, what each command does and the text it prints.

A command works through the app's public surface (its agent, status and the few
actions that change its state: switch model, set mode, compact, replace the agent);
the app itself knows nothing of command names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_engine.mcp.names import is_mcp_name
from loom_engine.permissions.modes import MODES

from ..slash_commands import COMMANDS
from .confirm import Confirm
from .custom_commands import custom_command, custom_entries, not_ready
from .model_picker import ModelPicker, model_name_problem, models_for
from .options import default_session_lister
from .session_picker import SessionPicker
from .status_bar import StatusInfo, human_tokens

if TYPE_CHECKING:
    from .app import LoomApp

COMMAND_NAMES = frozenset(name for name, _ in COMMANDS)

# What each command accepts: (usage line, the most words it takes; None: free text).
# A command given more is refused with its usage and not run: "/clear ost" is a typo
# (or a burst of keys gone wrong), never a reason to wipe the conversation.
USAGE: dict[str, tuple[str, int | None]] = {
    "help": ("/help", 0),
    "clear": ("/clear", 0),
    "compact": ("/compact [focus]", None),
    "model": ("/model [name]", 1),
    "cost": ("/cost", 0),
    "skills": ("/skills", 0),
    "resume": ("/resume [id]", 1),
    "rewind": ("/rewind", 0),
    "mode": (f"/mode [{'|'.join(MODES)}]", 1),
    "exit": ("/exit", 0),
    "quit": ("/quit", 0),
    "mcp": ("/mcp", 0),
    "hooks": ("/hooks", 0),
    "agents": ("/agents", 0),
    "sandbox": ("/sandbox", 0),
}

KEYS_HELP = (
    ("Enter", "send (while a run streams, the message is queued)"),
    ("Shift+Enter / Ctrl+J", "newline"),
    ("Up / Down", "prompt history; Up on an empty prompt edits the last queued message"),
    ("Ctrl+R", "search the prompt history"),
    ("Ctrl+G", "edit the prompt in $VISUAL / $EDITOR"),
    ("Esc", "interrupt the running turn (queued messages come back to the prompt)"),
    ("Esc Esc", "on an empty prompt with no run going: /rewind"),
    ("Ctrl+C", "interrupt; clear the prompt; on an empty prompt press twice to quit; copies selected text"),
    ("Ctrl+D", "quit (during a run it asks first)"),
    ("Shift+Tab", "cycle the permission mode"),
    ("Ctrl+O", "expand / collapse tool output and long pastes (a click on a paste too)"),
    ("PgUp / PgDn", "scroll the transcript (the mouse wheel too)"),
    ("@path", "attach a workspace file's content (@path:10-40 a range; Tab completes)"),
    ("!command", "run a shell command yourself; its output joins the conversation"),
)


@dataclass(frozen=True)
class ParsedCommand:
    name: str
    arg: str
    text: str = field(default="", compare=False)  # as typed (an MCP prompt's name keeps its case)

    @property
    def known(self) -> bool:
        return self.name in COMMAND_NAMES


def parse_command(text: str) -> ParsedCommand | None:
    """A slash command, or None when the text is a prompt (``/path/like`` text is a prompt)."""
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    head, _, rest = stripped[1:].partition(" ")
    if "/" in head:
        return None
    return ParsedCommand(head.lower(), rest.strip(), stripped)


def usage_problem(command: ParsedCommand) -> str | None:
    """The usage line when ``command`` has arguments it does not take, else None."""
    usage = USAGE.get(command.name)
    if usage is None:
        return None
    line, most = usage
    if most is None or len(command.arg.split()) <= most:
        return None
    return f"usage: {line} · not run"


def exchanges(messages: Iterable[Any]) -> int:
    """How many prompts the user sent (tool results travel as user messages too)."""
    count = 0
    for message in messages:
        if getattr(message, "role", None) != "user":
            continue
        if any(getattr(part, "type", None) == "text" for part in getattr(message, "parts", ())):
            count += 1
    return count


def help_text(prompts: Sequence[tuple[str, str]] = (), custom: Sequence[tuple[str, str]] = ()) -> str:
    """The commands, the MCP servers' prompts (``prompts``: name and help), the custom
    commands and skills (``custom``) and the keys."""
    width = max(len(name) for name, _ in COMMANDS) + 2
    lines = ["Commands:"]
    lines += [f"  /{name:<{width}}{text}" for name, text in COMMANDS]
    if prompts:
        lines.append("MCP prompts (the server's text becomes your prompt):")
        lines += [f"  /{name}  {text}" for name, text in prompts]
    if custom:
        lines.append("Your commands and skills (their text becomes your prompt):")
        lines += [f"  /{name}  {text}" for name, text in custom]
    lines.append("Keys:")
    key_width = max(len(k) for k, _ in KEYS_HELP) + 2
    lines += [f"  {key:<{key_width}}{text}" for key, text in KEYS_HELP]
    return "\n".join(lines)


def cost_text(info: StatusInfo, metrics: Any) -> str:
    usage = info.usage
    lines = [
        f"Session cost: ${info.cost_usd:.4f}",
        f"  input {human_tokens(usage.input_tokens)}"
        f" · cache read {human_tokens(usage.cache_read_input_tokens)}"
        f" · cache write {human_tokens(usage.cache_creation_input_tokens)}"
        f" · output {human_tokens(usage.output_tokens)}",
        f"  prompt-cache hit rate {info.cache_hit_rate * 100:.0f}%",
    ]
    if metrics is not None:
        calls = getattr(metrics, "llm_calls", None)
        tools = getattr(metrics, "tool_calls", None)
        if calls is not None:
            lines.append(f"  LLM calls {calls} · tool calls {tools if tools is not None else 0}")
    if info.context_window:
        lines.append(f"  context {human_tokens(info.context_used)} of {human_tokens(info.context_window)}"
                     f" ({info.context_percent:.0f}%)")
    return "\n".join(lines)


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def _skills_of(catalog: Any) -> list[Any]:
    if catalog is None:
        return []
    for name in ("skills", "all", "list", "entries"):
        value = getattr(catalog, name, None)
        if callable(value):
            value = value()
        if isinstance(value, Mapping):
            return list(value.values())
        if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
            return list(value)
    if isinstance(catalog, Iterable):
        return list(catalog)
    return []


def skills_text(catalog: Any) -> str:
    skills = _skills_of(catalog)
    if not skills:
        return "No skills found (Loom's skills/, your config dir's skills/, .loom/skills/)."
    lines = [f"Skills ({len(skills)}):"]
    for skill in sorted(skills, key=lambda s: str(_field(s, "name") or "")):
        name = _field(skill, "name") or "?"
        description = str(_field(skill, "description") or "").strip().splitlines()
        source = _field(skill, "source")
        line = f"  {name}  {description[0] if description else ''}"
        if source:
            line += f"  [{source}]"
        lines.append(line)
    return "\n".join(lines)


def permissions_text(manager: Any) -> str:
    if manager is None:
        return "No permission manager: every tool call is allowed."
    mode = _field(manager, "mode")
    lines = [f"Permission mode: {mode}"]
    describe = getattr(manager, "describe", None)
    if callable(describe):
        described = describe()
        if isinstance(described, str):
            return "\n".join([lines[0], described]) if described.strip() else lines[0]
        if isinstance(described, Iterable):
            lines += [f"  {line}" for line in described]
            return "\n".join(lines)
    effective = getattr(manager, "effective_rules", None)
    if callable(effective):
        rows = list(effective())
        order = {"deny": 0, "ask": 1, "allow": 2}
        rows.sort(key=lambda row: order.get(str(row[0]), 3))
        lines += [f"  {behavior:<5} {rule}   ({source})" for behavior, rule, source in rows]
        if not rows:
            lines.append("  no rules: the mode decides")
        lines.append("Order: deny beats ask beats allow.")
        return "\n".join(lines)
    layers = _field(manager, "layers") or ()
    rules = 0
    for layer in layers:
        source = _field(layer, "source") or "rules"
        for kind in ("deny", "ask", "allow"):
            values = _field(layer, kind) or ()
            for rule in values:
                lines.append(f"  {kind:<5} {rule}   ({source})")
                rules += 1
    session_rules = _field(manager, "session_rules", "session_allow") or ()
    for rule in session_rules:
        lines.append(f"  allow {rule}   (this session)")
        rules += 1
    if rules == 0:
        lines.append("  no rules: the mode decides (reads in the workspace allowed, edits and bash ask)")
    lines.append("Order: deny beats ask beats allow.")
    return "\n".join(lines)


# --- carrying commands out ------------------------------------------------------------


async def run_command(app: LoomApp, command: ParsedCommand) -> None:
    name, arg = command.name, command.arg
    problem = usage_problem(command)
    if problem is not None:
        app.output(problem)
        return
    if name in ("exit", "quit"):
        app.action_quit_now()
        return
    if name == "help":
        from .mcp_chat import prompt_commands

        app.output(help_text(prompt_commands(app.agent), custom_entries(app.agent, Path(app.workspace_root))))
        return
    if name not in COMMAND_NAMES and name not in USAGE and not is_mcp_name(name):
        custom_command(app, command)  # a custom command waits in the queue for the agent, as a prompt does
        return
    if name == "hooks":  # read from the files: it needs no agent
        hooks_command(app)
        return
    if name == "agents":  # the same: read from the agent files now, as `loom agents` does
        agents_command(app)
        return
    agent = app.agent
    if agent is None:
        app.output(not_ready(app))
        return
    match name:
        case "cost":
            # Stand-in agents in tests have no metrics.
            app.output(cost_text(app.status, getattr(agent, "metrics", None)))
        case "model":
            model_command(app, arg)
        case "mode":
            if not arg:
                app.output(f"permission mode: {app.mode}  (modes: {', '.join(MODES)})")
            elif arg not in MODES:
                app.output(f"unknown mode {arg!r}; choose one of {', '.join(MODES)}")
            else:
                if arg == "bypass":
                    app.bypass_allowed = True  # asked for by name: Shift+Tab may come back to it
                if app.set_mode(arg):
                    app.output(f"permission mode: {app.mode}")
        case "permissions":
            manager = agent.permissions
            if manager is not None and callable(getattr(manager, "remove_rule", None)):
                from .permissions_screen import PermissionsScreen

                app.push_screen(PermissionsScreen(manager))  # the rules by layer; add and remove
            else:
                app.output(permissions_text(manager))
        case "skills":
            app.output(skills_text(getattr(agent, "skills", None)))
        case "compact":
            if app.busy:
                app.output("wait for the current run to end before compacting")
                return
            focus = arg or None
            app.output("compacting the conversation…" + (f" (focus: {focus})" if focus else ""))
            app.compact(focus)
        case "clear":
            clear(app)
        case "resume":
            await resume(app, arg)
        case "mcp":
            mcp_command(app)
        case "sandbox":
            app.output(sandbox_text(agent, app.lifecycle.sandbox_source))
        case "rewind":
            rewind_command(app)
        case _ if is_mcp_name(name):
            prompt_command(app, command)


def sandbox_text(agent: Any, mode_source: str) -> str:
    """/sandbox: what `loom sandbox` prints, for this session's sandbox."""
    from ..sandbox_report import report_lines
    from ..sandbox_setup import facts_of

    sandbox = getattr(agent, "sandbox", None)
    if sandbox is None:
        return "sandbox: none in this session (commands run unconfined and ask first)"
    return "\n".join(report_lines(facts_of(sandbox, mode_source)))


def rewind_command(app: LoomApp) -> None:
    """/rewind (and Esc Esc): the session's prompts, then what to restore and a preview."""
    from .rewind_flow import open_rewind

    app.run_worker(open_rewind(app), group="rewind", exclusive=True, exit_on_error=False)


def mcp_command(app: LoomApp) -> None:
    """/mcp: each server's state and what it offers, live; reconnect and log in there."""
    from .mcp_chat import manager_of
    from .mcp_screens import McpScreen

    app.push_screen(McpScreen(manager_of(app.agent)))


def hooks_command(app: LoomApp) -> None:
    """/hooks: every hook with its file and trust state, and the files' problems."""
    from .hooks_screen import HooksScreen, current_plan

    plan = current_plan(app.workspace_root)
    if plan is None:
        app.output("the hooks cannot be listed: a settings file is not valid (see the error at start)")
        return
    app.push_screen(HooksScreen(plan))


def agents_command(app: LoomApp) -> None:
    """/agents: what `loom agents` prints, in the transcript."""
    from loom_engine.paths import config_dir

    from ..agents_command import agents_lines

    app.output("\n".join(agents_lines(app.workspace_root, config_dir())))


def prompt_command(app: LoomApp, command: ParsedCommand) -> None:
    """``/mcp__server__prompt args``: checked here, then sent like a prompt (the user's turn
    asks the server for the prompt's text, see user_turns)."""
    from loom_engine.mcp.prompts import parse_prompt_command

    from .mcp_chat import manager_of
    from .paste import Draft

    manager = manager_of(app.agent)
    try:
        parsed = parse_prompt_command(command.text, manager.prompts()) if manager is not None else None
    except ValueError as error:
        app.output(f"{error} · not run")
        return
    if parsed is None:
        app.output(f"unknown command /{command.name} · /help lists the commands and the MCP prompts")
        return
    app.prompt_queue.add(Draft(command.text))
    app.send_queued()


def model_command(app: LoomApp, name: str) -> None:
    """/model alone opens the picker; /model NAME switches, warning when NAME is not known."""
    if app.busy:
        app.output(f"model: {app.model} · wait for the current run to end (or press Esc) before switching")
        return
    if not name:
        provider = str(getattr(getattr(app.agent, "config", None), "provider", "") or "")

        def picked(chosen: str | None) -> None:
            if chosen == app.model:
                app.output(f"model: {app.model} (unchanged)")
            elif chosen and not app.busy:
                switch_model(app, chosen)

        app.push_screen(ModelPicker(models_for(provider, app.model), app.model), callback=picked)
        return
    problem = model_name_problem(name)
    if problem is not None:
        app.output(f"{problem}; the model stays {app.model}")
        return
    switch_model(app, name)


def switch_model(app: LoomApp, name: str) -> None:
    from loom_engine.providers.models import lookup

    app.switch_model(name)
    app.output(f"model switched to {app.model}")
    info = lookup(name)
    provider = str(getattr(getattr(app.agent, "config", None), "provider", "") or "")
    if not info.known:
        app.transcript.add_notice(
            f"⚠ {name} is not a model Loom knows (no price or context size); if the provider does not"
            " have it, the next request says so", "warning")
    elif provider in ("anthropic", "openai") and info.provider != provider:
        app.transcript.add_notice(
            f"⚠ {name} is an {info.provider} model and this session talks to {provider};"
            " the next request will likely fail", "warning")


def clear(app: LoomApp) -> None:
    """A new session; a conversation of more than one exchange is asked about first."""
    count = exchanges(getattr(app.agent, "messages", None) or ())

    def confirmed(yes: bool | None) -> None:
        if yes:
            app.run_worker(new_session(app), group="agent", exit_on_error=False)
        else:
            app.output("/clear cancelled: the conversation is kept")

    if count > 1:
        app.push_screen(Confirm(f"Clear this conversation ({count} exchanges) and start a new session?",
                                "The old session stays saved: /resume reopens it."), callback=confirmed)
        return
    app.run_worker(new_session(app), group="agent", exit_on_error=False)


async def new_session(app: LoomApp) -> None:
    if app.busy:
        app.interrupt()
    had_messages = bool(getattr(app.agent, "messages", None))
    await app.replace_agent(replace(app.options, continue_session=False, resume_id=None), "new session started")
    if had_messages:
        app.transcript.add_notice("the previous session can be reopened with /resume", "info")


async def resume(app: LoomApp, session_id: str) -> None:
    """/resume ID switches to that session; /resume alone lets the user pick one."""
    if app.busy:
        app.output("wait for the current run to end before resuming another session")
        return
    if session_id:
        await app.replace_agent(replace(app.options, resume_id=session_id, continue_session=False), "")
        return
    lister = app.options.session_lister or default_session_lister
    workspace = getattr(app.agent, "workspace", None)  # stand-in agents have none
    root = getattr(workspace, "root", app.options.workspace)
    try:
        sessions = await asyncio.to_thread(lister, Path(root))
    except Exception as error:
        app.output(f"cannot list sessions: {error}")
        return
    current = getattr(app.agent, "session_id", None)
    sessions = [s for s in sessions if getattr(s, "id", None) != current]
    if not sessions:
        app.output("no earlier sessions in this workspace")
        return

    def picked(chosen: str | None) -> None:
        if chosen:
            app.run_worker(app.replace_agent(replace(app.options, resume_id=chosen, continue_session=False), ""),
                           group="agent", exit_on_error=False)

    app.push_screen(SessionPicker(sessions), callback=picked)
