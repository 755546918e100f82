"""Decides whether a tool call may run, must be asked about, or is refused.

Modes
    ``default``       reads inside the workspace are allowed; edits and commands ask.
    ``accept-edits``  edits inside the workspace are allowed too.
    ``plan``          read-only: anything that writes or runs is denied (read-only
                      built-in commands such as ``git status`` still run).
    ``bypass``        everything is allowed, with two exceptions kept on purpose:
                      file tools never write outside the workspace (and its
                      ``--add-dir`` folders) unless a rule names the path, and explicit
                      deny/ask rules still apply (a command whose parts cannot all be
                      seen, such as ``eval``, then asks). bash itself is not fenced in:
                      a shell can write anywhere, so its redirections are not checked.

Shift+Tab cycles ``default -> accept-edits -> plan -> default``; ``bypass`` joins the
cycle (after ``plan``) only when the session was allowed to use it (see
:func:`next_mode`), so one key press too many never turns every check off.

Rules come in layers (built-in defaults, the layers the application reads from its
settings files, CLI flags, saved and session answers). Across all layers
deny beats ask beats allow; a rule beats the mode's default answer, except that plan
mode refuses anything that writes or runs even when an allow rule matches. The
built-in defaults ask before any edit of ``.git/`` or of Loom's own settings files, so
that an agent in ``accept-edits`` cannot grant itself more permissions or plant a git
hook.

Every path is resolved (``..``, ``~``, symlinks) before it is checked. Outside the
workspace, reading asks and writing is denied unless a rule names the path (relative
rule patterns only cover the workspace; use ``/abs/**`` or ``~/dir/**``) or it lies in
an ``--add-dir`` folder.

A bash command is split into the simple commands it would run (:mod:`.shell`); it is
allowed only when every one of them is, and output redirections count as file writes
(checked with the file tools' rules and the mode). A small set of read-only commands
(``ls``, ``cat``, ``grep``, ``git status``...) runs without asking as long as everything
it would read resolves inside the workspace, judged as bash will run it
(:mod:`.expansion`: globs and tildes expanded, ``cd`` followed logically, /proc paths
refused, symlink-following walks checked), its command word is not a program inside the
workspace, and, for git, the repository's config names no program (:mod:`.git_config`).
Commands the analysis cannot follow are asked about. "Always allow" saves one rule per
part that asked: ``bash(npm test:*)`` when the second word names a subcommand, else the
exact command.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from ..workspace import Workspace
from .commands import (
    cd_target,
    deny_candidates,
    read_only_command,
    runs_hidden_code,
    strip_wrappers,
)
from .expansion import (
    Unknowable,
    expand_glob,
    expand_tilde,
    logical_cd,
    outward_symlink,
    physical,
)
from .git_config import repository_doubt
from .paths import PathPattern, compile_path_pattern, rule_path
from .rules import (
    READ_GROUP,
    READ_TOOLS,
    WRITE_GROUPS,
    WRITE_TOOLS,
    Behavior,
    Rule,
    is_rule_domain,
    parse_rule,
)
from .shell import ShellDoubt, SimpleCommand, Word, analyze, quote_words
from .targets import CommandRun, FileAccess, PermissionTarget, UrlFetch

__all__ = [
    "DEFAULT_LAYER",
    "MODES",
    "PermissionDecision",
    "PermissionManager",
    "PermissionMode",
    "Rule",
    "RuleLayer",
    "next_mode",
    "parse_rule",
    "suggest_command_rule",
]

PermissionMode = Literal["default", "accept-edits", "plan", "bypass"]
MODES: tuple[PermissionMode, ...] = ("default", "accept-edits", "plan", "bypass")
# How much each mode lets through; a sub-agent's mode can never be wider than its parent's.
_WIDTH: dict[str, int] = {"plan": 0, "default": 1, "accept-edits": 2, "bypass": 3}
# Tools without a target that stay usable while planning: they change nothing outside
# the session (a sub-agent inherits plan mode through child()).
PLAN_SAFE_TOOLS: frozenset[str] = frozenset({"todo_write", "task", "skill"})
# Redirection targets that are not files anyone cares about.
_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
# Second words that name a subcommand (`npm test`, `git commit`), for "always allow".
_NO_PREFIX_SUGGESTION = frozenset({"rm", "rmdir", "mv", "cp", "dd", "chmod", "chown", "chgrp",
                                   "sudo", "su", "doas", "kill", "pkill", "killall", "ln",
                                   "truncate", "shred", "eval", "exec", "source", ".", "cd",
                                   # their second word is a file or a pattern
                                   "ls", "cat", "head", "tail", "wc", "grep", "rg", "find",
                                   "diff", "stat", "du", "echo", "which", "touch", "mkdir"})
_MAX_CWDS = 32
# Wrappers in front of a read-only command are programs found on PATH too.
_PATH_WRAPPERS = frozenset({"timeout", "nice", "nohup"})
# Read-only command words bash runs itself, without a PATH lookup.
_SHELL_BUILTINS = frozenset({"echo", "pwd", "time"})

SOURCE_DEFAULTS = "defaults"
# "Allow always in this project" answers (where they are kept is the saver's business).
SOURCE_SAVED = "saved answers"
SOURCE_CLI = "cli"
SOURCE_SESSION = "session"


def next_mode(mode: str, *, include_bypass: bool = False) -> PermissionMode:
    """The mode Shift+Tab switches to after ``mode``."""
    cycle = MODES if include_bypass else tuple(m for m in MODES if m != "bypass")
    if mode not in cycle:
        return cycle[0]
    return cycle[(cycle.index(mode) + 1) % len(cycle)]


@dataclass(frozen=True)
class PermissionDecision:
    behavior: Literal["allow", "deny", "ask"]
    # One line: which rule, mode or check decided.
    reason: str
    # What "always allow" would save (one rule per part of a compound command).
    suggested_rules: tuple[str, ...] = ()
    # For headless runs: which flag or rule would allow it.
    hint: str = ""

    @property
    def allowed(self) -> bool:
        return self.behavior == "allow"


@dataclass(frozen=True)
class RuleLayer:
    """One source of rules."""

    source: str
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()


# Git runs commands named in a repository's config (core.fsmonitor, diff drivers), and
# a `.git` file can point git at any folder: edits there, at any depth, always ask, as do
# edits of Loom's own permission settings.
DEFAULT_LAYER = RuleLayer(
    SOURCE_DEFAULTS,
    ask=("edit(**/.git)", "edit(.loom/settings.toml)", "edit(.loom/settings.local.toml)"),
)


@dataclass(frozen=True)
class _Compiled:
    behavior: Behavior
    rule: Rule
    source: str
    path: PathPattern | None

    @property
    def label(self) -> str:
        return f"rule {self.rule.text} from {self.source}"


@dataclass(frozen=True)
class _Verdict:
    behavior: Behavior
    reason: str
    from_rule: bool = False
    suggestions: tuple[str, ...] = ()
    # For headless runs: what would turn this into an allow. ``hint`` is the whole
    # sentence when there are no suggestions; otherwise the suggestions become
    # ``--allow`` flags and ``alt`` is another flag that would do (``--add-dir X``).
    hint: str = ""
    alt: str = ""
    # An ask that an allow rule for the command does not answer: the danger lies in
    # what the command would run (a workspace program, the repository's git config),
    # not in which command it is.
    firm: bool = False


_ORDER = {"allow": 0, "ask": 1, "deny": 2}


def _worst(verdicts: Sequence[_Verdict], empty_reason: str) -> _Verdict:
    if not verdicts:
        return _Verdict("allow", empty_reason)
    worst = max(verdicts, key=lambda v: _ORDER[v.behavior])
    return worst


@dataclass
class _RuleStore:
    """Rules shared by a manager and its sub-agents' managers."""

    compiled: list[_Compiled] = field(default_factory=list)


