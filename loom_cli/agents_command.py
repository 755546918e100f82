"""`loom agents`: the custom sub-agents Loom found, where each comes from, and the
files it could not use with the reason."""

from __future__ import annotations

from pathlib import Path

from loom_engine.subagents.definitions import AgentCatalog

_SOURCES = "the user config dir's agents/, .claude/agents/ and .loom/agents/ (a later one wins by name)"


def agents_lines(workspace_root: Path, config_dir: Path) -> list[str]:
    catalog = AgentCatalog.discover(workspace_root, user_config_dir=config_dir)
    lines: list[str] = []
    if len(catalog):
        width = max(len(agent.name) for agent in catalog)
        for agent in catalog:
            tools = ", ".join(agent.tools) if agent.tools is not None else "the parent's tools"
            lines.append(f"{agent.name:<{width}}  {agent.source:<8} {agent.description}")
            details = [f"tools: {tools}"]
            if agent.model is not None:
                details.append(f"model: {agent.model}")
            if agent.permission_mode is not None:
                details.append(f"mode: {agent.permission_mode}")
            lines.append(f"{'':<{width}}  {'':<8} {'; '.join(details)} ({_shown(agent.path, workspace_root)})")
    else:
        lines.append(f"no custom agents; put markdown files in {_SOURCES}")
    for old in catalog.overridden:
        lines.append(f"replaced: {old.name} from {old.source} ({_shown(old.path, workspace_root)})")
    broken = [p for p in catalog.problems if p.skipped]
    remarks = [p for p in catalog.problems if not p.skipped]
    if broken:
        lines.append("")
        lines.append("skipped files:")
        lines += [f"  {_shown(p.path, workspace_root)}: {p.message}" for p in broken]
    if remarks:
        lines.append("")
        lines.append("warnings:")
        lines += [f"  {_shown(p.path, workspace_root)}: {p.message}" for p in remarks]
    return lines


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
