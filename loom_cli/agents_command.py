"""`loom agents` and the chat's `/agents`: the custom sub-agents Loom found, where each
comes from, and the files it could not use with the reason (one line builder for both)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from loom_engine.mcp.names import is_mcp_name
from loom_engine.subagents.definitions import AgentCatalog, AgentDefinition

_SOURCES = ("~/.claude/agents/, the user config dir's agents/, .claude/agents/ and .loom/agents/ "
            "(a later one wins by name)")


def agents_lines(workspace_root: Path, config_dir: Path, known_tools: Collection[str] | None = None) -> list[str]:
    """What `loom agents` prints; ``known_tools`` are Loom's tool names (an agent file may
    name a tool Loom does not have: it is left out, and said here). None: the built-in tools."""
    if known_tools is None:
        from builtin_tools import default_tools

        known_tools = [tool.name for tool in default_tools()]
    from .claude_folder import user_claude_home

    catalog = AgentCatalog.discover(workspace_root, user_config_dir=config_dir,
                                    claude_home=user_claude_home()).with_trusted_models(
        _trusted_models(workspace_root))
    lines: list[str] = []
    if len(catalog):
        width = max(len(agent.name) for agent in catalog)
        for agent in catalog:
            lines.append(f"{agent.name:<{width}}  {agent.source:<9} {agent.description}")
            lines.append(f"{'':<{width}}  {'':<9} {'; '.join(_details(agent))} "
                         f"({_shown(agent.path, workspace_root)})")
    else:
        lines.append(f"no custom agents; put markdown files in {_SOURCES}")
    for old in catalog.overridden:
        lines.append(f"replaced: {old.name} from {old.source} ({_shown(old.path, workspace_root)})")
    broken = [p for p in catalog.problems if p.skipped]
    remarks = [f"{_shown(p.path, workspace_root)}: {p.message}" for p in catalog.problems if not p.skipped]
    for agent in catalog:
        missing = [t for t in agent.tools or () if t not in known_tools and not is_mcp_name(t)]
        if missing:
            remarks.append(f"{_shown(agent.path, workspace_root)}: tools Loom does not have, left out: "
                           + ", ".join(missing))
    if broken:
        lines.append("")
        lines.append("skipped files:")
        lines += [f"  {_shown(p.path, workspace_root)}: {p.message}" for p in broken]
    if remarks:
        lines.append("")
        lines.append("warnings:")
        lines += [f"  {remark}" for remark in remarks]
    return lines


def _details(agent: AgentDefinition) -> list[str]:
    details = [f"tools: {', '.join(agent.tools)}" if agent.tools is not None else "tools: the caller's, less task"]
    if agent.disallowed_tools:
        details.append(f"not: {', '.join(agent.disallowed_tools)}")
    if agent.model is not None:
        details.append(f"model: {agent.model}")
    if agent.untrusted_model is not None:
        details.append(f"model: {agent.untrusted_model} (not used until you trust the workspace: "
                       "the session's model runs it)")
    if agent.permission_mode is not None:
        details.append(f"mode: {agent.permission_mode}")
    if agent.max_turns is not None:
        details.append(f"max turns: {agent.max_turns}")
    if agent.skills is not None:
        details.append(f"skills: {', '.join(agent.skills) or 'none'}")
    if agent.mcp_servers is not None:
        details.append(f"MCP servers: {', '.join(agent.mcp_servers) or 'none'}")
    return details


def _trusted_models(workspace_root: Path) -> frozenset[tuple[Path, str]]:
    """The project agents' models the user trusted with the workspace (none when the
    settings cannot be read: the listing then says they are not used, as a run would not)."""
    from loom_engine.paths import data_dir, user_config_file

    from .project_trust import trusted_agent_models
    from .settings import ConfigError, load_settings
    from .workspace_records import WorkspaceRecords

    try:
        loaded = load_settings(workspace_root, user_config_file(),
                               trusted_hash=WorkspaceRecords(data_dir()).trusted_hash(workspace_root))
    except ConfigError:
        return frozenset()
    return trusted_agent_models(workspace_root, loaded.widening) if loaded.trusted else frozenset()


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
