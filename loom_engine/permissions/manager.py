"""Decides whether a tool call may run, must be asked about, or is refused.

The modes are described in :mod:`.modes`, where rules come from in :mod:`.layers`, and
the check of a bash command line in :mod:`.command_check`. Across all layers deny beats
ask beats allow; a rule beats the mode's default answer, except that plan mode refuses
anything that writes or runs even when an allow rule matches.

Every path is resolved (``..``, ``~``, symlinks) before it is checked. Outside the
workspace, reading asks and writing is denied unless a rule names the path (relative
rule patterns only cover the workspace; use ``/abs/**`` or ``~/dir/**``) or it lies in
an ``--add-dir`` folder.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from ..mcp.names import server_prefix, server_rule_names
from ..workspace import Workspace
from .command_check import CommandCheck
from .decision import PermissionDecision, Verdict, behavior_word, combine
from .expansion import Unknowable, physical
from .layers import DEFAULT_LAYER, SOURCE_DEFAULTS, SOURCE_SAVED, SOURCE_SESSION, CompiledRule, RuleLayer, RuleStore
from .modes import PermissionMode, check_mode, is_wider, narrower
from .paths import rule_path
from .rules import Behavior, is_rule_domain, parse_rule
from .targets import CommandRun, FileAccess, McpCall, PermissionTarget, UrlFetch
from .tool_facts import BUILTIN_TOOL_FACTS, ToolFacts

__all__ = ["PermissionManager"]


class PermissionManager:
    """Answers for one agent. A sub-agent's manager (``parent=``, see :meth:`child`)
    shares its parent's rules and follows its mode live, never wider."""

    _store: RuleStore
    # Keeps "allow always in this project" rules for later sessions; the application
    # decides where (None: such answers cannot be saved, only used this session).
    _save_rules: Callable[[Sequence[str]], None] | None
    # Removes saved "allow always in this project" rules from where they are kept.
    _forget_rules: Callable[[Sequence[str]], None] | None
    # Which tools read or write files, and which change only the session (plan mode
    # allows those): the tools' own declarations, given by whoever builds the manager.
    tool_facts: ToolFacts

    def __init__(self, workspace: Workspace, *, mode: PermissionMode = "default",
                 layers: Sequence[RuleLayer] = (), save_rules: Callable[[Sequence[str]], None] | None = None,
                 include_defaults: bool = True, parent: PermissionManager | None = None,
                 tool_facts: ToolFacts | None = None,
                 forget_rules: Callable[[Sequence[str]], None] | None = None) -> None:
        self.workspace = workspace
        self._parent = parent
        self.tool_facts = tool_facts or (parent.tool_facts if parent is not None else BUILTIN_TOOL_FACTS)
        self._mode: PermissionMode = check_mode(mode)
        if parent is not None:
            if layers or save_rules is not None or forget_rules is not None:
                raise ValueError("a sub-agent's permissions take their rules from its parent's")
            if is_wider(self._mode, parent.mode):
                raise ValueError(f"a sub-agent cannot use mode '{self._mode}', wider than its parent's "
                                 f"'{parent.mode}'")
            # Shared, not copied: an "allow always" answered to a sub-agent holds for all.
            self._store = parent._store
            self._save_rules = parent._save_rules
            self._forget_rules = parent._forget_rules
            return
        self._store = RuleStore(workspace.root)
        self._save_rules = save_rules
        self._forget_rules = forget_rules
        all_layers = list(layers)
        if include_defaults and not any(layer.source == SOURCE_DEFAULTS for layer in all_layers):
            all_layers.insert(0, DEFAULT_LAYER)
        for layer in all_layers:
            self._store.add(layer)

    # -- mode -------------------------------------------------------------------------

    @property
    def mode(self) -> PermissionMode:
        if self._parent is not None:
            return narrower(self._parent.mode, self._mode)
        return self._mode

    @mode.setter
    def mode(self, value: PermissionMode) -> None:
        value = check_mode(value)
        if self._parent is not None and is_wider(value, self._parent.mode):
            raise ValueError(f"a sub-agent cannot use mode '{value}', wider than its parent's "
                             f"'{self._parent.mode}'")
        self._mode = value

    # -- rules ------------------------------------------------------------------------

    @property
    def rules(self) -> RuleStore:
        """The rules in force (shared with the sub-agents' managers)."""
        return self._store

    def allow_for_session(self, rules: Iterable[str]) -> None:
        """Allow these rules until the session ends ("allow always" for this session)."""
        if self._parent is not None:
            self._parent.allow_for_session(rules)
            return
        texts = tuple(rules)
        if texts:
            self._store.add(RuleLayer(SOURCE_SESSION, allow=texts))

    def allow_for_project(self, rules: Iterable[str]) -> None:
        """Allow these rules now and in later sessions (kept by the ``save_rules``
        callable given at construction). Raises ValueError when they cannot be saved."""
        if self._parent is not None:
            self._parent.allow_for_project(rules)
            return
        texts = tuple(rules)
        if not texts:
            return  # nothing to keep: never write an empty rule list
        for text in texts:  # validate everything before saving anything
            self._store.compile("allow", text, SOURCE_SAVED)
        if self._save_rules is None:
            raise ValueError("this session has nowhere to save rules")
        self._save_rules(texts)
        self._store.add(RuleLayer(SOURCE_SAVED, allow=texts))

    def add_session_rule(self, behavior: Behavior, text: str) -> None:
        """A rule typed by the user for this session (any behaviour); ValueError when invalid."""
        if self._parent is not None:
            self._parent.add_session_rule(behavior, text)
            return
        rule = self._store.compile(behavior, text, SOURCE_SESSION)  # validates
        layer = {"allow": RuleLayer(SOURCE_SESSION, allow=(rule.rule.text,)),
                 "deny": RuleLayer(SOURCE_SESSION, deny=(rule.rule.text,)),
                 "ask": RuleLayer(SOURCE_SESSION, ask=(rule.rule.text,))}[behavior]
        self._store.add(layer)

    @property
    def can_save(self) -> bool:
        root = self._parent if self._parent is not None else self
        return root._save_rules is not None

    @staticmethod
    def removable(source: str) -> bool:
        """Whether the user may remove a rule of this source from inside Loom: their own
        answers (this session's, and the ones saved for this project). Rules from settings
        files and flags are changed where they are written."""
        return source in (SOURCE_SESSION, SOURCE_SAVED)

    def remove_rule(self, behavior: Behavior, text: str, source: str) -> None:
        """Remove a session or saved rule. ValueError says why when it cannot be removed."""
        if self._parent is not None:
            self._parent.remove_rule(behavior, text, source)
            return
        if not self.removable(source):
            raise ValueError(f"rules from {source} are changed in {source} itself")
        if source == SOURCE_SAVED:
            if self._forget_rules is None:
                raise ValueError("this session cannot change the saved rules")
            self._forget_rules((text,))
        if not self._store.remove(behavior, text, source):
            raise ValueError(f"no {behavior} rule {text} from {source}")

    def effective_rules(self) -> list[tuple[str, str, str]]:
        """(behavior, rule, source) for every rule in force, layer by layer."""
        return [(c.behavior, c.rule.text, c.source) for c in self._store]

    def child(self, mode: PermissionMode | None = None) -> PermissionManager:
        """A manager for a sub-agent: the same rules and mode, followed live, never wider.
        ``mode`` (a custom agent's) can only narrow it: the narrower of the two is used."""
        own = self.mode if mode is None else narrower(self.mode, check_mode(mode))
        return PermissionManager(self.workspace, mode=own, parent=self)

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
        elif isinstance(target, McpCall):
            verdict = self._check_mcp(tool, target)
        else:  # pragma: no cover - PermissionTarget is a closed union
            verdict = Verdict("ask", f"unknown permission target {type(target).__name__}")
        return verdict.decision()

    def _check_untargeted(self, tool: str, is_read_only: bool) -> Verdict:
        behavior: Behavior
        for behavior in ("deny", "ask"):
            hit = self._store.bare(tool, behavior)
            if hit:
                return Verdict(behavior, f"{tool} is {behavior_word(behavior)} by "
                               f"{hit.label}", True, hint=hit.remove_hint)
        if self.mode == "plan" and not is_read_only and tool not in self.tool_facts.session_only:
            return Verdict("deny", f"plan mode: {tool} may change things and is not available "
                           "while planning (read-only); present the plan instead",
                           hint="--permission-mode default")
        allow = self._store.bare(tool, "allow")
        return Verdict("allow", allow.label if allow else f"{tool} needs no permission")

    # -- commands ---------------------------------------------------------------------

    def _check_command(self, tool: str, target: CommandRun, cwd: Path | None) -> Verdict:
        """The command line's verdict, then what the sandbox changes about it: a command
        asked to run outside always asks the user; in accept-edits, a confined command
        without network that no rule asks about or denies runs unasked."""
        check = CommandCheck(self, tool)
        verdict = check.verdict(target, cwd)
        if target.escalation is not None:
            return self._escalated(check, target, verdict)
        confinement = target.confinement
        if confinement is not None and self.mode == "accept-edits" and confinement.auto_allow_in_accept_edits \
                and confinement.network != "on" and verdict.behavior == "ask" and not verdict.from_rule:
            return Verdict("allow", "accept-edits mode: it runs in the sandbox, where it can change only the "
                           "workspace and reach no network")
        return verdict

    @staticmethod
    def _escalated(check: CommandCheck, target: CommandRun, verdict: Verdict) -> Verdict:
        """Outside the sandbox: a deny stays a deny; anything else asks the user, in every
        mode, whatever a hook says. A run without a user allows it only when allow rules
        the user wrote cover the command (and no ask rule catches it)."""
        if verdict.behavior == "deny":
            return verdict
        why = target.escalation.strip() if target.escalation else ""
        reason = ("runs OUTSIDE the sandbox (no walls: it can write anywhere you can and reach the network); "
                  + (f"the model says why: {why}" if why else "the model gave no reason"))
        ruled_ask = verdict.behavior == "ask" and verdict.from_rule
        covered = not ruled_ask and check.allowed_by_rules(target)
        return Verdict("ask", reason, True, verdict.suggestions, hint="an allow rule for this command "
                       "(a run without a user refuses a command outside the sandbox otherwise)",
                       user_only=True, unattended_allow=covered)

    # -- MCP servers ------------------------------------------------------------------

    def _check_mcp(self, tool: str, target: McpCall) -> Verdict:
        """An MCP tool: rules naming it, its server (``mcp__s`` or ``mcp__s__*``) decide;
        otherwise a read-only tool runs like a read and any other asks (plan mode refuses
        it), as an edit would."""
        server = server_rule_names(target.server)
        behavior: Behavior
        for behavior in ("deny", "ask", "allow"):
            hit = next((c for c in self._store if c.behavior == behavior and c.rule.specifier is None
                        and (c.rule.tool == tool or c.rule.tool in server)), None)
            if hit is None:
                continue
            if behavior == "allow" and self.mode == "plan" and not target.read_only:
                break
            return Verdict(behavior, f"{tool} is {behavior_word(behavior)} by {hit.label}", True,
                           hint=hit.remove_hint)
        if target.read_only:
            return Verdict("allow", f"{target.tool} on {target.server} only reads (the server says so)")
        if self.mode == "plan":
            return Verdict("deny", f"plan mode: {tool} may change things and is not available while "
                           "planning (read-only); present the plan instead", hint="--permission-mode default")
        if self.mode == "bypass":
            return Verdict("allow", "bypass mode: everything is allowed")
        return Verdict("ask", f"{target.tool} on the MCP server {target.server} may change things",
                       suggestions=(tool,), hint=f"--allow {shlex.quote(tool)} (or "
                       f"--allow '{server_prefix(target.server)}*' for every tool of that server)")

    # -- network ----------------------------------------------------------------------

    def _check_url(self, tool: str, target: UrlFetch) -> Verdict:
        """Fetching asks in every mode but bypass (what is sent out in a URL cannot be
        taken back), unless a rule names the host."""
        host = url_host(target.url)
        if not host:
            return Verdict("ask", f"cannot tell which host {target.url!r} names")
        behavior: Behavior
        for behavior in ("deny", "ask", "allow"):
            hit = next((c for c in self._store.for_tool(tool, behavior) if c.rule.matches_host(host)), None)
            if hit:
                return Verdict(behavior, f"fetching from {host} is {behavior_word(behavior)} by {hit.label}",
                               True, hint=hit.remove_hint)
        if self.mode == "bypass":
            return Verdict("allow", "bypass mode: everything is allowed")
        if not is_rule_domain(host):
            return Verdict("ask", f"fetching from {host!r} needs approval (no rule can name that host)")
        rule = f"{tool}(domain:{host})"
        return Verdict("ask", f"fetching from {host} needs approval", suggestions=(rule,),
                       hint=f"--allow {shlex.quote(rule)}")

    # -- files ------------------------------------------------------------------------

    def _check_files(self, tool: str, target: FileAccess, cwd: Path | None) -> Verdict:
        root = self.workspace.root
        if not target.paths:
            return self.check_path(tool, {tool}, str(root), target.write, root)
        # File tools resolve relative paths from the root, while `cwd` follows bash's
        # `cd`: check against both, so a disagreement can only make the answer stricter.
        bases = [root] if cwd is None or Path(cwd) == root else [root, Path(cwd)]
        verdicts = [self.check_path(tool, {tool}, raw, target.write, base)
                    for raw in target.paths for base in bases]
        return combine(verdicts)

    def check_path(self, tool: str, rule_tools: set[str], raw: str, write: bool,
                   base: Path) -> Verdict:
        """One path read or written by ``tool``; ``rule_tools`` are the tool names whose
        rules apply (a bash redirection is checked against every file tool's rules)."""
        try:
            resolved = self.workspace.resolve(raw, base)
        except (OSError, ValueError) as exc:
            return Verdict("ask", f"cannot resolve path {raw!r}: {exc}")
        return self.check_resolved(tool, rule_tools, resolved, write, base)

    def check_resolved(self, tool: str, rule_tools: set[str], resolved: Path, write: bool,
                       base: Path) -> Verdict:
        """:meth:`check_path` for a path already resolved (absolute, every symlink
        followed), such as a bash command's paths (resolved as the shell will open them);
        ``base`` is still the folder relative PATH entries are taken from."""
        ws = self.workspace
        root = ws.root
        inside = ws.contains(resolved)
        action = "writing" if write else "reading"

        def shown() -> str:  # for the messages (most paths are simply allowed)
            return ws.relative(resolved)

        def hits(behavior: Behavior) -> CompiledRule | None:
            return self._path_rule_hit(behavior, rule_tools, resolved, inside, write)

        deny = hits("deny")
        if deny:
            return Verdict("deny", f"{action} {shown()} is denied by {deny.label}", True,
                           hint=deny.remove_hint)
        if write and self.mode == "plan":
            return Verdict("deny", f"plan mode: {action} {shown()} is not allowed while planning "
                           "(read-only); present the plan instead", hint="--permission-mode default")
        ask = hits("ask")
        if ask:
            return Verdict("ask", f"{action} {shown()} needs approval ({ask.label})", True,
                           hint=f"{ask.label} always asks; a headless run cannot allow it")
        if write and self.mode != "bypass" and resolved.parent in _path_folders(base):
            # A program put there would run in place of a system one (`ls`, `git`...).
            return Verdict("ask", f"{action} {shown()} puts a file in {resolved.parent}, a "
                           "folder on PATH; it needs approval", firm=True,
                           hint="only --permission-mode bypass writes into a folder on PATH "
                           "without asking")
        allow = hits("allow")
        if allow:
            return Verdict("allow", allow.label, True)
        if inside and not write:
            return Verdict("allow", "reads inside the workspace are allowed")
        # The rule "always allow" would save, parsed only where a verdict offers it.
        suggestion = f"{tool}({rule_path(resolved, root)})"
        allow_flag = f"--allow {shlex.quote(suggestion)}"
        suggestions = (suggestion,) if _valid_rule(suggestion) else ()
        if inside:
            if self.mode in ("accept-edits", "bypass"):
                return Verdict("allow", f"{self.mode} mode: edits inside the workspace are allowed")
            return Verdict("ask", f"default mode: {action} {shown()} needs approval",
                           suggestions=suggestions, hint=allow_flag,
                           alt="--permission-mode accept-edits")
        folder = resolved if _is_dir(resolved) else resolved.parent
        add_dir = f"--add-dir {shlex.quote(str(folder))}"
        if not write:
            if self.mode == "bypass":
                return Verdict("allow", "bypass mode: reads outside the workspace are allowed")
            return Verdict("ask", f"{shown()} is outside the workspace: reading it needs approval",
                           suggestions=suggestions, hint=allow_flag, alt=add_dir)
        return Verdict("deny", f"{shown()} is outside the workspace: writing there is not permitted "
                       "(no rule or --add-dir allows it)", hint=f"{add_dir} or {allow_flag}")

    # -- reads a search makes -------------------------------------------------------------

    def withheld_reads(self, tool: str) -> Callable[[Path], bool] | None:
        """A test for the paths a search by ``tool`` must leave out: those a deny or ask
        rule for reading covers (a search cannot stop to ask about each file). None when
        no such rule exists, so nothing need be checked. The test takes a path as found
        on disk below a resolved folder: a walk does not follow links, so resolving it
        would check a link's target instead of the entry shown. The rules are the ones
        in force now, for the one search."""
        rules = [c for behavior in ("deny", "ask") for c in self._store.for_tool(tool, behavior, write=False)]
        if not rules:
            return None
        contains = self.workspace.contains

        def withheld(path: Path) -> bool:
            inside = contains(path)
            return any(self._path_rule_matches(c, path, inside) for c in rules)

        return withheld

    def check_walk(self, rule_tools: set[str], folder: Path, *, one_level: bool) -> Verdict:
        """A command that reads through ``folder`` (resolved; with ``one_level`` only its
        own entries): it asks when a deny or ask rule for reading by one of
        ``rule_tools`` could cover something in it, in every mode (a command cannot
        leave those files out the way a search does, and bypass keeps a rule's deny)."""
        behavior: Behavior
        for behavior in ("deny", "ask"):
            for c in self._store.for_tools(rule_tools, behavior, write=False):
                if c.rule.specifier is None or (c.path is not None and
                                                c.path.could_match_below(folder, one_level=one_level)):
                    what = "the entries of" if one_level else "every file below"
                    return Verdict("ask", f"it reads {what} {self.workspace.relative(folder)}, where "
                                   f"{c.label} may cover some; it needs approval", True,
                                   hint=f"name the files to read instead; {c.label} "
                                   "keeps a run without a user from allowing this")
        return Verdict("allow", "no rule for reading covers what it walks")

    def _path_rule_hit(self, behavior: Behavior, rule_tools: set[str], resolved: Path, inside: bool,
                       write: bool) -> CompiledRule | None:
        """The first rule of ``behavior`` for one of ``rule_tools`` that covers the path."""
        return next((c for c in self._store.for_tools(rule_tools, behavior, write=write)
                     if self._path_rule_matches(c, resolved, inside)), None)

    def _path_rule_matches(self, c: CompiledRule, resolved: Path, inside: bool) -> bool:
        if c.rule.specifier is None:
            # A bare allow rule covers the workspace; outside paths need a rule naming them.
            return inside or c.behavior != "allow"
        if c.path is None:
            return False
        strict = c.behavior != "allow"
        return c.path.matches(resolved, self.workspace.root, outside_too=strict, loose=strict)


def _path_folders(base: Path) -> set[Path]:
    """The folders on PATH, resolved (relative entries from ``base``)."""
    out: set[Path] = set()
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        try:
            out.add(physical(entry or ".", base))
        except Unknowable:
            continue
    return out


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