class PermissionManager:
    def __init__(self, workspace: Workspace, *, mode: PermissionMode = "default",
                 layers: Sequence[RuleLayer] = (), save_rules: Callable[[Sequence[str]], None] | None = None,
                 include_defaults: bool = True) -> None:
        self.workspace = workspace
        self._parent: PermissionManager | None = None
        self._mode: PermissionMode = _check_mode(mode)
        self._store = _RuleStore()
        # Keeps "allow always in this project" rules for later sessions; the application
        # decides where (None: such answers cannot be saved, only used this session).
        self._save_rules = save_rules
        all_layers = list(layers)
        if include_defaults and not any(layer.source == SOURCE_DEFAULTS for layer in all_layers):
            all_layers.insert(0, DEFAULT_LAYER)
        for layer in all_layers:
            self._add_layer(layer)

    # -- mode -------------------------------------------------------------------------

    @property
    def mode(self) -> PermissionMode:
        if self._parent is not None:
            parent = self._parent.mode
            return parent if _WIDTH[parent] < _WIDTH[self._mode] else self._mode
        return self._mode

    @mode.setter
    def mode(self, value: PermissionMode) -> None:
        value = _check_mode(value)
        if self._parent is not None and _WIDTH[value] > _WIDTH[self._parent.mode]:
            raise ValueError(f"a sub-agent cannot use mode '{value}', wider than its parent's "
                             f"'{self._parent.mode}'")
        self._mode = value

    # -- rules ------------------------------------------------------------------------

    def _add_layer(self, layer: RuleLayer) -> None:
        compiled = []
        by_behavior: tuple[tuple[Behavior, tuple[str, ...]], ...] = (
            ("deny", layer.deny), ("ask", layer.ask), ("allow", layer.allow))
        for behavior, texts in by_behavior:
            for text in texts:
                compiled.append(self._compile(behavior, text, layer.source))
        self._store.compiled.extend(compiled)

    def _compile(self, behavior: Behavior, text: str, source: str) -> _Compiled:
        try:
            rule = parse_rule(text)
        except ValueError as exc:
            raise ValueError(f"{exc} (in {source})") from None
        path = compile_path_pattern(rule.specifier, self.workspace.root) \
            if rule.path_rule and rule.specifier else None
        return _Compiled(behavior, rule, source, path)

    def allow_for_session(self, rules: Iterable[str]) -> None:
        """Allow these rules until the session ends ("allow always" for this session)."""
        if self._parent is not None:
            self._parent.allow_for_session(rules)
            return
        self._add_layer(RuleLayer(SOURCE_SESSION, allow=tuple(rules)))

    def allow_for_project(self, rules: Iterable[str]) -> None:
        """Allow these rules now and in later sessions (kept by the ``save_rules``
        callable given at construction). Raises ValueError when they cannot be saved."""
        if self._parent is not None:
            self._parent.allow_for_project(rules)
            return
        texts = tuple(rules)
        for text in texts:  # validate everything before saving anything
            self._compile("allow", text, SOURCE_SAVED)
        if self._save_rules is None:
            raise ValueError("this session has nowhere to save rules")
        self._save_rules(texts)
        self._add_layer(RuleLayer(SOURCE_SAVED, allow=texts))

    def effective_rules(self) -> list[tuple[str, str, str]]:
        """(behavior, rule, source) for every rule in force, layer by layer."""
        return [(c.behavior, c.rule.text, c.source) for c in self._store.compiled]

    def child(self) -> PermissionManager:
        """A manager for a sub-agent: the same rules and mode, followed live, never wider."""
        kid = PermissionManager.__new__(PermissionManager)
        kid.workspace = self.workspace
        kid._parent = self
        kid._mode = self.mode
        kid._store = self._store
        kid._save_rules = self._save_rules
        return kid

    def _rules_for(self, tool: str, behavior: Behavior, *, write: bool | None = None) -> list[_Compiled]:
        return [c for c in self._store.compiled
                if c.behavior == behavior and c.rule.names_tool(tool, write=write)]

    # -- the check --------------------------------------------------------------------

    def check(self, tool_name: str, target: PermissionTarget | None, *, is_read_only: bool,
              cwd: Path | None = None) -> PermissionDecision:
        tool = tool_name.lower()
        if target is None:
            verdict = self._check_untargeted(tool, is_read_only)
        elif isinstance(target, FileAccess):
            verdict = self._check_files(tool, target, cwd)
        elif isinstance(target, CommandRun):
            verdict = self._check_command(tool, target, cwd)
        elif isinstance(target, UrlFetch):
            verdict = self._check_url(tool, target)
        else:  # pragma: no cover - PermissionTarget is a closed union
            verdict = _Verdict("ask", f"unknown permission target {type(target).__name__}")
        return PermissionDecision(verdict.behavior, _one_line(verdict.reason),
                                  verdict.suggestions if verdict.behavior == "ask" else (),
                                  verdict.hint if verdict.behavior != "allow" else "")

    def _bare_rule(self, tool: str, behavior: Behavior, write: bool | None = None) -> _Compiled | None:
        return next((c for c in self._rules_for(tool, behavior, write=write)
                     if c.rule.specifier is None), None)

    def _check_untargeted(self, tool: str, is_read_only: bool) -> _Verdict:
        behavior: Behavior
        for behavior in ("deny", "ask"):
            hit = self._bare_rule(tool, behavior)
            if hit:
                return _Verdict(behavior, f"{tool} is {behavior_word(behavior)} by "
                                f"{hit.label}", True, hint=_remove_hint(hit))
        if self.mode == "plan" and not is_read_only and tool not in PLAN_SAFE_TOOLS:
            return _Verdict("deny", f"plan mode: {tool} may change things and is not available "
                            "while planning (read-only); present the plan instead",
                            hint="--permission-mode default")
        allow = self._bare_rule(tool, "allow")
        return _Verdict("allow", allow.label if allow else f"{tool} needs no permission")

    # -- network ----------------------------------------------------------------------

    def _check_url(self, tool: str, target: UrlFetch) -> _Verdict:
        """Fetching asks in every mode but bypass (what is sent out in a URL cannot be
        taken back), unless a rule names the host."""
        host = url_host(target.url)
        if not host:
            return _Verdict("ask", f"cannot tell which host {target.url!r} names")
        behavior: Behavior
        for behavior in ("deny", "ask", "allow"):
            hit = next((c for c in self._rules_for(tool, behavior) if c.rule.matches_host(host)), None)
            if hit:
                return _Verdict(behavior, f"fetching from {host} is {behavior_word(behavior)} by {hit.label}",
                                True, hint=_remove_hint(hit))
        if self.mode == "bypass":
            return _Verdict("allow", "bypass mode: everything is allowed")
        if not is_rule_domain(host):
            return _Verdict("ask", f"fetching from {host!r} needs approval (no rule can name that host)")
        rule = f"{tool}(domain:{host})"
        return _Verdict("ask", f"fetching from {host} needs approval", suggestions=(rule,),
                        hint=f"--allow {shlex.quote(rule)}")

    # -- files ------------------------------------------------------------------------

    def _check_files(self, tool: str, target: FileAccess, cwd: Path | None) -> _Verdict:
        root = self.workspace.root
        if not target.paths:
            return self._check_path(tool, {tool}, str(root), target.write, root)
        # File tools resolve relative paths from the root, while `cwd` follows bash's
        # `cd`: check against both, so a disagreement can only make the answer stricter.
        bases = [root] if cwd is None or Path(cwd) == root else [root, Path(cwd)]
        verdicts = [self._check_path(tool, {tool}, raw, target.write, base)
                    for raw in target.paths for base in bases]
        return _combine(verdicts)

    def _check_path(self, tool: str, rule_tools: set[str], raw: str, write: bool,
                    base: Path) -> _Verdict:
        """One path read or written by ``tool``; ``rule_tools`` are the tool names whose
        rules apply (a bash redirection is checked against every file tool's rules)."""
        ws = self.workspace
        try:
            resolved = ws.resolve(raw, base)
        except (OSError, ValueError) as exc:
            return _Verdict("ask", f"cannot resolve path {raw!r}: {exc}")
        root = ws.root
        inside = ws.contains(resolved)
        shown = ws.relative(resolved)
        action = "writing" if write else "reading"

        def hits(behavior: Behavior) -> _Compiled | None:
            for name in rule_tools:
                for c in self._rules_for(name, behavior, write=write):
                    if self._path_rule_matches(c, resolved, inside):
                        return c
            return None

        deny = hits("deny")
        if deny:
            return _Verdict("deny", f"{action} {shown} is denied by {deny.label}", True,
                            hint=_remove_hint(deny))
        if write and self.mode == "plan":
            return _Verdict("deny", f"plan mode: {action} {shown} is not allowed while planning "
                            "(read-only); present the plan instead", hint="--permission-mode default")
        ask = hits("ask")
        if ask:
            return _Verdict("ask", f"{action} {shown} needs approval ({ask.label})", True,
                            hint=f"{ask.label} always asks; a headless run cannot allow it")
        if write and self.mode != "bypass" and resolved.parent in _path_folders(base):
            # A program put there would run in place of a system one (`ls`, `git`...).
            return _Verdict("ask", f"{action} {shown} puts a file in {resolved.parent}, a "
                            "folder on PATH; it needs approval", firm=True,
                            hint="only --permission-mode bypass writes into a folder on PATH "
                            "without asking")
        allow = hits("allow")
        if allow:
            return _Verdict("allow", allow.label, True)
        suggestion = f"{tool}({rule_path(resolved, root)})"
        allow_flag = f"--allow {shlex.quote(suggestion)}"
        suggestions = (suggestion,) if _valid_rule(suggestion) else ()
        if inside:
            if not write:
                return _Verdict("allow", "reads inside the workspace are allowed")
            if self.mode in ("accept-edits", "bypass"):
                return _Verdict("allow", f"{self.mode} mode: edits inside the workspace are allowed")
            return _Verdict("ask", f"default mode: {action} {shown} needs approval",
                            suggestions=suggestions, hint=allow_flag,
                            alt="--permission-mode accept-edits")
        folder = resolved if _is_dir(resolved) else resolved.parent
        add_dir = f"--add-dir {shlex.quote(str(folder))}"
        if not write:
            if self.mode == "bypass":
                return _Verdict("allow", "bypass mode: reads outside the workspace are allowed")
            return _Verdict("ask", f"{shown} is outside the workspace: reading it needs approval",
                            suggestions=suggestions, hint=allow_flag, alt=add_dir)
        return _Verdict("deny", f"{shown} is outside the workspace: writing there is not permitted "
                        "(no rule or --add-dir allows it)", hint=f"{add_dir} or {allow_flag}")

    def _path_rule_matches(self, c: _Compiled, resolved: Path, inside: bool) -> bool:
        if c.rule.specifier is None:
            # A bare allow rule covers the workspace; outside paths need a rule naming them.
            return inside or c.behavior != "allow"
        if c.path is None:
            return False
        strict = c.behavior != "allow"
        return c.path.matches(resolved, self.workspace.root, outside_too=strict, loose=strict)

    # -- commands ---------------------------------------------------------------------

    def _check_command(self, tool: str, target: CommandRun, cwd: Path | None) -> _Verdict:
        base = Path(target.cwd) if target.cwd else (cwd or self.workspace.root)
        behavior: Behavior
        for behavior in ("deny", "ask"):
            hit = self._bare_rule(tool, behavior)
            if hit:
                return _Verdict(behavior, f"{tool} is {behavior_word(behavior)} by "
                                f"{hit.label}", True, hint=_remove_hint(hit))
        ctx = _CommandContext(
            tool=tool,
            deny=[c for c in self._rules_for(tool, "deny") if c.rule.specifier is not None],
            ask=[c for c in self._rules_for(tool, "ask") if c.rule.specifier is not None],
            allow=[c for c in self._rules_for(tool, "allow") if c.rule.specifier is not None],
            everything=self._everything_allowed(tool),
        )
        if "\0" in target.command:
            return _Verdict("ask", "the command contains a NUL byte; it needs approval")
        analysis = analyze(target.command)
        # Deny rules first, over whatever could be parsed, even when the rest could not.
        ruled = [v for v in (self._rule_verdict(ctx, cmd) for cmd in analysis.commands) if v]
        if any(v.behavior == "deny" for v in ruled):
            return _combine(ruled)
        if analysis.doubt:
            return self._doubtful(ctx, analysis.doubt)
        cwds, cwd_known = self._possible_cwds(analysis.commands, base)
        verdicts: list[_Verdict] = []
        for cmd in analysis.commands:
            verdicts.append(self._check_simple(ctx, cmd, cwds, cwd_known))
            verdicts.extend(self._check_redirects(ctx, cmd, cwds, cwd_known))
        if not analysis.commands:
            return _Verdict("allow", "empty command")
        return _combine(verdicts)

    def _everything_allowed(self, tool: str) -> str:
        """Why every command is allowed (bypass or a bare ``bash`` rule), or ''."""
        if self.mode == "bypass":
            return "bypass mode: everything is allowed"
        bare = self._bare_rule(tool, "allow")
        return bare.label if bare else ""

    def _doubtful(self, ctx: _CommandContext, doubt: str) -> _Verdict:
        if self.mode == "plan":
            return _Verdict("deny", f"plan mode: this command cannot be checked to be read-only "
                            f"({doubt}); only read-only commands run while planning",
                            hint="--permission-mode default")
        if ctx.everything and not (ctx.deny or ctx.ask):
            return _Verdict("allow", ctx.everything)
        return _Verdict("ask", f"cannot check this command safely ({doubt}); it needs approval",
                        hint="only --permission-mode bypass or the rule 'bash' allows a command "
                        "that cannot be analysed")

    def _rule_verdict(self, ctx: _CommandContext, cmd: SimpleCommand) -> _Verdict | None:
        """Deny or ask from an explicit rule, looking through sudo, env, xargs and co."""
        if not cmd.words:
            return None
        candidates = deny_candidates(cmd.words, cmd.assignments)
        checks: tuple[tuple[Behavior, list[_Compiled]], ...] = (("deny", ctx.deny), ("ask", ctx.ask))
        for behavior, rules in checks:
            for c in rules:
                if any(c.rule.matches_words(words) for words in candidates):
                    return _Verdict(behavior, f"`{cmd.display}` is "
                                    f"{behavior_word(behavior)} by {c.label}", True,
                                    hint=_remove_hint(c) if behavior == "deny" else
                                    f"{c.label} always asks; a headless run cannot allow it")
        return None

    def _check_simple(self, ctx: _CommandContext, cmd: SimpleCommand, cwds: list[Path],
                      cwd_known: bool) -> _Verdict:
        shown = cmd.display
        if not cmd.words and not cmd.assignments:
            return _Verdict("allow", "redirection only")
        ruled = self._rule_verdict(ctx, cmd)
        if ruled is not None:
            return ruled
        words = strip_wrappers(cmd.words)
        hidden = runs_hidden_code(words)
        if hidden and (ctx.deny or ctx.ask) and self.mode != "plan":
            return _Verdict("ask", f"`{shown}`: {hidden}, so the deny and ask rules cannot be "
                            "checked; it needs approval")
        if hidden and not ctx.everything and self.mode != "plan":
            # A prefix allow rule (`bash(printf:*)`) was meant for the command, not for
            # whatever code it ends up running.
            return _Verdict("ask", f"`{shown}`: {hidden}; it needs approval",
                            hint="only the rule 'bash' or --permission-mode bypass allows code this "
                            "check cannot see")
        read_only = None if cmd.assignments else self._read_only_verdict(cmd, words, cwds, cwd_known)
        if read_only is not None and read_only.from_rule and read_only.behavior != "allow":
            return read_only  # a deny/ask rule on a file it reads beats any allow rule
        if read_only is not None and read_only.firm and not ctx.everything:
            return read_only
        if self.mode == "plan":
            if read_only is not None:
                return read_only
            return _Verdict("deny", f"plan mode: `{shown}` may run or change things; only "
                            "read-only commands run while planning — present the plan instead",
                            hint="--permission-mode default")
        if ctx.everything:
            return _Verdict("allow", ctx.everything)
        full = tuple(w.text for w in cmd.assignments) + tuple(w.text for w in words)
        if words and words[0].literal:
            for c in ctx.allow:
                if c.rule.matches_words(full):
                    return _Verdict("allow", c.label, True)
        suggestions = (suggest_command_rule(cmd, ctx.tool),) if words else ()
        hint = " ".join(f"--allow {shlex.quote(s)}" for s in suggestions)
        if read_only is not None:
            if read_only.behavior == "ask":
                return _Verdict("ask", read_only.reason, suggestions=suggestions, hint=hint)
            return read_only
        cd = self._cd_verdict(cmd, cwds, cwd_known)
        if cd is not None:
            return cd
        return _Verdict("ask", f"{self.mode} mode: running `{shown}` needs approval",
                        suggestions=suggestions, hint=hint or "only the rule 'bash' or "
                        "--permission-mode bypass allows setting shell variables")

    def _read_only_verdict(self, cmd: SimpleCommand, words: Sequence[Word], cwds: list[Path],
                           cwd_known: bool) -> _Verdict | None:
        """For a built-in read-only command: allow, or ask/deny for the files it reads.

        The words are checked as bash will run them: tildes and globs expanded in every
        directory the command may run in, paths resolved the way the shell's kernel calls
        will, the program the command word names looked up on PATH, and for git the
        repository's config read for keys that name programs."""
        if read_only_command(words) is None:
            return None
        shown = cmd.display
        if any(w.glob_parent_dots for w in words):
            return _Verdict("ask", f"`{shown}` has a pattern that may expand to '..'")
        verdicts: list[_Verdict] = []
        for base in cwds:
            try:
                expanded, listed = _expand_words(words, base)
            except Unknowable as exc:
                return _Verdict("ask", f"`{shown}`: {exc}")
            check = read_only_command(expanded)
            if check is None:
                return None  # what it expands to is not read-only (a file named -delete...)
            paths = [os.path.expanduser(p) if p.startswith("~") else p for p in check.paths]
            if not cwd_known and (check.reads_cwd or listed or
                                  any(not p.startswith("/") for p in paths)):
                return _Verdict("ask", f"`{shown}` reads relative paths after a change of "
                                "directory this check cannot follow")
            program = self._program_doubt(cmd, words, base)
            if program:
                return _Verdict("ask", f"`{shown}`: {program}", firm=True)
            reads = list(listed) + paths + ([str(base)] if check.reads_cwd else [])
            resolved_reads: dict[str, Path] = {}
            for raw in reads:
                try:
                    resolved = resolved_reads[raw] = physical(raw, base)
                except Unknowable as exc:
                    return _Verdict("ask", f"`{shown}`: {exc}")
                verdicts.append(self._check_path("read_file", {*READ_TOOLS, READ_GROUP},
                                                 str(resolved), False, base))
            if check.follows:
                # The trees it walks: the files it names, or the working directory when
                # none of its words (after a grep pattern) names an existing file.
                named = [resolved_reads[p] for p in paths[1 if check.pattern_first else 0:]]
                tops = [p for p in named if os.path.lexists(p)]
                if not tops and check.reads_cwd:
                    tops = [resolved_reads[str(base)]]
                outward = outward_symlink(tops, self.workspace.contains)
                if outward:
                    return _Verdict("ask", f"`{shown}` follows symlinks and {outward}")
            if expanded[0].text == "git":
                doubt = self._git_doubt(base)
                if doubt:
                    return _Verdict("ask", f"`{shown}`: {doubt}; it needs approval", firm=True,
                                    hint="only --permission-mode bypass or the rule 'bash' "
                                    "runs git with this repository's config unchecked")
        worst = _worst(verdicts, "")
        if worst.behavior == "allow":
            return _Verdict("allow", f"`{shown}` is a read-only command")
        return _Verdict(worst.behavior, f"`{shown}`: {worst.reason}", worst.from_rule,
                        hint=worst.hint)

    def _program_doubt(self, cmd: SimpleCommand, words: Sequence[Word], cwd: Path) -> str:
        """Why a command word of this read-only command (or of a wrapper in front of it)
        may run a program from the workspace rather than the system's, or ''."""
        names = [w.text for w in cmd.words[:len(cmd.words) - len(words)]
                 if w.text in _PATH_WRAPPERS] + [words[0].text]
        for name in names:
            if name in _SHELL_BUILTINS:
                continue
            try:
                found = find_program(name, cwd)
            except Unknowable as exc:
                return str(exc)
            if found is not None and self.workspace.contains(found):
                return (f"'{name}' would run {self.workspace.relative(found)}, a program "
                        "inside the workspace (a folder on PATH), not the system's")
        return ""

    def _git_doubt(self, cwd: Path) -> str:
        try:
            folder = physical(str(cwd), Path("/"))
            git = find_program("git", cwd)
        except Unknowable as exc:
            return str(exc)
        if git is None:
            return ""  # no git: the command fails without running anything
        if not folder.is_dir():
            return f"it would run in {cwd}, which does not exist yet, so its git config cannot be read"
        return repository_doubt(str(git), folder, self.workspace.contains)

    def _cd_verdict(self, cmd: SimpleCommand, cwds: list[Path], cwd_known: bool) -> _Verdict | None:
        try:
            target = cd_target(cmd.words)
        except ShellDoubt:
            return None
        if target is None or not cwd_known:
            return None
        for base in cwds:
            for nxt in self._cd_destinations(target, base):
                try:
                    real = physical(str(nxt), Path("/"))
                except Unknowable:
                    return None
                if not (self.workspace.contains(nxt) and self.workspace.contains(real)):
                    return None
        return _Verdict("allow", "changing directory inside the workspace")

    def _cd_destinations(self, target: str, base: Path) -> list[Path]:
        """Where ``cd target`` from the logical ``base`` may land: bash's logical answer
        (``..`` taken as text) and, should that fail, the physical one. Raises ShellDoubt."""
        raw_target = target
        try:
            target = expand_tilde(target, target, base)
        except Unknowable as exc:
            raise ShellDoubt(str(exc)) from None
        if os.environ.get("CDPATH") and not target.startswith(("/", "./", "../")) \
                and target not in (".", ".."):
            raise ShellDoubt(f"'cd {raw_target}' may go through $CDPATH, which this check "
                             "does not follow")
        logical = logical_cd(base, target)
        try:
            real = physical(target, base)
        except Unknowable as exc:
            raise ShellDoubt(str(exc)) from None
        return [logical] if real == logical else [logical, real]

    def _possible_cwds(self, commands: Sequence[SimpleCommand], base: Path) -> tuple[list[Path], bool]:
        """Every directory a command might run in, as bash names it (logically). A ``cd``
        anywhere (even in a subshell or after ``||``) adds its target for the whole line:
        over-approximating keeps a relative path from being checked against the wrong
        folder."""
        cwds = [base]
        for cmd in commands:
            if cmd.words and cmd.words[0].text in ("source", "."):
                return cwds, False  # a sourced script may change directory
            try:
                target = cd_target(cmd.words)
                if target is None:
                    continue
                for current in list(cwds):
                    for nxt in self._cd_destinations(target, current):
                        if nxt not in cwds:
                            cwds.append(nxt)
            except ShellDoubt:
                return cwds, False
            if len(cwds) > _MAX_CWDS:
                return cwds, False
        return cwds, True

    def _check_redirects(self, ctx: _CommandContext, cmd: SimpleCommand, cwds: list[Path],
                         cwd_known: bool) -> list[_Verdict]:
        out: list[_Verdict] = []
        for redirect in cmd.redirects:
            if redirect.kind not in ("write", "read") or redirect.target.procsub:
                continue
            target = redirect.target
            write = redirect.kind == "write"
            if target.literal and target.text in _HARMLESS_DEVICES:
                continue
            verdicts: list[_Verdict] = []
            if not target.literal or target.glob or target.brace:
                verdicts.append(self._unknown_redirect(ctx, redirect.op + target.raw, write))
            elif not cwd_known and not os.path.isabs(os.path.expanduser(target.text)):
                verdicts.append(_Verdict("deny" if write and self.mode == "plan" else "ask",
                                         f"redirection {redirect.op}{target.raw} after a change of "
                                         "directory this check cannot follow"))
            else:
                tools = {*WRITE_TOOLS, *WRITE_GROUPS} if write else {*READ_TOOLS, READ_GROUP}
                tool = "write_file" if write else "read_file"
                for base in cwds:
                    try:  # as bash opens it: `~-` and /proc/self/cwd are the shell's
                        where = str(physical(expand_tilde(target.raw, target.text, base), base))
                    except Unknowable as exc:
                        unknown = self._unknown_redirect(ctx, redirect.op + target.raw, write)
                        verdicts.append(replace(unknown, reason=f"{unknown.reason}: {exc}")
                                        if unknown.behavior != "allow" else unknown)
                        continue
                    v = self._check_path(tool, tools, where, write, base)
                    if ctx.everything and not v.from_rule and v.behavior != "allow" and \
                            self.mode != "plan":
                        v = _Verdict("allow", ctx.everything)
                    verdicts.append(v)
            out.extend(verdicts)
        return out

    def _unknown_redirect(self, ctx: _CommandContext, shown: str, write: bool) -> _Verdict:
        if write and self.mode == "plan":
            return _Verdict("deny", f"plan mode: redirection {shown} writes a file; not allowed "
                            "while planning", hint="--permission-mode default")
        if ctx.everything and not (ctx.deny or ctx.ask):
            return _Verdict("allow", ctx.everything)
        return _Verdict("ask", f"redirection {shown} goes to a file this check cannot know")


