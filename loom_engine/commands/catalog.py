"""Custom slash commands: markdown files found on disk, in Claude Code's format.

Where they are found (a later place replaces an earlier command of the same name):
Claude Code's ``~/.claude/commands/`` (source "~/.claude"), ``<user config dir>/commands/``,
the project's ``.claude/commands/``, then its
``.loom/commands/``. A file's path below that folder is its name, sub-folders
separated by ``:`` (``git/commit.md`` is ``/git:commit``). Names are matched without
regard to case.

The file is optional YAML front matter between ``---`` lines, then the prompt::

    ---
    description: Fix an issue by its number
    argument-hint: [issue-number]
    allowed-tools: Bash(git status:*), Read
    model: claude-haiku-4-5           # or Claude Code's sonnet / opus / haiku
    ---
    Fix issue #$ARGUMENTS. First look at !`git status` ...

Front matter is read with PyYAML; a line Claude Code accepts but YAML does not
(``argument-hint: [a] [b]``) is read as plain ``key: text``. A file that cannot be
used is skipped with one warning naming it; so is a command whose name a built-in
command already has (the built-in wins).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..catalog import (
    MARKDOWN_SUFFIX,
    LastWins,
    NamedCatalog,
    distinct_folders,
    markdown_files,
    read_markdown,
    user_places,
)
from ..mcp.names import is_mcp_name
from ..permissions.rules import parse_rule
from ..providers.models import full_model_name
from ..skills.catalog import loom_tool_rule, split_tool_list

COMMAND_SUFFIX = MARKDOWN_SUFFIX
MAX_DESCRIPTION = 200  # the menu shows one line; the file keeps the rest
PROJECT_COMMAND_DIRS = (".claude/commands", ".loom/commands")
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_KEYS = ("description", "argument-hint", "allowed-tools", "model")


class CommandError(ValueError):
    """Why a command file cannot be used."""


@dataclass(frozen=True)
class CustomCommand:
    name: str  # without the slash: "fix", "git:commit"
    description: str
    path: Path
    source: str  # "~/.claude" | "user" | "project"
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()  # Loom rule texts, granted for the command's turn
    model: str | None = None

    def read_body(self) -> str:
        """The prompt after the front matter, read from disk now (the file may have changed)."""
        return parse_file(self.path)[1]


def parse_file(path: Path) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a command file; CommandError says what is wrong."""
    text = read_markdown(path, CommandError).lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text.strip()
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            front = "".join(lines[1:index])
            return _front_matter(front), "".join(lines[index + 1:]).strip()
    raise CommandError("the front matter is not closed by a '---' line")


def _front_matter(text: str) -> dict[str, Any]:
    plain = _plain_lines(text)
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError:
        if not plain:
            raise CommandError("invalid YAML front matter") from None
        return plain
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CommandError("the front matter must be a mapping of keys (description, argument-hint, ...)")
    # "argument-hint: [issue]" is a YAML list; the user meant the text they wrote.
    for key in ("argument-hint", "description"):
        if key in data and not isinstance(data[key], str) and key in plain:
            data[key] = plain[key]
    return data


