"""The system prompt, built once per session from prioritised parts under a token budget.

Public API
----------
``ContextAssembler(workspace, *, skills=None, tools=None, counter=None,
budget_tokens=12_000, user_config_dir=None, extra_components=(), now=None, claude_home=None, cwd=None)``
    ``system_prompt() -> str``  built on the first call and cached: every later call
        returns the same string, so requests keep a byte-identical prefix and the
        provider's prompt cache keeps hitting. Nothing that changes during a session
        belongs in it; that goes at the end of the conversation (``ChangingFacts``).
    ``components() -> list[PromptComponent]``  the parts before fitting, in prompt order.
    ``report``  an ``AssemblyReport``: tokens per part, what was cut or dropped.
    ``warnings``  instruction files that could not be read, imports refused.
    ``path_rules``  the ``.claude/rules`` files with ``paths:`` globs, for the engine to
        give the model when a matching file is first touched (see ``instructions``).
``PromptComponent(name, text, priority, required=False, max_tokens=None, source=None)``
``fit_components(components, budget_tokens, counter) -> (text, report)``
``cut_at_boundary(text, max_tokens, counter) -> str | None``
``ChangingFacts(workspace).collect(state, *, include_todos=False, notes=()) -> str``
    a short reminder of what changed since the last one (files changed on disk since the
    model read them, the todo list on request, other notes); "" when there is nothing
    new. The engine appends it at the END of the conversation, never to the system prompt.
``render_reminder(*, stale_files=(), todos=None, notes=()) -> str``  the same text, stateless.

The parts, in prompt order (priority in brackets; under budget pressure the lowest
priority goes first, cut at a paragraph or sentence boundary with a note saying so, or
dropped whole when too little of it would remain):

1. base instructions [required, never cut]   ``prompts.BASE_INSTRUCTIONS``
2. tool notes [80]        ``prompts.tool_guidance``: each present tool's own ``guidance``
3. skills index [50]      names and descriptions only (``SkillCatalog.index_text``)
4. user instructions [65] ``~/.claude/CLAUDE.md`` (Claude Code's user folder, when read:
   ``claude_home``), then ``LOOM.md`` in the user's config dir
5. project instructions [72 / 71 / 70]  ``LOOM.md``, ``AGENTS.md``, ``CLAUDE.md`` (and
   ``.claude/CLAUDE.md``, ``CLAUDE.local.md``) of each folder from the workspace root down
   to ``cwd``, root first, each with its ``@path`` imports, under a heading with its path
   (the same file under two names is shown once), each capped at 6,000 tokens; then the
   ``.claude/rules/*.md`` without ``paths:`` [68]. Which files and in what order:
   :mod:`.instructions`.
6. environment [90]       workspace path, platform, date, git branch, ``git status
   --short`` at session start (at most 20 lines)
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import paths
from ..workspace import Workspace
from .instructions import RULES_DIR, PathRules, Rule, UserFolders, find_instructions, read_rules
from .prompts import BASE_INSTRUCTIONS, HasGuidance, tool_guidance
from .tokens import TokenCounter

if TYPE_CHECKING:
    from ..skills.catalog import SkillCatalog
    from ..tools.base import ToolSessionState

PRIORITY_ENVIRONMENT = 90
PRIORITY_TOOL_NOTES = 80
PRIORITY_PROJECT = {"LOOM.md": 72, "AGENTS.md": 71, "CLAUDE.md": 70, "CLAUDE.local.md": 70}
PRIORITY_RULES = 68
PRIORITY_USER_INSTRUCTIONS = 65
PRIORITY_SKILLS = 50

INSTRUCTION_FILE_MAX_TOKENS = 6000
GIT_STATUS_LINES = 20
DEFAULT_BUDGET_TOKENS = 12_000
# A part cut to less than this is not worth keeping: it is dropped instead.
MIN_CUT_TOKENS = 80
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class PromptComponent:
    name: str
    text: str
    priority: int
    required: bool = False
    # Cap applied before the budget (a 50 KB CLAUDE.md should not crowd out the rest).
    max_tokens: int | None = None
    # Where the full text lives, named in the note when the part is cut.
    source: str | None = None


@dataclass(frozen=True)
class AssemblyReport:
    budget_tokens: int
    total_tokens: int
    included: tuple[tuple[str, int], ...] = ()  # (name, tokens) in prompt order
    cut: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()


# --- cutting ---------------------------------------------------------------------------------

_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)")
_BLOCK_START = re.compile(r"\n(?=[ \t]*(?:[-*+][ \t]|\d+[.)][ \t]|#))")


_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "cf.", "vs.", "etc.", "mr.", "mrs.", "ms.", "dr.", "no.", "fig.",
                            "approx.", "incl.", "resp."})


def _ends_sentence(text: str, end: int) -> bool:
    """A period that is followed by a new sentence, not one inside "e.g. this" or "J. Smith"."""
    rest = text[end:].lstrip()
    if rest[:1].islower():
        return False
    word = text[:end].rsplit(None, 1)[-1].lower().strip("\"')]")
    if word in _ABBREVIATIONS:
        return False
    return not (len(word) == 2 and word[0].isalpha() and word[1] == ".")


def _boundaries(text: str) -> tuple[list[int], list[int]]:
    """Prefix lengths that end a paragraph, and those that end a sentence or list item."""
    paragraphs = sorted({m.start() for m in _PARAGRAPH_END.finditer(text)})
    sentence_ends = {m.end() for m in _SENTENCE_END.finditer(text) if _ends_sentence(text, m.end())}
    sentences = sorted(sentence_ends | {m.start() for m in _BLOCK_START.finditer(text)} | set(paragraphs))
    return paragraphs, sentences


def _longest_fitting(text: str, ends: list[int], max_tokens: int, counter: TokenCounter) -> int:
    """The largest end in ``ends`` whose prefix fits ``max_tokens`` (0 when none does)."""
    low, high, best = 0, len(ends) - 1, 0
    while low <= high:
        middle = (low + high) // 2
        if counter.count_text(text[: ends[middle]].rstrip()) <= max_tokens:
            best = ends[middle]
            low = middle + 1
        else:
            high = middle - 1
    return best


def cut_at_boundary(text: str, max_tokens: int, counter: TokenCounter) -> str | None:
    """The longest prefix of ``text`` within ``max_tokens`` that ends a paragraph or sentence.

    A paragraph end is preferred unless it would keep much less. None when not even
    the first sentence fits.
    """
    if counter.count_text(text) <= max_tokens:
        return text
    paragraphs, sentences = _boundaries(text)
    by_paragraph = _longest_fitting(text, paragraphs, max_tokens, counter)
    by_sentence = _longest_fitting(text, sentences, max_tokens, counter)
    end = by_paragraph if by_paragraph >= 0.7 * by_sentence else by_sentence
    if end <= 0:
        return None
    return text[:end].rstrip()


def _cut_component(component: PromptComponent, max_tokens: int, counter: TokenCounter,
                   original_tokens: int) -> PromptComponent | None:
    """``component`` shortened to ``max_tokens`` including a note; None when too little remains."""
    where = f" The full text is in {component.source}; read it when needed." if component.source else ""
    note_template = f"[{component.name} shortened to fit the prompt budget: about {{pct}}% shown.{where}]"
    room = max_tokens - counter.count_text(note_template.format(pct=100)) - 2
    if room < MIN_CUT_TOKENS:
        return None
    kept = cut_at_boundary(component.text, room, counter)
    if kept is None or counter.count_text(kept) < MIN_CUT_TOKENS:
        return None
    pct = max(1, min(99, round(100 * counter.count_text(kept) / max(1, original_tokens))))
    return replace(component, text=kept + _SEPARATOR + note_template.format(pct=pct))


def fit_components(components: Sequence[PromptComponent], budget_tokens: int,
                   counter: TokenCounter) -> tuple[str, AssemblyReport]:
    """Join ``components`` (in order) within ``budget_tokens``, cutting lowest priority first."""
    parts = [c for c in components if c.text.strip()]
    cut: list[str] = []
    dropped: list[str] = []
    for index, component in enumerate(parts):
        size = counter.count_text(component.text)
        if component.max_tokens is not None and size > component.max_tokens and not component.required:
            shorter = _cut_component(component, component.max_tokens, counter, size)
            if shorter is not None:
                parts[index] = shorter
                cut.append(component.name)
    sizes = {id(c): counter.count_text(c.text) for c in parts}
    separator = counter.count_text(_SEPARATOR)

    def total() -> int:
        return sum(sizes[id(c)] for c in parts) + separator * max(0, len(parts) - 1)

    order = sorted((c for c in parts if not c.required), key=lambda c: c.priority)
    for component in order:
        excess = total() - budget_tokens
        if excess <= 0:
            break
        position = parts.index(component)
        size = sizes[id(component)]
        shorter = _cut_component(component, size - excess, counter, size) if size - excess > 0 else None
        if shorter is not None:
            parts[position] = shorter
            sizes[id(shorter)] = counter.count_text(shorter.text)
            if component.name not in cut:
                cut.append(component.name)
        else:
            parts.pop(position)
            dropped.append(component.name)
            if component.name in cut:
                cut.remove(component.name)
    text = _SEPARATOR.join(c.text.strip() for c in parts)
    report = AssemblyReport(budget_tokens=budget_tokens, total_tokens=counter.count_text(text),
                            included=tuple((c.name, sizes[id(c)]) for c in parts),
                            cut=tuple(cut), dropped=tuple(dropped))
    return text, report


# --- the assembler -----------------------------------------------------------------------------

class ContextAssembler:
    def __init__(self, workspace: Workspace | Path | str, *, skills: SkillCatalog | None = None,
                 tools: Iterable[HasGuidance] | None = None, counter: TokenCounter | None = None,
                 budget_tokens: int = DEFAULT_BUDGET_TOKENS, user_config_dir: Path | str | None = None,
                 extra_components: Sequence[PromptComponent] = (), now: datetime | None = None,
                 base_instructions: str = BASE_INSTRUCTIONS, claude_home: Path | None = None,
                 cwd: Path | None = None) -> None:
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace.at(workspace)
        self.skills = skills
        # Whose notes go in the prompt. None: the tools of the agent this assembler serves
        # (the Agent fills them in before it builds the prompt); () for none.
        self.tools: tuple[HasGuidance, ...] | None = None if tools is None else tuple(tools)
        self.counter = counter or TokenCounter()
        self.budget_tokens = budget_tokens
        self.user_config_dir = Path(user_config_dir) if user_config_dir is not None else paths.config_dir()
        self.extra_components = tuple(extra_components)
        self.base_instructions = base_instructions
        self.claude_home = claude_home
        self.cwd = cwd if cwd is not None else Path.cwd()
        self.warnings: list[str] = []
        self.path_rules = PathRules(self.workspace.root, ())
        self._rules: tuple[Rule, ...] = ()
        self._instructions: list[PromptComponent] | None = None
        self._now = now
        self._prompt: str | None = None
        self._report: AssemblyReport | None = None

    def system_prompt(self) -> str:
        if self._prompt is None:
            self._prompt, self._report = fit_components(self.components(), self.budget_tokens, self.counter)
        return self._prompt

    @property
    def report(self) -> AssemblyReport:
        self.system_prompt()
        assert self._report is not None
        return self._report

    def components(self) -> list[PromptComponent]:
        parts = [PromptComponent("base instructions", self.base_instructions, 100, required=True)]
        notes = tool_guidance(self.tools or ())
        if notes:
            parts.append(PromptComponent("tool notes", notes, PRIORITY_TOOL_NOTES))
        if self.skills is not None:
            index = self.skills.index_text()
            if index:
                parts.append(PromptComponent("skills index", index, PRIORITY_SKILLS))
        parts.extend(self.instruction_components())
        parts.extend(self.extra_components)
        parts.append(PromptComponent("environment", self.environment_text(), PRIORITY_ENVIRONMENT))
        return parts

    # --- instruction files ---------------------------------------------------------------

    def subagent_prompt(self, own: str) -> str:
        """A sub-agent's system prompt: its ``own`` instructions (an agent file's body, or
        the general sub-agent's), then the same instruction files and rules the session
        reads — Claude Code gives its general-purpose and custom sub-agents the CLAUDE.md
        context too, so a project's "never touch generated/" holds in a delegated task."""
        parts = [PromptComponent("sub-agent instructions", own, 100, required=True),
                 *self.instruction_components()]
        text, _ = fit_components(parts, self.budget_tokens, self.counter)
        return text

    def subagent_path_rules(self) -> PathRules:
        """The ``paths:`` rules for a sub-agent: all of them still to give, as its
        conversation starts empty (what the parent was given, the child has not seen)."""
        self.instruction_components()
        return PathRules(self.workspace.root, self._rules)

    def instruction_components(self) -> list[PromptComponent]:
        """The instruction files and rules, found once (their warnings said once)."""
        if self._instructions is None:
            self._instructions = self._find_instruction_components()
        return list(self._instructions)

    def _find_instruction_components(self) -> list[PromptComponent]:
        folders = UserFolders(loom=self.user_config_dir, claude=self.claude_home)
        files, warnings = find_instructions(self.workspace.root, self.cwd, user_folders=folders,
                                            extra_roots=self.workspace.extra_dirs)
        parts: list[PromptComponent] = []
        for found in files:
            if found.kind == "user":
                parts.append(PromptComponent(
                    f"user instructions ({found.path})",
                    f"# User instructions: {found.path}\nThe user's personal instructions, for every project."
                    f"\n\n{found.text}",
                    PRIORITY_USER_INSTRUCTIONS, max_tokens=INSTRUCTION_FILE_MAX_TOKENS, source=str(found.path)))
            else:
                parts.append(PromptComponent(
                    f"project instructions ({found.path})",
                    f"# Project instructions: {found.path}\nThe user's instructions for this project; they take "
                    f"precedence over the general instructions above.\n\n{found.text}",
                    PRIORITY_PROJECT.get(found.path.name, 70), max_tokens=INSTRUCTION_FILE_MAX_TOKENS,
                    source=str(found.path)))
        rule_folders = [folder / "rules" for folder in (self.claude_home,) if folder is not None]
        rule_folders.append(self.workspace.root / RULES_DIR)
        rules = read_rules(rule_folders, allowed=[self.workspace.root, *self.workspace.extra_dirs,
                                                  *(f for f in (self.claude_home, self.user_config_dir) if f)],
                           warnings=warnings)
        for rule in rules:
            if not rule.globs:
                parts.append(PromptComponent(
                    f"project rule ({rule.path})", f"# Rule: {rule.path}\n\n{rule.text}", PRIORITY_RULES,
                    max_tokens=INSTRUCTION_FILE_MAX_TOKENS, source=str(rule.path)))
        self._rules = tuple(rules)
        self.path_rules = PathRules(self.workspace.root, rules)
        self.warnings.extend(warnings)
        return parts

    # --- environment ---------------------------------------------------------------------

    def environment_text(self) -> str:
        now = self._now or datetime.now().astimezone()
        lines = ["# Environment",
                 f"- Workspace: {self.workspace.root} (relative paths start here)",
                 f"- Platform: {platform.system()} {platform.release()} ({platform.machine()})",
                 f"- Date: {now.strftime('%Y-%m-%d')}"]
        status = _git_status(self.workspace.root)
        if isinstance(status, str):
            lines.append(f"- Git status not read: {status}")
        elif status is None:
            lines.append("- Not a git repository")
        else:
            branch, changes = status
            lines.append(f"- Git branch: {branch}")
            lines.append(_format_status(changes))
        return "\n".join(lines)