@dataclass(frozen=True)
class _CommandContext:
    tool: str
    deny: list[_Compiled]
    ask: list[_Compiled]
    allow: list[_Compiled]
    everything: str


def _expand_words(words: Sequence[Word], cwd: Path) -> tuple[tuple[Word, ...], list[str]]:
    """The words as bash passes them to the program when run in ``cwd`` (tilde and
    pathname expansion), and the directories the expansion lists. Raises Unknowable."""
    out: list[Word] = []
    listed: list[str] = []
    for word in words:
        if word.procsub or not word.literal:
            out.append(word)
            continue
        text = expand_tilde(word.raw, word.text, cwd)
        if not word.glob:
            out.append(replace(word, text=text))
            continue
        if word.quoted:
            raise Unknowable(f"{word.raw} mixes quoted text and a pattern; which characters "
                             "are wildcards cannot be told")
        result = expand_glob(text, cwd)
        listed.extend(result.listed)
        if result.words == (text,):
            out.append(replace(word, text=text, glob=False))
        else:
            out.extend(Word(text=m, raw=m) for m in result.words)
    return tuple(out), listed


def find_program(name: str, cwd: Path) -> Path | None:
    """The file bash would run for the command word ``name`` in ``cwd`` (resolved), or
    None when there is none. Raises Unknowable for a lookup through /proc."""
    if "/" in name:
        candidates = [name]
    else:
        candidates = [os.path.join(entry or ".", name)
                      for entry in os.environ.get("PATH", os.defpath).split(os.pathsep)]
    for candidate in candidates:
        full = physical(candidate, cwd)
        if full.is_file() and os.access(full, os.X_OK):
            return full
    return None


