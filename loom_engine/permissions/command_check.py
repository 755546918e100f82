"""The check of a bash command line.

A command line is split into the simple commands it would run (:mod:`.shell`); it is
allowed only when every one of them is, and output redirections count as file writes
(checked with the file tools' rules and the mode). A small set of read-only commands
(``ls``, ``cat``, ``grep``, ``git status``...) runs without asking as long as everything
it would read resolves inside the workspace, judged as bash will run it
(:mod:`.command_expansion`, :mod:`.expansion`: globs and tildes expanded, ``cd``
followed logically, /proc paths refused, symlink-following walks checked), its command
word is not a program inside the workspace, and, for git, the repository's config names
no program (:mod:`.git_config`).
Commands the analysis cannot follow are asked about. "Always allow" saves one rule per
part that asked (:mod:`.rule_suggestion`): ``bash(npm test:*)`` when the second word names
a subcommand, else the exact command.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ..workspace import Workspace
from .command_expansion import cd_destinations, expand_words, possible_cwds, user_path
from .commands import (
    cd_target,
    deny_candidates,
    read_only_command,
    runs_hidden_code,
    strip_wrappers,
)
from .decision import Verdict, behavior_word, combine, worst
from .expansion import (
    FolderWalks,
    Unknowable,
    expand_tilde,
    outward_symlink,
    physical,
    remembered,
)
from .git_config import repository_doubt
from .layers import CompiledRule, RuleStore
from .modes import PermissionMode
from .program_lookup import ProgramLookups, find_program
from .rule_suggestion import suggest_command_rule
from .rules import Behavior
from .shell import ShellDoubt, SimpleCommand, Word, analyze
from .targets import CommandRun
from .tool_facts import ToolFacts

__all__ = ["CommandCheck", "CommandCheckHost", "find_program"]

# Redirection targets that are not files anyone cares about.
_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
# Wrappers in front of a read-only command are programs found on PATH too.
_PATH_WRAPPERS = frozenset({"timeout", "nice", "nohup"})
# Read-only command words bash runs itself, without a PATH lookup.
_SHELL_BUILTINS = frozenset({"echo", "pwd", "time"})


class CommandCheckHost(Protocol):
    """What the command check reads from the permission manager."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def mode(self) -> PermissionMode: ...

    @property
    def rules(self) -> RuleStore: ...

    @property
    def tool_facts(self) -> ToolFacts: ...

    def check_resolved(self, tool: str, rule_tools: set[str], resolved: Path, write: bool,
                       base: Path) -> Verdict:
        """One resolved path read or written (from ``base``); ``rule_tools`` are the tool
        names whose rules apply."""
        ...

    def check_walk(self, rule_tools: set[str], folder: Path, *, one_level: bool) -> Verdict:
        """A folder a command reads through (``one_level``: only its own entries)."""
        ...