def _plain_lines(text: str) -> dict[str, Any]:
    """``key: text`` lines, the value as written (quotes taken off)."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key in _KEYS and not line.startswith((" ", "\t")):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out[key] = value
    return out


def parse_command(path: Path, name: str, source: str) -> tuple[CustomCommand, list[str]]:
    """One command file read and checked, and its warnings (a rule that cannot be used)."""
    data, body = parse_file(path)
    if not body:
        raise CommandError("no prompt after the front matter")
    warnings: list[str] = []
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        raise CommandError("'description' must be text")
    description = " ".join((description or _first_line(body)).split())
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION - 1].rstrip() + "…"
    hint = data.get("argument-hint", "")
    if isinstance(hint, list):
        hint = " ".join(f"[{item}]" for item in hint)
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise CommandError("'model' must be a model name")
    allowed: list[str] = []
    for rule in _tool_rules(data.get("allowed-tools", data.get("allowed_tools"))):
        try:
            parse_rule(rule)
        except ValueError as error:
            warnings.append(f"{path}: allowed-tools {rule!r} left out: {error}")
            continue
        allowed.append(rule)
    command = CustomCommand(name=name, description=description, path=path, source=source,
                            argument_hint=str(hint or "").strip(), allowed_tools=tuple(dict.fromkeys(allowed)),
                            model=full_model_name(model.strip()) if isinstance(model, str) else None)
    return command, warnings


def _tool_rules(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        items = split_tool_list(value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value if v.strip()]
    else:
        raise CommandError("'allowed-tools' must be a list of tool names or a comma-separated string")
    return [loom_tool_rule(item) for item in items]


def _first_line(body: str) -> str:
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


def command_name(relative: Path) -> str | None:
    """``git/commit.md`` -> ``git:commit``; None when a part cannot be a command name."""
    parts = [*relative.parent.parts, relative.name[: -len(COMMAND_SUFFIX)]]
    if not all(_SEGMENT.match(part) for part in parts):
        return None
    return ":".join(parts)


class CommandCatalog(NamedCatalog[CustomCommand]):
    def __init__(self, commands: Iterable[CustomCommand] = (), warnings: Iterable[str] = (),
                 overridden: Iterable[CustomCommand] = ()) -> None:
        super().__init__(commands, overridden)
        self.warnings: tuple[str, ...] = tuple(warnings)

    @staticmethod
    def fold(name: str) -> str:
        return name.lower()  # names are matched without regard to case

    @classmethod
    def discover(cls, workspace_root: Path | str, *, user_config_dir: Path | str | None = None,
                 reserved: Iterable[str] = (), claude_home: Path | None = None) -> CommandCatalog:
        """The commands of the user's folders and of the project; ``reserved``: the
        built-in commands' names, which a file cannot take."""
        places = command_places(workspace_root, user_config_dir, claude_home)
        taken = {name.lower() for name in reserved}
        found: LastWins[CustomCommand] = LastWins(cls.fold)
        warnings: list[str] = []
        for folder, source in places:
            for path in markdown_files(folder, recursive=True):
                name = command_name(path.relative_to(folder))
                if name is None:
                    warnings.append(f"{path}: skipped: a command name has letters, digits, '-', '_' and '.'")
                    continue
                if name.lower() in taken or is_mcp_name(name.lower()):  # MCP prompts' names
                    warnings.append(f"{path}: /{name} is a built-in command, which wins; rename the file "
                                    "to use it")
                    continue
                try:
                    command, problems = parse_command(path, name, source)
                except CommandError as error:
                    warnings.append(f"{path}: skipped: {error}")
                    continue
                warnings += problems
                found.add(command)
        return cls(found.items(), warnings, found.overridden)


def command_places(workspace_root: Path | str, user_config_dir: Path | str | None = None,
                   claude_home: Path | None = None) -> list[tuple[Path, str]]:
    """The folders commands are read from, in order (a later one wins), with their source."""
    from .. import paths

    root = Path(workspace_root)
    config = Path(user_config_dir) if user_config_dir is not None else paths.config_dir()
    places = user_places("commands", config, claude_home)
    places += [(root / folder, "project") for folder in PROJECT_COMMAND_DIRS]
    return distinct_folders(places)


def signature(places: Iterable[tuple[Path, str]]) -> tuple[tuple[str, int], ...]:
    """What changes when a command file is added, removed or edited: each file's
    modification time (cheap: the menu asks on each key)."""
    out: list[tuple[str, int]] = []
    for folder, _ in places:
        for path in markdown_files(folder, recursive=True):
            try:
                out.append((str(path), path.stat().st_mtime_ns))
            except OSError:
                continue
    return tuple(out)
