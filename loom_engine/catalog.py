"""What the markdown catalogs (skills, custom sub-agents, custom commands) share.

Each is read from a list of folders in order, a later item replacing an earlier one of
the same name (the replaced ones are kept, for ``loom agents`` and the like), and is
then looked up by name. The lookup, the folder walk and the user's folders (with their
precedence: :func:`user_places`) live here once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import yaml


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)
S = TypeVar("S")

MARKDOWN_SUFFIX = ".md"

# Where an item of the user's own comes from: Loom's config folder, or Claude Code's
# (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, see :func:`loom_engine.paths.claude_home`).
SOURCE_USER = "user"
SOURCE_CLAUDE_HOME = "~/.claude"
USER_SOURCES = frozenset({SOURCE_USER, SOURCE_CLAUDE_HOME})


def user_places(kind: str, user_config_dir: Path | None, claude_home: Path | None) -> list[tuple[Path, str]]:
    """The user's folders of one kind (``agents``, ``commands``, ``skills``), in the order
    they are read: Claude Code's first, so Loom's own wins on a name clash (and the
    project, read after both, over either)."""
    places: list[tuple[Path, str]] = []
    if claude_home is not None:
        places.append((claude_home / kind, SOURCE_CLAUDE_HOME))
    if user_config_dir is not None:
        places.append((user_config_dir / kind, SOURCE_USER))
    return places


class NamedCatalog(Generic[T]):
    """Items by name, in name order. ``fold`` gives the key a name is stored and looked
    up under (the name itself unless a catalog says otherwise, e.g. without case)."""

    def __init__(self, items: Iterable[T] = (), overridden: Iterable[T] = ()) -> None:
        by_key = {self.fold(item.name): item for item in items}
        self._items: dict[str, T] = dict(sorted(by_key.items()))
        self.overridden: tuple[T, ...] = tuple(overridden)

    @staticmethod
    def fold(name: str) -> str:
        return name

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.fold(name) in self._items

    def names(self) -> list[str]:
        return [item.name for item in self._items.values()]

    def get(self, name: str) -> T | None:
        return self._items.get(self.fold(name))


class LastWins(Generic[T]):
    """Items as they are found, in order of precedence: one found later replaces an
    earlier one of the same name, which is remembered in ``overridden``."""

    def __init__(self, fold: Callable[[str], str] = NamedCatalog.fold) -> None:
        self._fold = fold
        self.found: dict[str, T] = {}
        self.overridden: list[T] = []

    def add(self, item: T) -> None:
        key = self._fold(item.name)
        if key in self.found:
            self.overridden.append(self.found[key])
        self.found[key] = item

    def items(self) -> list[T]:
        return list(self.found.values())


def read_markdown(path: Path, error: type[ValueError]) -> str:
    """The file's text; ``error`` (the catalog's own) says why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise error("not valid UTF-8 text") from None
    except OSError as problem:
        raise error(f"cannot be read ({problem.strerror or problem})") from None


def front_matter_mapping(front: str, error: type[ValueError]) -> dict[Any, Any]:
    """The YAML front matter of a skill or agent file, which must name it and say what
    it is for; ``error`` says what is wrong (with the file's line for a YAML error)."""
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError as problem:
        mark = getattr(problem, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""  # + the '---' line, 1-based
        what = getattr(problem, "problem", None) or str(problem).splitlines()[0]
        raise error(f"invalid YAML front matter{where}: {what}") from None
    if not isinstance(data, dict):
        raise error("the front matter must be a YAML mapping with name and description")
    return data


def distinct_folders(places: Iterable[tuple[Path, S]]) -> list[tuple[Path, S]]:
    """The places whose folder exists, each folder once (the first place naming it, after
    links are followed, keeps it: the same folder read twice would override itself)."""
    out: list[tuple[Path, S]] = []
    seen: set[Path] = set()
    for folder, tag in places:
        try:
            resolved = folder.resolve()
        except OSError:
            continue
        if resolved in seen or not folder.is_dir():
            continue
        seen.add(resolved)
        out.append((folder, tag))
    return out


def markdown_files(folder: Path, *, recursive: bool = False) -> list[Path]:
    """The ``*.md`` files of ``folder`` (and of its sub-folders when ``recursive``),
    sorted, leaving out hidden files and folders; none when the folder is missing."""
    if not folder.is_dir():
        return []
    found: list[Path] = []
    for current, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
        found += [Path(current) / n for n in sorted(names)
                  if n.endswith(MARKDOWN_SUFFIX) and not n.startswith(".")]
    return found