class CommandCheck:
    """The check of command lines run by one tool, against the rules in force now."""

    def __init__(self, host: CommandCheckHost, tool: str) -> None:
        self._host = host
        self._tool = tool
        rules = host.rules

        def targeted(behavior: Behavior) -> list[CompiledRule]:
            return [c for c in rules.for_tool(tool, behavior) if c.rule.specifier is not None]

        self._deny = targeted("deny")
        self._ask = targeted("ask")
        self._allow = targeted("allow")
        self._everything = self._everything_allowed()
        # The tools whose path rules a file the command reads (False) or writes (True) meets.
        self._rule_tools = {write: set(host.tool_facts.rule_tools(write=write)) for write in (False, True)}
        # Answers asked again within this one check: nothing runs until the whole line
        # is checked, so the same question has the same answer (see ProgramLookups).
        self._folders = FolderWalks()
        self._programs = ProgramLookups(self._folders)
        self._git_doubts: dict[tuple[str, str], str] = {}
        self._program_doubts: dict[tuple[tuple[str, ...], str], str] = {}
        self._paths: dict[tuple[str, bool, str], Verdict] = {}
        self._walks: dict[tuple[str, bool], Verdict] = {}
        self._resolved: dict[tuple[str, str], Path | Unknowable] = {}
        self._lexists: dict[Path, bool] = {}
        self._is_dir: dict[Path, bool] = {}
        # A simple command written twice in the line (`wc -l`, `grep -n def`) is the
        # same question twice: its verdicts, worked out once.
        self._simple: dict[SimpleCommand, tuple[Verdict, ...]] = {}

    def verdict(self, target: CommandRun, cwd: Path | None) -> Verdict:
        tool = self._tool
        base = Path(target.cwd) if target.cwd else (cwd or self._host.workspace.root)
        behavior: Behavior
        for behavior in ("deny", "ask"):
            hit = self._host.rules.bare(tool, behavior)
            if hit:
                return Verdict(behavior, f"{tool} is {behavior_word(behavior)} by "
                               f"{hit.label}", True, hint=hit.remove_hint)
        if "\0" in target.command:
            return Verdict("ask", "the command contains a NUL byte; it needs approval")
        analysis = analyze(target.command)
        # Deny rules first, over whatever could be parsed, even when the rest could not.
        by_rule = [self._rule_verdict(cmd) for cmd in analysis.commands]
        ruled = [v for v in by_rule if v]
        if any(v.behavior == "deny" for v in ruled):
            return combine(ruled)
        if analysis.doubt:
            return self._doubtful(analysis.doubt)
        cwds, cwd_known = possible_cwds(analysis.commands, base)
        verdicts: list[Verdict] = []
        for cmd, rule_verdict in zip(analysis.commands, by_rule, strict=True):
            answered = self._simple.get(cmd)
            if answered is None:
                answered = self._simple[cmd] = (self._check_simple(cmd, cwds, cwd_known, rule_verdict),
                                                *self._check_redirects(cmd, cwds, cwd_known))
            verdicts.extend(answered)
        if not analysis.commands:
            return Verdict("allow", "empty command")
        return combine(verdicts)

    def allowed_by_rules(self, target: CommandRun) -> bool:
        """Whether allow rules cover every command of the line by themselves: a bare
        ``bash`` rule, or a rule matching each simple command (not the mode, not the
        read-only list). A line that cannot be analysed is not covered."""
        if self._host.rules.bare(self._tool, "allow"):
            return True
        analysis = analyze(target.command)
        if analysis.doubt or not analysis.commands:
            return False
        for cmd in analysis.commands:
            words = strip_wrappers(cmd.words)
            if not words or not words[0].literal:
                return False
            full = tuple(w.text for w in cmd.assignments) + tuple(w.text for w in words)
            if not any(c.rule.matches_words(full) for c in self._allow):
                return False
        return True

    def _everything_allowed(self) -> str:
        """Why every command is allowed (bypass or a bare ``bash`` rule), or ''."""
        if self._host.mode == "bypass":
            return "bypass mode: everything is allowed"
        bare = self._host.rules.bare(self._tool, "allow")
        return bare.label if bare else ""

    def _doubtful(self, doubt: str) -> Verdict:
        if self._host.mode == "plan":
            return Verdict("deny", f"plan mode: this command cannot be checked to be read-only "
                           f"({doubt}); only read-only commands run while planning",
                           hint="--permission-mode default")
        if self._everything and not (self._deny or self._ask):
            return Verdict("allow", self._everything)
        # With deny or ask rules in force, the ask stands for them (they cannot be checked).
        return Verdict("ask", f"cannot check this command safely ({doubt}); it needs approval",
                       from_rule=bool(self._deny or self._ask),
                       hint="only --permission-mode bypass or the rule 'bash' allows a command "
                       "that cannot be analysed")

    def _rule_verdict(self, cmd: SimpleCommand) -> Verdict | None:
        """Deny or ask from an explicit rule, looking through sudo, env, xargs and co."""
        if not cmd.words or not (self._deny or self._ask):
            return None
        candidates = deny_candidates(cmd.words, cmd.assignments)
        checks: tuple[tuple[Behavior, list[CompiledRule]], ...] = (("deny", self._deny), ("ask", self._ask))
        for behavior, rules in checks:
            for c in rules:
                if any(c.rule.matches_words(words) for words in candidates):
                    return Verdict(behavior, f"`{cmd.display}` is "
                                   f"{behavior_word(behavior)} by {c.label}", True,
                                   hint=c.remove_hint if behavior == "deny" else
                                   f"{c.label} always asks; a headless run cannot allow it")
        return None

    def _check_simple(self, cmd: SimpleCommand, cwds: list[Path], cwd_known: bool,
                      ruled: Verdict | None) -> Verdict:
        """One simple command; ``ruled`` is what a deny or ask rule said of it."""
        shown = cmd.display
        if not cmd.words and not cmd.assignments:
            return Verdict("allow", "redirection only")
        if ruled is not None:
            return ruled
        words = strip_wrappers(cmd.words)
        hidden = runs_hidden_code(words)
        if hidden and (self._deny or self._ask) and self._host.mode != "plan":
            return Verdict("ask", f"`{shown}`: {hidden}, so the deny and ask rules cannot be "
                           "checked; it needs approval", from_rule=True)
        if hidden and not self._everything and self._host.mode != "plan":
            # A prefix allow rule (`bash(printf:*)`) was meant for the command, not for
            # whatever code it ends up running.
            return Verdict("ask", f"`{shown}`: {hidden}; it needs approval",
                           hint="only the rule 'bash' or --permission-mode bypass allows code this "
                           "check cannot see")
        read_only = None if cmd.assignments else self._read_only_verdict(cmd, words, cwds, cwd_known)
        if read_only is not None and read_only.from_rule and read_only.behavior != "allow":
            return read_only  # a deny/ask rule on a file it reads beats any allow rule
        if read_only is not None and read_only.firm and not self._everything:
            return read_only
        if self._host.mode == "plan":
            if read_only is not None:
                return read_only
            return Verdict("deny", f"plan mode: `{shown}` may run or change things; only "
                           "read-only commands run while planning — present the plan instead",
                           hint="--permission-mode default")
        if self._everything:
            return Verdict("allow", self._everything)
        full = tuple(w.text for w in cmd.assignments) + tuple(w.text for w in words)
        if words and words[0].literal:
            for c in self._allow:
                if c.rule.matches_words(full):
                    return Verdict("allow", c.label, True)
        if read_only is not None and read_only.behavior != "ask":
            return read_only
        # The rule "always allow" would save, made only where a verdict asks.
        suggestions = (suggest_command_rule(cmd, self._tool),) if words else ()
        hint = " ".join(f"--allow {shlex.quote(s)}" for s in suggestions)
        if read_only is not None:
            return Verdict("ask", read_only.reason, suggestions=suggestions, hint=hint)
        cd = self._cd_verdict(cmd, cwds, cwd_known)
        if cd is not None:
            return cd
        return Verdict("ask", f"{self._host.mode} mode: running `{shown}` needs approval",
                       suggestions=suggestions, hint=hint or "only the rule 'bash' or "
                       "--permission-mode bypass allows setting shell variables")

    def _read_only_verdict(self, cmd: SimpleCommand, words: Sequence[Word], cwds: list[Path],
                           cwd_known: bool) -> Verdict | None:
        """For a built-in read-only command: allow, or ask/deny for the files it reads.

        The words are checked as bash will run them: tildes and globs expanded in every
        directory the command may run in, paths resolved the way the shell's kernel calls
        will, the program the command word names looked up on PATH, and for git the
        repository's config read for keys that name programs."""
        as_written = read_only_command(words)
        if as_written is None:
            return None
        shown = cmd.display
        if any(w.glob_parent_dots for w in words):
            return Verdict("ask", f"`{shown}` has a pattern that may expand to '..'")
        verdicts: list[Verdict] = []
        for base in cwds:
            try:
                expanded, listed = expand_words(words, base)
            except Unknowable as exc:
                return Verdict("ask", f"`{shown}`: {exc}")
            # Nothing expanded (the words are the same): the same answer as above.
            check = as_written if expanded == tuple(words) else read_only_command(expanded)
            if check is None:
                return None  # what it expands to is not read-only (a file named -delete...)
            paths = [user_path(p) for p in check.paths]
            if not cwd_known and (check.reads_cwd or listed or
                                  any(not p.startswith("/") for p in paths)):
                return Verdict("ask", f"`{shown}` reads relative paths after a change of "
                               "directory this check cannot follow")
            program = self._program_doubt(cmd, words, base)
            if program:
                return Verdict("ask", f"`{shown}`: {program}", firm=True)
            reads = list(listed) + paths + ([str(base)] if check.reads_cwd else [])
            resolved_reads: dict[str, Path] = {}
            for raw in reads:
                try:
                    resolved = resolved_reads[raw] = self._physical(raw, base)
                except Unknowable as exc:
                    return Verdict("ask", f"`{shown}`: {exc}")
                verdicts.append(self._check_path(resolved, False, base))
            # The trees it walks: its file operands, or the working directory when
            # none of them exists.
            named = [resolved_reads[user_path(p)] for p in check.walks]
            tops = [p for p in named if self._exists(p)]
            if not tops and check.reads_cwd:
                tops = [resolved_reads[str(base)]]
            if check.descends != "none":
                verdicts.extend(self._check_walk(top, one_level=check.descends == "one")
                                for top in tops if self._folder(top))
            if check.follows:
                outward = outward_symlink(tops, self._host.workspace.contains)
                if outward:
                    return Verdict("ask", f"`{shown}` follows symlinks and {outward}")
            if expanded[0].text == "git":
                doubt = self._git_doubt(base)
                if doubt:
                    return Verdict("ask", f"`{shown}`: {doubt}; it needs approval", firm=True,
                                   hint="only --permission-mode bypass or the rule 'bash' "
                                   "runs git with this repository's config unchecked")
        strictest = worst(verdicts, "")
        if strictest.behavior == "allow":
            return Verdict("allow", f"`{shown}` is a read-only command")
        return Verdict(strictest.behavior, f"`{shown}`: {strictest.reason}", strictest.from_rule,
                       hint=strictest.hint)

    def _program_doubt(self, cmd: SimpleCommand, words: Sequence[Word], cwd: Path) -> str:
        """Why a command word of this read-only command (or of a wrapper in front of it)
        may run a program from the workspace rather than the system's, or ''."""
        wrappers = [w.text for w in cmd.words[:len(cmd.words) - len(words)] if w.text in _PATH_WRAPPERS]
        names = (*wrappers, words[0].text)
        key = (names, str(cwd))
        if key not in self._program_doubts:
            self._program_doubts[key] = self._programs_doubt(names, cwd)
        return self._program_doubts[key]

    def _programs_doubt(self, names: tuple[str, ...], cwd: Path) -> str:
        for name in names:
            if name in _SHELL_BUILTINS:
                continue
            try:
                found = self._programs.find(name, cwd)
            except Unknowable as exc:
                return str(exc)
            if found is not None and self._host.workspace.contains(found):
                return (f"'{name}' would run {self._host.workspace.relative(found)}, a program "
                        "inside the workspace (a folder on PATH), not the system's")
        return ""

    def _git_doubt(self, cwd: Path) -> str:
        try:
            folder = physical(str(cwd), Path("/"))
            git = self._programs.find("git", cwd)
        except Unknowable as exc:
            return str(exc)
        if git is None:
            return ""  # no git: the command fails without running anything
        if not folder.is_dir():
            return f"it would run in {cwd}, which does not exist yet, so its git config cannot be read"
        key = (str(git), str(folder))
        if key not in self._git_doubts:
            self._git_doubts[key] = repository_doubt(str(git), folder, self._host.workspace.contains)
        return self._git_doubts[key]

    def _check_path(self, resolved: Path, write: bool, base: Path) -> Verdict:
        """The host's check of one path the command reads or writes, resolved the way the
        shell will open it (:func:`physical`), by every file tool's rules; asked once
        per check for each distinct question."""
        key = (str(resolved), write, str(base))
        if key not in self._paths:
            self._paths[key] = self._host.check_resolved("write_file" if write else "read_file",
                                                         self._rule_tools[write], resolved, write, base)
        return self._paths[key]

    def _exists(self, path: Path) -> bool:
        """``os.path.lexists``, asked once per check for each path."""
        if path not in self._lexists:
            self._lexists[path] = os.path.lexists(path)
        return self._lexists[path]

    def _folder(self, path: Path) -> bool:
        """``Path.is_dir``, asked once per check for each path."""
        if path not in self._is_dir:
            self._is_dir[path] = path.is_dir()
        return self._is_dir[path]

    def _physical(self, raw: str, base: Path) -> Path:
        """:func:`physical`, resolved once per check for each path and folder."""
        return remembered(self._resolved, (raw, str(base)), lambda: self._folders.physical(raw, base))

    def _check_walk(self, folder: Path, *, one_level: bool) -> Verdict:
        """The host's check of a folder the command reads through (by every file tool's
        rules for reading), asked once per check for each folder."""
        key = (str(folder), one_level)
        if key not in self._walks:
            self._walks[key] = self._host.check_walk(self._rule_tools[False], folder, one_level=one_level)
        return self._walks[key]

    def _cd_verdict(self, cmd: SimpleCommand, cwds: list[Path], cwd_known: bool) -> Verdict | None:
        try:
            target = cd_target(cmd.words)
        except ShellDoubt:
            return None
        if target is None or not cwd_known:
            return None
        for base in cwds:
            for nxt in cd_destinations(target, base):
                try:
                    real = physical(str(nxt), Path("/"))
                except Unknowable:
                    return None
                if not (self._host.workspace.contains(nxt) and self._host.workspace.contains(real)):
                    return None
        return Verdict("allow", "changing directory inside the workspace")

    def _check_redirects(self, cmd: SimpleCommand, cwds: list[Path],
                         cwd_known: bool) -> list[Verdict]:
        out: list[Verdict] = []
        for redirect in cmd.redirects:
            if redirect.kind not in ("write", "read") or redirect.target.procsub:
                continue
            target = redirect.target
            write = redirect.kind == "write"
            if target.literal and target.text in _HARMLESS_DEVICES:
                continue
            verdicts: list[Verdict] = []
            if not target.literal or target.glob or target.brace:
                verdicts.append(self._unknown_redirect(redirect.op + target.raw, write))
            elif not cwd_known and not os.path.isabs(os.path.expanduser(target.text)):
                verdicts.append(Verdict("deny" if write and self._host.mode == "plan" else "ask",
                                        f"redirection {redirect.op}{target.raw} after a change of "
                                        "directory this check cannot follow"))
            else:
                for base in cwds:
                    try:  # as bash opens it: `~-` and /proc/self/cwd are the shell's
                        where = physical(expand_tilde(target.raw, target.text, base), base)
                    except Unknowable as exc:
                        unknown = self._unknown_redirect(redirect.op + target.raw, write)
                        verdicts.append(replace(unknown, reason=f"{unknown.reason}: {exc}")
                                        if unknown.behavior != "allow" else unknown)
                        continue
                    v = self._check_path(where, write, base)
                    if self._everything and not v.from_rule and v.behavior != "allow" and \
                            self._host.mode != "plan":
                        v = Verdict("allow", self._everything)
                    verdicts.append(v)
            out.extend(verdicts)
        return out

    def _unknown_redirect(self, shown: str, write: bool) -> Verdict:
        if write and self._host.mode == "plan":
            return Verdict("deny", f"plan mode: redirection {shown} writes a file; not allowed "
                           "while planning", hint="--permission-mode default")
        if self._everything and not (self._deny or self._ask):
            return Verdict("allow", self._everything)
        return Verdict("ask", f"redirection {shown} goes to a file this check cannot know")
