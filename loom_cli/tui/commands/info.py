"""Commands that show what the session has: /cost, /skills, /sandbox, /hooks, /agents."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...slash_commands import ParsedCommand, SlashCommand

if TYPE_CHECKING:
    from loom_cli.hook_setup import HookPlan
    from loom_engine.metrics import RunMetrics
    from loom_engine.sandbox import Sandbox
    from loom_engine.skills.catalog import SkillCatalog

    from ..chat_host import ChatHost
    from ..status_bar import StatusInfo


def cost_text(info: StatusInfo, metrics: RunMetrics, window_source: str = "") -> str:
    from ..status_bar import human_tokens

    usage = info.usage
    lines = [
        f"Session cost: ${info.cost_usd:.4f}",
        f"  input {human_tokens(usage.input_tokens)}"
        f" · cache read {human_tokens(usage.cache_read_input_tokens)}"
        f" · cache write {human_tokens(usage.cache_creation_input_tokens)}"
        f" · output {human_tokens(usage.output_tokens)}",
        f"  prompt-cache hit rate {info.cache_hit_rate * 100:.0f}%",
        f"  LLM calls {metrics.llm_calls} · tool calls {metrics.tool_calls}",
    ]
    if info.context_window:
        lines.append(f"  context {human_tokens(info.context_used)} of {human_tokens(info.context_window)}"
                     f" ({info.context_percent:.0f}%)")
    if window_source:
        lines.append(f"  window: {window_source}")
    return "\n".join(lines)


def skills_text(catalog: SkillCatalog | None) -> str:
    skills = list(catalog) if catalog is not None else []
    if not skills:
        return "No skills found (Loom's skills/, ~/.claude/skills/, your config dir's skills/, .loom/skills/)."
    lines = [f"Skills ({len(skills)}):"]
    for skill in sorted(skills, key=lambda s: s.name):
        description = skill.description.strip().splitlines()
        line = f"  {skill.name or '?'}  {description[0] if description else ''}"
        if skill.source:
            line += f"  [{skill.source}]"
        lines.append(line)
    return "\n".join(lines)


def sandbox_text(sandbox: Sandbox | None, mode_source: str) -> str:
    """/sandbox: what `loom sandbox` prints, for this session's sandbox."""
    from ...sandbox_report import report_lines
    from ...sandbox_setup import facts_of

    if sandbox is None:
        return "sandbox: none in this session (commands run unconfined and ask first)"
    return "\n".join(report_lines(facts_of(sandbox, mode_source)))


def cost(host: ChatHost, _command: ParsedCommand) -> None:
    agent = host.agent
    assert agent is not None  # needs_agent: the registry checked
    host.output(cost_text(host.status, agent.metrics, agent.window_in_use().source))


def skills(host: ChatHost, _command: ParsedCommand) -> None:
    agent = host.agent
    assert agent is not None  # needs_agent
    host.output(skills_text(agent.skills))


def sandbox(host: ChatHost, _command: ParsedCommand) -> None:
    agent = host.agent
    assert agent is not None  # needs_agent
    host.output(sandbox_text(agent.sandbox, host.lifecycle.sandbox_source))


def hooks(host: ChatHost, _command: ParsedCommand) -> None:
    """/hooks: every hook with its file and trust state, and the files' problems."""
    from ..hooks_screen import HooksScreen, current_plan

    plan = current_plan(host.workspace_root)
    if plan is None:
        host.output("the hooks cannot be listed: a settings file is not valid (see the error at start)")
        return
    root = host.workspace_root

    def trust(shown: HookPlan) -> str | None:
        """Record the hooks not trusted by their keys as shown (the start-up question's record)."""
        from loom_cli.workspace_records import WorkspaceRecords
        from loom_engine.paths import data_dir

        try:
            WorkspaceRecords(data_dir()).trust_hooks(root, shown.trust_keys(shown.untrusted))
        except OSError as error:
            return f"could not remember the trust in these hooks ({error.strerror or error}): they stay off"
        return None

    host.push_screen(HooksScreen(plan, trust))


def agents(host: ChatHost, _command: ParsedCommand) -> None:
    """/agents: what `loom agents` prints, in the transcript."""
    from loom_engine.paths import config_dir

    from ...agents_command import agents_lines

    host.output("\n".join(agents_lines(host.workspace_root, config_dir())))


COST = SlashCommand("cost", "tokens and cost of this session", cost)
SKILLS = SlashCommand("skills", "list the available skills", skills)
# /hooks and /agents are read from the files: they need no agent.
HOOKS = SlashCommand("hooks", "the hooks: event, matcher, command, file, trusted or not; problems", hooks,
                     needs_agent=False)
AGENTS = SlashCommand("agents", "the custom sub-agents: source, tools; agent files not used", agents,
                      needs_agent=False)
SANDBOX = SlashCommand(
    "sandbox", "whether commands run in the OS sandbox, by what (or why not); what they may write and read",
    sandbox)
