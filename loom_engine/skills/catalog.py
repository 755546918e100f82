"""Skills: folders with a SKILL.md, found on disk and disclosed to the model in three levels.

Public API
----------
``Skill``  frozen: ``name``, ``description``, ``path`` (the SKILL.md), ``source``,
    ``allowed_tools`` (tuple of Loom rule strings, or None); ``folder``; ``body`` /
    ``read_body()`` read the instructions from disk when they are needed (level 2),
    never before; ``files()`` lists the rest of the folder.
``SkillCatalog.discover(workspace_root, *, user_config_dir=None, builtin_dir=None, claude_home=None)``
    Skills from, in this order: Loom's own ``skills/`` (``paths.builtin_skills_dir()``),
    Claude Code's ``~/.claude/skills/`` (``claude_home``, source "~/.claude"),
    ``<user config dir>/skills/`` (``paths.config_dir()``), then the project's
    ``.agents/skills/``, ``.claude/skills/`` and ``.loom/skills/``. A later skill replaces
    an earlier one of the same name (``overridden`` keeps what was replaced).
``catalog.warnings``  one line per problem found: the file, and what was skipped or cut.
``catalog.index_text()``  level 1, for the system prompt: name and description only.
``catalog.load(name) -> (body, files)``  level 2: the instructions and the other files
    of the skill's folder (relative paths, sorted); ``SkillNotFound`` names the
    available skills.
``catalog.get(name)``, ``names()``, ``restricted(names)``, ``len``, iteration, ``in``
    (the lookup of :class:`loom_engine.catalog.NamedCatalog`).

SKILL.md
--------
YAML front matter between ``---`` lines (parsed with PyYAML ``safe_load``), then the
body::

    ---
    name: fix-tests            # lowercase letters, digits, single hyphens; <= 64;
                               # must equal the folder name
    description: Run the test suite and fix failures. Use when ...   # <= 1,024 chars;
                               # a longer one is cut for the index, with a warning
    allowed-tools: read_file, edit_file, bash(pytest:*)    # optional; list or string
    disable-model-invocation: true   # optional: only the user runs it, as /fix-tests
    user-invocable: false            # optional: not a slash command, only the model loads it
    ---
    Instructions...

``allowed-tools`` never grants anything: permissions come from the user's rules and
mode only, so a call outside the list is checked (and asked about) exactly as any other
call, and a call inside it is not pre-approved either. The list is shown to the model
with the instructions as the tools the skill expects to use. Claude Code's tool names
(``Read``, ``Bash(git diff:*)``...) are translated to Loom's, so skills written for
other agents work unchanged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import paths
from ..catalog import LastWins, NamedCatalog, distinct_folders, front_matter_mapping, read_markdown, user_places
from ..tool_names import LOOM_TOOL_NAMES

SKILL_FILE = "SKILL.md"
MAX_NAME = 64
MAX_DESCRIPTION = 1024
CUT_MARK = " […]"  # ends a description cut to MAX_DESCRIPTION
MAX_LISTED_FILES = 200
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git"})

PROJECT_SKILL_DIRS = (".agents/skills", ".claude/skills", ".loom/skills")

# Claude Code's tool names, as skills written for it use them.
class SkillNotFound(KeyError):
    def __init__(self, name: str, available: Iterable[str]) -> None:
        names = ", ".join(sorted(available)) or "none"
        self.message = f"Unknown skill {name!r}. Available skills: {names}."
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md file
    source: str  # "builtin" | "~/.claude" | "user" | "project"
    allowed_tools: tuple[str, ...] | None = None
    # ``disable-model-invocation: true``: left out of the model's index; only the user
    # runs it (as /name). ``user-invocable: false``: not a slash command (hidden from
    # the / menu); only the model loads it.
    model_invocable: bool = True
    user_invocable: bool = True

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def body(self) -> str:
        """The instructions, read from disk on each access (never held in memory)."""
        return self.read_body()

    def read_body(self) -> str:
        """The instructions after the front matter, read from disk now."""
        text = self.path.read_text(encoding="utf-8")
        _, body = split_front_matter(text)
        return body.strip()

    def files(self) -> list[str]:
        """The other files of the skill's folder, relative, sorted (level 3 material)."""
        found: list[str] = []
        for folder, dirs, names in os.walk(self.folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
            for name in sorted(names):
                if name.startswith(".") or name.endswith(".pyc"):
                    continue
                relative = (Path(folder) / name).relative_to(self.folder).as_posix()
                if relative != SKILL_FILE:
                    found.append(relative)
        return sorted(found)[:MAX_LISTED_FILES]


class SkillError(ValueError):
    """Why a SKILL.md cannot be used."""


def split_front_matter(text: str) -> tuple[str, str]:
    """(YAML text, body) of a SKILL.md; SkillError when there is no front matter."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillError("no YAML front matter (the file must start with a '---' line)")
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1:])
    raise SkillError("the front matter is not closed by a '---' line")


def parse_skill(path: Path, source: str, warnings: list[str] | None = None) -> Skill:
    """Read and validate one SKILL.md; SkillError says what is wrong.

    Problems that do not stop the skill from loading are added to ``warnings``.
    """
    front, body = split_front_matter(read_markdown(path, SkillError))
    data = front_matter_mapping(front, SkillError)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SkillError("missing 'name'")
    name = name.strip()
    if len(name) > MAX_NAME:
        raise SkillError(f"name {name!r} is longer than {MAX_NAME} characters")
    if not _NAME.match(name):
        raise SkillError(f"name {name!r} must be lowercase letters, digits and single hyphens "
                         "(not at the start or end)")
    if name != path.parent.name:
        raise SkillError(f"name {name!r} does not match its folder name {path.parent.name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("missing 'description'")
    description = " ".join(description.split())
    full_length = len(description)
    if full_length > MAX_DESCRIPTION:
        # Skills published for other agents go over the limit (by a few words, typically);
        # loading them with the description cut beats skipping them.
        description = _cut_description(description)
    allowed = _allowed_tools(data.get("allowed-tools", data.get("allowed_tools")))
    if not body.strip():
        raise SkillError("no instructions after the front matter")
    model_invocable = not _flag(data, "disable-model-invocation", False)
    user_invocable = _flag(data, "user-invocable", True)
    if full_length > MAX_DESCRIPTION and warnings is not None:  # only for a skill that loads
        warnings.append(f"{path}: description is {full_length:,} characters, over the limit of "
                        f"{MAX_DESCRIPTION:,}; loaded with the description cut to that length")
    return Skill(name=name, description=description, path=path, source=source, allowed_tools=allowed,
                 model_invocable=model_invocable, user_invocable=user_invocable)


def _flag(data: dict[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, data.get(key.replace("-", "_"), default))
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SkillError(f"'{key}' must be true or false")


def _cut_description(description: str) -> str:
    """At most MAX_DESCRIPTION characters, cut at a word when one ends near, with a visible mark."""
    room = MAX_DESCRIPTION - len(CUT_MARK)
    cut = description[:room]
    space = cut.rfind(" ")
    if space > room - 80:
        cut = cut[:space]
    return cut.rstrip() + CUT_MARK


def _allowed_tools(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        items = split_tool_list(value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value if v.strip()]
    else:
        raise SkillError("'allowed-tools' must be a list of tool names or a comma-separated string")
    return tuple(dict.fromkeys(loom_tool_rule(item) for item in items))


def split_tool_list(text: str) -> list[str]:
    """Split on commas outside parentheses; with no commas, on spaces outside them."""
    separator_is_comma = "," in _outside_parens(text)
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (char == "," if separator_is_comma else char.isspace()):
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def _outside_parens(text: str) -> str:
    depth = 0
    out = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(char)
    return "".join(out)


def loom_tool_rule(item: str) -> str:
    name, paren, rest = item.partition("(")
    loom_name = LOOM_TOOL_NAMES.get(name.strip().lower().replace("_", ""), name.strip())
    return f"{loom_name}({rest}" if paren else loom_name


class SkillCatalog(NamedCatalog[Skill]):
    def __init__(self, skills: Iterable[Skill] = (), warnings: Iterable[str] = (),
                 overridden: Iterable[Skill] = ()) -> None:
        super().__init__(skills, overridden)
        self.warnings: tuple[str, ...] = tuple(warnings)

    @classmethod
    def discover(cls, workspace_root: Path | str, *, user_config_dir: Path | str | None = None,
                 builtin_dir: Path | str | None = None, claude_home: Path | None = None) -> SkillCatalog:
        root = Path(workspace_root)
        config = Path(user_config_dir) if user_config_dir is not None else paths.config_dir()
        builtin = Path(builtin_dir) if builtin_dir is not None else paths.builtin_skills_dir()
        places: list[tuple[Path, str]] = [(builtin, "builtin"), *user_places("skills", config, claude_home)]
        places += [(root / folder, "project") for folder in PROJECT_SKILL_DIRS]
        found: LastWins[Skill] = LastWins()
        warnings: list[str] = []
        for folder, source in distinct_folders(places):
            for skill_dir in sorted(folder.iterdir()):
                if not skill_dir.is_dir() or skill_dir.name.startswith((".", "_")):
                    continue
                skill_file = skill_dir / SKILL_FILE
                if not skill_file.is_file():
                    near = [p.name for p in skill_dir.iterdir() if p.name.lower() == "skill.md"]
                    if near:
                        warnings.append(f"{skill_dir / near[0]}: skipped: the file must be named {SKILL_FILE}")
                    continue
                try:
                    found.add(parse_skill(skill_file, source, warnings))
                except SkillError as error:
                    warnings.append(f"{skill_file}: skipped: {error}")
        return cls(found.items(), warnings, found.overridden)

    def restricted(self, names: Iterable[str] | None) -> SkillCatalog:
        """Only the named skills (for a sub-agent's configuration); all when None."""
        if names is None:
            return self
        wanted = set(names)
        return SkillCatalog([s for s in self if s.name in wanted], self.warnings, self.overridden)

    # --- disclosure ----------------------------------------------------------------------

    def index_text(self) -> str:
        """Level 1: what each skill is for, one line each; the bodies stay on disk."""
        if not self._items:
            return ""
        lines = ["# Skills",
                 "Skills hold instructions for particular tasks. When a request matches a skill's "
                 "description, call the skill tool with its name before you start, then follow its "
                 "instructions."]
        listed = [skill for skill in self if skill.model_invocable]
        if not listed:
            return ""
        lines += [f"- {skill.name}: {skill.description}" for skill in listed]
        return "\n".join(lines)

    def load(self, name: str) -> tuple[str, list[str]]:
        """Level 2: the skill's instructions and the other files in its folder."""
        skill = self.get(name.strip())
        if skill is None or not skill.model_invocable:
            # One the user alone runs (disable-model-invocation) is not the model's to load.
            raise SkillNotFound(name, [s.name for s in self if s.model_invocable])
        return skill.read_body(), skill.files()