def _git_status(root: Path) -> tuple[str, list[str]] | str | None:
    """(branch line, changed paths) from one ``git status --short --branch``; None outside
    git; why it was not read when the repository's own config could make git run a
    program (a hostile clone's ``core.fsmonitor`` or clean filter would run the moment
    Loom opens, before the user was asked anything)."""
    import shutil

    from ..permissions.git_config import git_environment, repository_doubt

    git = shutil.which("git")
    if git is None:
        return None
    real_root = root.resolve()
    try:
        doubt = repository_doubt(git, root, lambda path: path.resolve().is_relative_to(real_root))
    except (OSError, subprocess.SubprocessError) as error:
        doubt = f"its config could not be checked ({error})"
    if doubt:
        return doubt
    try:
        # --no-optional-locks: reading the status must not rewrite the user's index (a stat refresh).
        out = subprocess.run([git, "--no-optional-locks", "-c", "core.quotepath=off", "status", "--short",
                              "--branch"], cwd=root, env=git_environment(os.environ),
                             capture_output=True, text=True, timeout=3, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    branch = "unknown"
    if lines and lines[0].startswith("## "):
        branch = _branch_description(lines.pop(0)[3:])
    return branch, lines


def _branch_description(header: str) -> str:
    """``main...origin/main [ahead 1]`` -> ``main (tracking origin/main, ahead 1)``."""
    for prefix in ("No commits yet on ", "Initial commit on "):
        if header.startswith(prefix):
            return f"{header[len(prefix):]} (no commits yet)"
    if header.startswith("HEAD (no branch)"):
        return "detached HEAD"
    name, _, rest = header.partition("...")
    if not rest:
        return name
    upstream, _, state = rest.partition(" ")
    state = state.strip().strip("[]")
    return f"{name} (tracking {upstream}{', ' + state if state else ''})"


def _format_status(lines: list[str]) -> str:
    if not lines:
        return "- Git status at session start: clean"
    shown = lines[:GIT_STATUS_LINES]
    text = [f"- Git status at session start ({len(lines)} changed path{'s' if len(lines) != 1 else ''}; "
            "it may have changed since):"]
    text += [f"    {line}" for line in shown]
    if len(lines) > len(shown):
        text.append(f"    ... and {len(lines) - len(shown)} more")
    return "\n".join(text)


# --- changing facts, for the end of the conversation ---------------------------------------------

_TODO_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


def render_reminder(*, stale_files: Sequence[str] = (), todos: Sequence[Mapping[str, Any]] | None = None,
                    notes: Sequence[str] = ()) -> str:
    """A short note on the current state for the end of the conversation; "" when empty."""
    lines: list[str] = []
    if stale_files:
        lines.append("- Changed on disk since you last read them (read them again before editing): "
                     + ", ".join(stale_files))
    if todos is not None:
        if todos:
            done = sum(1 for t in todos if t.get("status") == "completed")
            lines.append(f"- Todo list ({done} of {len(todos)} done):")
            lines += [f"    {_TODO_MARKS.get(str(t.get('status')), '[ ]')} {t.get('content', '')}" for t in todos]
        else:
            lines.append("- The todo list is empty.")
    lines += [f"- {note.strip()}" for note in notes if note.strip()]
    if not lines:
        return ""
    return ("<system-reminder>\nAn automatic note from Loom about the current state, not a message "
            "from the user.\n" + "\n".join(lines) + "\n</system-reminder>")


@dataclass
class ChangingFacts:
    """Remembers what was already reported, so each change is mentioned once."""

    workspace: Workspace
    _reported: set[tuple[str, int, int]] = field(default_factory=set, init=False)

    def stale_files(self, state: ToolSessionState) -> list[str]:
        """Files read in this session that changed on disk since, not yet reported."""
        stale: list[str] = []
        for key in sorted(state.read_files):
            path = Path(key)
            if not state.changed_since_read(path):
                continue
            try:
                st = path.stat()
                signature = (key, st.st_mtime_ns, st.st_size)
                label = self.workspace.relative(path)
            except OSError:
                signature = (key, -1, -1)
                label = f"{self.workspace.relative(path)} (deleted)"
            if signature in self._reported:
                continue
            self._reported.add(signature)
            stale.append(label)
        return stale

    def collect(self, state: ToolSessionState, *, include_todos: bool = False,
                notes: Sequence[str] = ()) -> str:
        return render_reminder(stale_files=self.stale_files(state),
                               todos=list(state.todos) if include_todos else None, notes=notes)
