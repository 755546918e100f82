"""Custom sub-agents: markdown files with YAML front matter, in Claude Code's format.

Where they are found, in this order (a later file replaces an earlier one of the same
name, so the project wins over the user, and Loom's own folder over Claude Code's)::

    ~/.claude/agents/*.md              source "~/.claude" (Claude Code's user folder)
    <user config dir>/agents/*.md      source "user"
    <project>/.claude/agents/*.md      source ".claude"
    <project>/.loom/agents/*.md        source ".loom"

A file::

    ---
    name: reviewer                     # required: letters, digits, - and _
    description: Reviews a diff ...    # required: when to use it (the model reads this)
    tools: Read, Grep, Glob            # optional: Claude Code or Loom names; default: the
                                       # parent's tools except task
    disallowedTools: Bash              # optional: taken away from the above
    model: inherit                     # optional: inherit (default), a model name, or
                                       # sonnet / opus / haiku
    permissionMode: plan               # optional: may only narrow the parent's mode
    maxTurns: 10                       # optional
    skills: [fix-tests]                # optional: the only skills it may load
    mcpServers: [github]               # optional: the only MCP servers whose tools it gets
    ---
    The system prompt of the sub-agent.

Nothing here widens what a sub-agent may do: its tools are always taken from its
parent's, and its mode is always the narrower of the two (see :mod:`.spawn`). A project
agent's ``model`` is the workspace's to choose only once the user trusts it (a model costs
money, another vendor's gets the work and the user's key for it): whoever builds the
catalog says which models are trusted (:meth:`AgentCatalog.with_trusted_models`), and an
agent whose model is not runs on the session's provider and model.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..catalog import (
    USER_SOURCES,
    LastWins,
    NamedCatalog,
    distinct_folders,
    front_matter_mapping,
    markdown_files,
    read_markdown,
    user_places,
)
from ..permissions.modes import CLAUDE_MODE_NAMES, PermissionMode, check_mode
from ..providers.models import full_model_name
from ..skills.catalog import SkillError, loom_tool_rule, split_front_matter, split_tool_list

AGENT_DIRS: tuple[tuple[str, str], ...] = ((".claude/agents", ".claude"), (".loom/agents", ".loom"))
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
KNOWN_KEYS = frozenset({"name", "description", "tools", "disallowedTools", "model", "permissionMode",
                        "maxTurns", "skills", "mcpServers", "color"})
# Claude Code's permission modes, as Loom calls them.
_MODE_ALIASES: dict[str, PermissionMode] = {claude: mode for mode, claude in CLAUDE_MODE_NAMES.items()
                                            if claude != mode}


class AgentFileError(ValueError):
    """Why an agent file cannot be used."""


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    prompt: str  # the body: the sub-agent's system prompt
    path: Path
    source: str  # "~/.claude" | "user" | ".claude" | ".loom"
    tools: tuple[str, ...] | None = None  # Loom tool names; None: the parent's (less task)
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None  # None: the parent's
    permission_mode: PermissionMode | None = None
    max_turns: int | None = None
    skills: tuple[str, ...] | None = None
    mcp_servers: tuple[str, ...] | None = None
    # The model a project agent file names, left out because the workspace is not trusted
    # (``model`` is then None: the session's).
    untrusted_model: str | None = None

    @property
    def in_project(self) -> bool:
        return self.source not in USER_SOURCES


@dataclass(frozen=True)
class AgentFileProblem:
    """A file that was skipped (``skipped``) or used with a remark."""

    path: Path
    message: str
    skipped: bool = True

    def __str__(self) -> str:
        return self.line()

    def line(self, root: Path | None = None) -> str:
        """One line for the user; the path relative to ``root`` when it lies inside it."""
        shown = str(self.path)
        if root is not None and self.path.is_relative_to(root):
            shown = str(self.path.relative_to(root))
        return f"{shown}: {'skipped: ' if self.skipped else ''}{self.message}"


def parse_agent_file(path: Path, source: str) -> tuple[AgentDefinition, list[str]]:
    """One agent and the warnings about it; AgentFileError when it cannot be used."""
    text = read_markdown(path, AgentFileError)
    try:
        front, body = split_front_matter(text)
    except SkillError as error:
        raise AgentFileError(str(error)) from None
    data = front_matter_mapping(front, AgentFileError)
    warnings = [f"unknown field {key!r} ignored" for key in data if key not in KNOWN_KEYS]
    name = _text(data, "name")
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise AgentFileError(f"name {name!r} must be letters, digits, '-' or '_' (at most {MAX_NAME})")
    description = " ".join(_text(data, "description").split())
    if len(description) > MAX_DESCRIPTION:
        warnings.append(f"description cut to {MAX_DESCRIPTION:,} characters")
        description = description[:MAX_DESCRIPTION]
    prompt = body.strip()
    if not prompt:
        raise AgentFileError("no system prompt after the front matter")
    tools = _tool_list(data, "tools", warnings)
    disallowed = _tool_list(data, "disallowedTools", warnings) or ()
    return AgentDefinition(
        name=name, description=description, prompt=prompt, path=path, source=source, tools=tools,
        disallowed_tools=disallowed, model=_model(data.get("model")), permission_mode=_mode(data, warnings),
        max_turns=_max_turns(data.get("maxTurns")), skills=_name_list(data, "skills"),
        mcp_servers=_name_list(data, "mcpServers")), warnings


def _text(data: dict[Any, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise AgentFileError(f"missing '{key}'")
    return value.strip()


def _items(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        return split_tool_list(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise AgentFileError(f"'{key}' must be a list of names or a comma-separated string")


def _tool_list(data: dict[Any, Any], key: str, warnings: list[str]) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    names: list[str] = []
    for item in _items(value, key):
        rule = loom_tool_rule(item)
        name, paren, _ = rule.partition("(")
        if paren:  # a sub-agent gets whole tools; what a call may do is for the rules
            warnings.append(f"{key}: {item!r} is taken as {name!r} (the part in brackets is not used)")
        names.append(name.strip())
    return tuple(dict.fromkeys(names))


def _name_list(data: dict[Any, Any], key: str) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, dict):  # Claude Code also allows {name: config}; the names are what counts here
        value = [str(k) for k in value]
    return tuple(dict.fromkeys(_items(value, key)))


def _model(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise AgentFileError("'model' must be a model name or 'inherit'")
    model = value.strip()
    if model == "inherit":
        return None
    return full_model_name(model)


def _mode(data: dict[Any, Any], warnings: list[str]) -> PermissionMode | None:
    value = data.get("permissionMode")
    if value is None:
        return None
    text = str(value).strip()
    try:
        return _MODE_ALIASES.get(text) or check_mode(text)
    except ValueError:
        warnings.append(f"permissionMode {text!r} is not one Loom knows; the parent's mode is used")
        return None


def _max_turns(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AgentFileError("'maxTurns' must be a whole number of at least 1")
    return value


class AgentCatalog(NamedCatalog[AgentDefinition]):
    """The custom sub-agents found, by name (sorted), with the files skipped or remarked on."""

    def __init__(self, agents: Iterable[AgentDefinition] = (), problems: Iterable[AgentFileProblem] = (),
                 overridden: Iterable[AgentDefinition] = ()) -> None:
        super().__init__(agents, overridden)
        self.problems: tuple[AgentFileProblem, ...] = tuple(problems)

    @staticmethod
    def fold(name: str) -> str:
        return name.strip()  # the task tool's argument, as the model wrote it

    @classmethod
    def discover(cls, workspace_root: Path | str, *, user_config_dir: Path | str | None,
                 claude_home: Path | None = None) -> AgentCatalog:
        root = Path(workspace_root)
        config = Path(user_config_dir) if user_config_dir is not None else None
        places = user_places("agents", config, claude_home)
        places += [(root / folder, source) for folder, source in AGENT_DIRS]
        found: LastWins[AgentDefinition] = LastWins(cls.fold)
        problems: list[AgentFileProblem] = []
        for folder, source in distinct_folders(places):
            for path in markdown_files(folder):
                if not path.is_file():
                    continue
                try:
                    agent, warnings = parse_agent_file(path, source)
                except AgentFileError as error:
                    problems.append(AgentFileProblem(path, str(error)))
                    continue
                problems += [AgentFileProblem(path, warning, skipped=False) for warning in warnings]
                found.add(agent)
        return cls(found.items(), problems, found.overridden)

    @property
    def warnings(self) -> list[str]:
        return [str(problem) for problem in self.problems]

    def with_trusted_models(self, trusted: Collection[tuple[Path, str]]) -> AgentCatalog:
        """This catalog with each project agent's model left out (kept as
        ``untrusted_model``) unless (its file, that model) is in ``trusted``; a user's own
        agents keep theirs."""
        def checked(agent: AgentDefinition) -> AgentDefinition:
            if not agent.in_project or agent.model is None or (agent.path, agent.model) in trusted:
                return agent
            return replace(agent, model=None, untrusted_model=agent.model)

        return AgentCatalog([checked(agent) for agent in self], self.problems, self.overridden)

    def index_text(self) -> str:
        """Level 1, for the task tool's description: each agent's name and description,
        sorted by name, so the text is the same on every turn and every run."""
        return "\n".join(f"- {agent.name}: {agent.description}" for agent in self)