def _path_folders(base: Path) -> set[Path]:
    """The folders on PATH, resolved (relative entries from ``base``)."""
    out: set[Path] = set()
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        try:
            out.add(physical(entry or ".", base))
        except Unknowable:
            continue
    return out


def _one_line(text: str) -> str:
    # Commands and file names may hold line breaks; a reason is shown on one line.
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _valid_rule(text: str) -> bool:
    """Whether a suggested rule can be saved (a file name with a newline cannot)."""
    try:
        parse_rule(text)
    except ValueError:
        return False
    return True


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, say: not a folder we could add
        return False


def url_host(url: str) -> str:
    """The host a URL names, as URL rules spell it (lower case, an international name in
    its ASCII xn-- form), or "" when there is none."""
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        return host.encode("idna").decode("ascii") if not host.isascii() else host
    except (ValueError, UnicodeError):
        return ""


def behavior_word(behavior: str) -> str:
    return {"deny": "denied", "ask": "always asked", "allow": "allowed"}[behavior]


def _remove_hint(c: _Compiled) -> str:
    return f"remove {c.rule.text} from {c.source}"


def _combine(verdicts: Sequence[_Verdict]) -> _Verdict:
    """Deny beats ask beats allow; an ask collects every part's "always allow" rule."""
    worst = _worst(verdicts, "nothing to check")
    if worst.behavior == "allow":
        reasons: list[str] = []
        for v in verdicts:
            if v.reason not in reasons:
                reasons.append(v.reason)
        shown = "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
        return _Verdict("allow", shown, worst.from_rule)
    if worst.behavior == "deny":
        return worst
    asks = [v for v in verdicts if v.behavior == "ask"]
    if not all(v.suggestions for v in asks):
        # Some part cannot be allowed by a saved rule; say why, once per reason.
        hints: list[str] = []
        for v in asks:
            if not v.suggestions and v.hint and v.hint not in hints:
                hints.append(v.hint)
        return _Verdict("ask", worst.reason, worst.from_rule, (), "; ".join(hints))
    suggestions: list[str] = []
    for v in asks:
        suggestions.extend(s for s in v.suggestions if s not in suggestions)
    flags = " ".join(f"--allow {shlex.quote(s)}" for s in suggestions)
    alts = {v.alt for v in asks}
    if len(alts) == 1 and "" not in alts:
        hint = f"{alts.pop()} or {flags}"
    else:
        named = sorted(a for a in alts if a)
        hint = flags + (f" (for the file accesses, {' / '.join(named)} also works)" if named else "")
    return _Verdict("ask", worst.reason, worst.from_rule, tuple(suggestions), hint)


def suggest_command_rule(cmd: SimpleCommand, tool: str = "bash") -> str:
    """The rule "always allow" saves for one simple command: ``bash(npm test:*)`` when the
    second word names a subcommand, otherwise the exact command."""
    words = strip_wrappers(cmd.words)
    texts = [w.text for w in words]
    if not cmd.assignments and len(words) >= 2 and all(w.literal for w in words[:2]) \
            and _looks_like_subcommand(texts[1]) and texts[0] not in _NO_PREFIX_SUGGESTION \
            and not words[0].quoted:
        return f"{tool}({quote_words(texts[:2])}:*)"
    full = [w.text for w in cmd.assignments] + texts
    return f"{tool}({quote_words(full, assignments=len(cmd.assignments))})"


def _looks_like_subcommand(word: str) -> bool:
    return bool(word) and word[0].isalpha() and all(ch.isalnum() or ch in "-_:" for ch in word) \
        and not word.endswith(":")


def _check_mode(mode: str) -> PermissionMode:
    if mode not in MODES:
        raise ValueError(f"unknown permission mode {mode!r}; use one of: {', '.join(MODES)}")
    return mode
