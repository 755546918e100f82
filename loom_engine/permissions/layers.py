"""Where rules come from and how they are kept once parsed.

Rules come in layers (built-in defaults, the layers the application reads from its
settings files, CLI flags, saved and session answers). The layers only say where a rule
came from, for the reasons shown to the user: across all of them deny beats ask beats
allow. The built-in defaults ask before any edit of ``.git/`` or of Loom's own settings
files, so that an agent in ``accept-edits`` cannot grant itself more permissions or plant
a git hook.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .paths import PathPattern, compile_path_pattern
from .rules import Behavior, Rule, parse_rule

__all__ = ["DEFAULT_LAYER", "SOURCE_DEFAULTS", "SOURCE_SAVED", "SOURCE_SESSION",
           "CompiledRule", "RuleLayer", "RuleStore", "protected_layer"]

SOURCE_DEFAULTS = "defaults"
# "Allow always in this project" answers (where they are kept is the saver's business).
SOURCE_SAVED = "saved answers"
SOURCE_SESSION = "session"


@dataclass(frozen=True)
class RuleLayer:
    """One source of rules."""

    source: str
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()


# Git runs commands named in a repository's config (core.fsmonitor, diff drivers), and
# a `.git` file can point git at any folder: edits there, at any depth, always ask, as do
# edits of the project's permission settings (Loom's, and Claude Code's, which Loom reads:
# an edit there could drop a deny rule for the next session).
DEFAULT_LAYER = RuleLayer(
    SOURCE_DEFAULTS,
    ask=("edit(**/.git)", "edit(.loom/settings.toml)", "edit(.loom/settings.local.toml)",
         "edit(.claude/settings.json)", "edit(.claude/settings.local.json)"),
)


def protected_layer(source: str, paths: Iterable[Path]) -> RuleLayer:
    """Ask rules for every edit of these absolute paths (a folder: everything in it).

    For places the application knows must never change unasked, in any mode (ask rules
    hold in bypass too): Loom's own config, data and trust files, the folders of trusted
    project hook scripts. ``source`` says why, in the reason the user is shown.
    """
    rules: list[str] = []
    for path in paths:
        text = _escape_glob(Path(path).as_posix().rstrip("/") or "/")
        rules += [f"edit({text})", f"edit({text}/**)"]
    return RuleLayer(source, ask=tuple(dict.fromkeys(rules)))


def _escape_glob(text: str) -> str:
    """A literal path as a rule pattern: glob characters stand for themselves."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


@dataclass(frozen=True)
class CompiledRule:
    """A rule in force: parsed, its path pattern compiled, with where it came from."""

    behavior: Behavior
    rule: Rule
    source: str
    path: PathPattern | None

    @property
    def label(self) -> str:
        return f"rule {self.rule.text} from {self.source}"

    @property
    def remove_hint(self) -> str:
        """What a headless user would do to stop this rule from deciding."""
        return f"remove {self.rule.text} from {self.source}"


class RuleStore:
    """The rules in force, layer by layer; shared by a manager and its sub-agents'."""

    def __init__(self, root: Path) -> None:
        # Relative path patterns are anchored at the workspace root.
        self._root = root
        self._compiled: list[CompiledRule] = []
        # for_tool's answers for the rules as they are now: a check asks the same few
        # questions hundreds of times. Emptied whenever a rule is added or removed.
        self._by_tool: dict[tuple[str, Behavior, bool | None], tuple[CompiledRule, ...]] = {}
        self._by_tools: dict[tuple[tuple[str, ...], Behavior, bool | None], tuple[CompiledRule, ...]] = {}

    def __iter__(self) -> Iterator[CompiledRule]:
        return iter(self._compiled)

    def compile(self, behavior: Behavior, text: str, source: str) -> CompiledRule:
        """The rule parsed and ready, without adding it. ValueError names the source."""
        try:
            rule = parse_rule(text)
        except ValueError as exc:
            raise ValueError(f"{exc} (in {source})") from None
        path = compile_path_pattern(rule.specifier, self._root) \
            if rule.path_rule and rule.specifier else None
        return CompiledRule(behavior, rule, source, path)

    def add(self, layer: RuleLayer) -> None:
        """Add a layer's rules; nothing is added when one of them is invalid."""
        by_behavior: tuple[tuple[Behavior, tuple[str, ...]], ...] = (
            ("deny", layer.deny), ("ask", layer.ask), ("allow", layer.allow))
        compiled = [self.compile(behavior, text, layer.source)
                    for behavior, texts in by_behavior for text in texts]
        self._compiled.extend(compiled)
        self._forget_answers()

    def _forget_answers(self) -> None:
        self._by_tool.clear()
        self._by_tools.clear()

    def remove(self, behavior: Behavior, text: str, source: str) -> bool:
        """Drop one rule of that source (the first equal one); whether there was one."""
        for index, c in enumerate(self._compiled):
            if c.behavior == behavior and c.rule.text == text and c.source == source:
                del self._compiled[index]
                self._forget_answers()
                return True
        return False

    def for_tool(self, tool: str, behavior: Behavior, *, write: bool | None = None) -> Sequence[CompiledRule]:
        """The rules of this behaviour that name ``tool`` (``write``: for a file write or
        read, so that the ``edit``/``read`` groups apply)."""
        key = (tool, behavior, write)
        found = self._by_tool.get(key)
        if found is None:
            found = self._by_tool[key] = tuple(
                c for c in self._compiled if c.behavior == behavior and c.rule.names_tool(tool, write=write))
        return found

    def for_tools(self, tools: Iterable[str], behavior: Behavior, *,
                  write: bool | None = None) -> Sequence[CompiledRule]:
        """:meth:`for_tool` for each of ``tools`` in turn, each rule once (where it first
        comes): a rule of the ``read`` group names every tool that reads."""
        names = tuple(tools)
        key = (names, behavior, write)
        found = self._by_tools.get(key)
        if found is None:
            found = self._by_tools[key] = tuple({
                id(c): c for name in names for c in self.for_tool(name, behavior, write=write)}.values())
        return found

    def bare(self, tool: str, behavior: Behavior, *, write: bool | None = None) -> CompiledRule | None:
        """The first rule of this behaviour naming the whole tool (``bash``, not
        ``bash(ls)``), or None."""
        return next((c for c in self.for_tool(tool, behavior, write=write)
                     if c.rule.specifier is None), None)
