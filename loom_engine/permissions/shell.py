"""Splitting a bash command line into the simple commands it would run.

The permission manager must know every program a command line starts and every file
it redirects into, so that ``bash(git status:*)`` can never let
``git status && rm -rf ~`` through. ``shlex`` cannot tell a quoted ``"&&"`` from the
operator ``&&`` and knows nothing of ``$(...)``, backticks or here-documents, so this
module scans the line itself, character by character, following bash's quoting rules.
It understands the subset of bash that coding agents actually write; anything beyond
it (loops, ``case``, functions, arithmetic, complex ``${...}``, unbalanced quotes)
raises a *doubt* instead of a guess, and the manager asks the user.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

_METACHARS = frozenset(" \t\n;&|<>()")
_BLANKS = " \t"
_NAME_START = re.compile(r"[A-Za-z_]")
_NAME_CHARS = re.compile(r"[A-Za-z0-9_]*")
_SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# Nesting beyond this is not something a person writes by hand; refusing keeps the
# recursive scanner far away from Python's recursion limit.
_MAX_DEPTH = 40

# Reserved words that only introduce or close a list of ordinary commands; the
# commands inside are still checked one by one.
_TRANSPARENT_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "!", "{", "}"})
# Constructs whose commands may run in an order, or a number of times, that a flat
# list cannot represent (a `cd` inside a loop changes where later iterations read).
_DOUBTFUL_KEYWORDS = frozenset({"while", "until", "for", "select", "case", "esac", "do", "done",
                                "function", "coproc", "[[", "]]"})

RedirectKind = Literal["write", "read", "dup", "heredoc", "herestring"]


class ShellDoubt(Exception):
    """The command uses syntax this analysis cannot follow safely."""


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal.

    Expansions (``$VAR``, ``$(...)``, backticks) stay in ``text`` as written, and
    ``literal`` is false for such words: their run-time value is unknown.
    """

    text: str
    raw: str
    literal: bool = True
    glob: bool = False          # unquoted * ? or [ : pathname expansion may happen
    brace: bool = False         # unquoted {a,b} or {1..3}: brace expansion happens
    quoted: bool = False        # some part was quoted or escaped
    procsub: bool = False       # a <(...) or >(...) word: a /dev/fd path at run time
    glob_parent_dots: bool = False  # a glob component starting with '.' may match '..'


@dataclass(frozen=True)
class Redirect:
    op: str
    kind: RedirectKind
    target: Word
    fd: int | None = None


@dataclass(frozen=True)
class SimpleCommand:
    """One program invocation: ``NAME=value ... word ... redirections``."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()

    @property
    def display(self) -> str:
        """The command as written (shortened), for messages."""
        text = " ".join(w.raw for w in (*self.assignments, *self.words)) or " ".join(
            f"{r.op}{r.target.raw}" for r in self.redirects)
        return text if len(text) <= 120 else text[:117] + "..."


@dataclass(frozen=True)
class CommandAnalysis:
    commands: tuple[SimpleCommand, ...]
    # Non-empty when the line uses syntax the analysis cannot follow; ``commands``
    # then holds only what was understood before that point.
    doubt: str = ""


def analyze(command: str) -> CommandAnalysis:
    """Every simple command ``command`` would run, including those inside ``$(...)``,
    backticks, process substitutions, subshells and ``{ }`` groups."""
    parser = _Parser(command)
    try:
        parser.parse()
    except ShellDoubt as exc:
        return CommandAnalysis(tuple(parser.commands), str(exc) or "unsupported syntax")
    return CommandAnalysis(tuple(parser.commands))


def rule_words(spec: str) -> tuple[str, ...]:
    """The words of a ``bash(...)`` rule specifier, split like a command line.

    Raises ValueError for anything that is not one plain command.
    """
    parser = _Parser(spec)
    try:
        parser.parse()
    except ShellDoubt as exc:
        raise ValueError(str(exc)) from None
    if len(parser.commands) != 1:
        raise ValueError("a bash rule must name one command, without ; && || | or &")
    cmd = parser.commands[0]
    if cmd.redirects:
        raise ValueError("a bash rule cannot contain redirections")
    words = (*cmd.assignments, *cmd.words)
    if not cmd.words or not all(w.literal for w in words):
        raise ValueError("a bash rule cannot contain $ expansions or command substitutions")
    return tuple(w.text for w in words)


def quote_words(words: Sequence[str], assignments: int = 0) -> str:
    """Words joined so that a shell reads them back as the same words. The first word
    after the ``assignments`` leading ``NAME=value`` words is the command: quoted when it
    would otherwise read as one more assignment (shlex leaves ``a=`` bare)."""
    quoted = [shlex.quote(w) for w in words]
    command = assignments
    if command < len(words) and quoted[command] == words[command] and ASSIGNMENT.match(words[command]):
        quoted[command] = f"'{words[command]}'"  # bare, so it holds no quote to escape
    return " ".join(quoted)


# ---------------------------------------------------------------------------------------
# The scanner


@dataclass
class _WordBuf:
    start: int
    chars: list[str] = field(default_factory=list)
    quoted_mask: list[bool] = field(default_factory=list)
    literal: bool = True
    quoted: bool = False
    procsub: bool = False

    def add(self, ch: str, quoted: bool) -> None:
        self.chars.append(ch)
        self.quoted_mask.append(quoted)
        if quoted:
            self.quoted = True

    def add_expansion(self, raw: str) -> None:
        # Expansion text counts as quoted so that its characters never look like globs;
        # ``literal`` records that the value is unknown.
        for ch in raw:
            self.chars.append(ch)
            self.quoted_mask.append(True)
        self.literal = False

    def build(self, raw: str) -> Word:
        text = "".join(self.chars)
        unquoted = [ch for ch, q in zip(self.chars, self.quoted_mask, strict=True) if not q]
        glob = any(ch in "*?[" for ch in unquoted)
        return Word(text=text, raw=raw, literal=self.literal, glob=glob,
                    brace=_has_brace_expansion(self.chars, self.quoted_mask),
                    quoted=self.quoted, procsub=self.procsub,
                    glob_parent_dots=glob and _glob_may_match_parent(self.chars, self.quoted_mask))


def _has_brace_expansion(chars: list[str], mask: list[bool]) -> bool:
    depth_open = -1
    for idx, (ch, quoted) in enumerate(zip(chars, mask, strict=True)):
        if quoted:
            continue
        if ch == "{":
            depth_open = idx
        elif ch == "}" and depth_open >= 0:
            inner = [(c, q) for c, q in zip(chars[depth_open + 1: idx], mask[depth_open + 1: idx],
                                            strict=True)]
            if any(c == "," and not q for c, q in inner):
                return True
            text = "".join(c for c, _ in inner)
            if ".." in text:
                return True
    return False


def _glob_may_match_parent(chars: list[str], mask: list[bool]) -> bool:
    """True when a path component like ``.*`` or ``.?`` could expand to ``..``."""
    component: list[tuple[str, bool]] = []
    for ch, quoted in [*zip(chars, mask, strict=True), ("/", True)]:
        if ch == "/":
            if component and component[0][0] == ".":
                has_glob = any(c in "*?[" and not q for c, q in component)
                pattern = "".join(("[" + c + "]" if q and c in "*?[" else c) for c, q in component)
                if has_glob and fnmatch.fnmatchcase("..", pattern):
                    return True
            component = []
        else:
            component.append((ch, quoted))
    return False


@dataclass
class _CmdBuf:
    words: list[Word] = field(default_factory=list)
    assignments: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    after_group: bool = False

    def reset(self) -> None:
        self.words, self.assignments, self.redirects = [], [], []
        self.after_group = False

    @property
    def at_command_position(self) -> bool:
        return not self.words and not self.after_group

    @property
    def empty(self) -> bool:
        return not self.words and not self.assignments and not self.redirects and not self.after_group


@dataclass
class _PendingHeredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool


class _Parser:
    def __init__(self, text: str, depth: int = 0) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.heredocs: list[_PendingHeredoc] = []

    def parse(self) -> None:
        self._parse_list(closer=False)

    # -- lists of commands ------------------------------------------------------------

    def _parse_list(self, closer: bool) -> None:
        """Scan commands until the end of input or, with ``closer``, a matching ')'."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ShellDoubt("nesting too deep")
        cmd = _CmdBuf()
        s = self.s
        while True:
            self._skip_blanks()
            if self.i >= self.n:
                self._finish(cmd)
                if closer:
                    raise ShellDoubt("missing ')'")
                if self.heredocs:
                    raise ShellDoubt("unterminated here-document")
                self.depth -= 1
                return
            c = s[self.i]
            if c == "#":
                end = s.find("\n", self.i)
                self.i = self.n if end < 0 else end
                continue
            if c == "\n":
                self._finish(cmd)
                cmd = _CmdBuf()
                self.i += 1
                self._read_heredoc_bodies()
                continue
            if c == ")":
                if not closer:
                    raise ShellDoubt("unbalanced ')'")
                self._finish(cmd)
                self.i += 1
                self.depth -= 1
                return
            if s.startswith(("<(", ">("), self.i):
                word = self._read_process_substitution()
                self._add_word(cmd, word)
                continue
            if c in "<>" or s.startswith("&>", self.i):
                self._read_redirect(cmd, fd=None)
                continue
            if c in ";|&":
                op = self._read_operator()
                if op.startswith(";;") or op == ";&":
                    raise ShellDoubt("'case' syntax")
                self._finish(cmd)
                cmd = _CmdBuf()
                continue
            if c == "(":
                if not cmd.empty:
                    raise ShellDoubt("unexpected '(' (a function definition or a syntax error)")
                if s.startswith("((", self.i):
                    raise ShellDoubt("arithmetic command '(( ))'")
                self.i += 1
                self._parse_list(closer=True)
                # What follows a subshell can only be redirections of the whole group.
                cmd.after_group = True
                continue
            start = self.i
            word = self._read_word()
            if self.i < self.n and s[self.i] in "<>" and re.fullmatch(r"\d+", word.raw):
                self._read_redirect(cmd, fd=int(word.raw))
                continue
            if self.i < self.n and s[self.i] in "<>" and re.fullmatch(r"\{[A-Za-z_]\w*\}", word.raw):
                raise ShellDoubt("named file descriptor redirection")
            if self.i == start:  # pragma: no cover - _read_word always advances here
                raise ShellDoubt("unexpected character")
            self._add_word(cmd, word)

    def _add_word(self, cmd: _CmdBuf, word: Word) -> None:
        if cmd.after_group:
            raise ShellDoubt(f"unexpected word '{word.raw}' after a group")
        if cmd.at_command_position and _is_assignment(word):
            cmd.assignments.append(word)
            return
        if cmd.at_command_position and not word.quoted and word.literal:
            if not cmd.assignments and word.text in _TRANSPARENT_KEYWORDS:
                # `then ls` or `{ ls;}`: the keyword starts a new command of its own.
                if word.text in ("}", "fi"):
                    self._finish(cmd)
                    cmd.reset()
                    cmd.after_group = True
                return
            if not cmd.assignments and word.text in _DOUBTFUL_KEYWORDS:
                raise ShellDoubt(f"bash '{word.text}' construct")
        cmd.words.append(word)

    def _finish(self, cmd: _CmdBuf) -> None:
        if cmd.words or cmd.assignments or cmd.redirects:
            self.commands.append(SimpleCommand(tuple(cmd.words), tuple(cmd.assignments),
                                               tuple(cmd.redirects)))

    def _read_operator(self) -> str:
        s, i = self.s, self.i
        for op in (";;&", ";;", ";&", "&&", "||", "|&", ";", "|", "&"):
            if s.startswith(op, i):
                self.i += len(op)
                return op
        raise ShellDoubt("unexpected operator")  # pragma: no cover

    def _skip_blanks(self) -> None:
        s = self.s
        while self.i < self.n:
            c = s[self.i]
            if c in _BLANKS:
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
            else:
                return

    # -- redirections ------------------------------------------------------------------

    def _read_redirect(self, cmd: _CmdBuf, fd: int | None) -> None:
        s = self.s
        table: tuple[tuple[str, RedirectKind], ...] = (
            ("&>>", "write"), ("&>", "write"), ("<<<", "herestring"), ("<<-", "heredoc"),
            ("<<", "heredoc"), ("<&", "dup"), ("<>", "write"), ("<", "read"), (">>", "write"),
            (">&", "dup"), (">|", "write"), (">", "write"),
        )
        for op, kind in table:  # noqa: B007 - the loop finds op and kind
            if s.startswith(op, self.i):
                break
        else:  # pragma: no cover - callers only come here on < > or &>
            raise ShellDoubt("unexpected redirection")
        self.i += len(op)
        self._skip_blanks()
        if self.i >= self.n:
            raise ShellDoubt(f"redirection '{op}' without a target")
        if s.startswith(("<(", ">("), self.i):
            target = self._read_process_substitution()
        else:
            if s[self.i] in _METACHARS:
                raise ShellDoubt(f"redirection '{op}' without a target")
            target = self._read_word()
        if kind == "heredoc":
            if not target.literal:
                raise ShellDoubt("here-document delimiter with an expansion")
            self.heredocs.append(_PendingHeredoc(target.text, op == "<<-", not target.quoted))
        elif kind == "dup" and not (target.literal and re.fullmatch(r"\d+-?|-", target.text)):
            if op == ">&" and fd is None:
                kind = "write"  # `>&file` sends stdout and stderr to a file
            else:
                raise ShellDoubt(f"unusual redirection '{op}{target.raw}'")
        cmd.redirects.append(Redirect(op, kind, target, fd))

    def _read_heredoc_bodies(self) -> None:
        s = self.s
        pending, self.heredocs = self.heredocs, []
        for doc in pending:
            while True:
                if self.i >= self.n:
                    raise ShellDoubt("unterminated here-document")
                end = s.find("\n", self.i)
                line = s[self.i:] if end < 0 else s[self.i:end]
                self.i = self.n if end < 0 else end + 1
                check = line.lstrip("\t") if doc.strip_tabs else line
                if check == doc.delimiter:
                    break
                if doc.expands and ("$(" in line or "`" in line):
                    raise ShellDoubt("command substitution inside a here-document")

    # -- words -------------------------------------------------------------------------

    def _read_process_substitution(self) -> Word:
        start = self.i
        self.i += 2
        self._parse_list(closer=True)
        raw = self.s[start:self.i]
        return Word(text=raw, raw=raw, literal=False, quoted=True, procsub=True)

    def _read_word(self) -> Word:
        s = self.s
        buf = _WordBuf(self.i)
        while self.i < self.n:
            c = s[self.i]
            if c in _METACHARS:
                break
            if c == "\\":
                if self.i + 1 < self.n:
                    if s[self.i + 1] == "\n":
                        self.i += 2
                        continue
                    buf.add(s[self.i + 1], True)
                    self.i += 2
                else:
                    buf.add("\\", True)
                    self.i += 1
                continue
            if c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ShellDoubt("unbalanced single quote")
                buf.quoted = True
                for ch in s[self.i + 1:end]:
                    buf.add(ch, True)
                self.i = end + 1
                continue
            if c == '"':
                self._read_double_quoted(buf)
                continue
            if c == "`":
                self._read_backticks(buf)
                continue
            if c == "$":
                self._read_dollar(buf, in_double_quotes=False)
                continue
            buf.add(c, False)
            self.i += 1
        return buf.build(s[buf.start:self.i])

    def _read_double_quoted(self, buf: _WordBuf) -> None:
        s = self.s
        buf.quoted = True
        self.i += 1
        while self.i < self.n:
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < self.n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    buf.add(s[self.i + 1], True)
                self.i += 2
                continue
            if c == "$":
                self._read_dollar(buf, in_double_quotes=True)
                continue
            if c == "`":
                self._read_backticks(buf)
                continue
            buf.add(c, True)
            self.i += 1
        raise ShellDoubt("unbalanced double quote")

    def _read_dollar(self, buf: _WordBuf, in_double_quotes: bool) -> None:
        s = self.s
        start = self.i
        nxt = s[self.i + 1] if self.i + 1 < self.n else ""
        if nxt == "(":
            if s.startswith("$((", self.i):
                raise ShellDoubt("arithmetic expansion $(( ))")
            self.i += 2
            self._parse_list(closer=True)
            buf.add_expansion(s[start:self.i])
        elif nxt == "[":
            raise ShellDoubt("arithmetic expansion $[ ]")
        elif nxt == "{":
            end = self.i + 2
            while end < self.n and s[end] != "}":
                if s[end] in "$`'\"\\{":
                    raise ShellDoubt("complex ${...} parameter expansion")
                end += 1
            if end >= self.n:
                raise ShellDoubt("unbalanced '${'")
            self.i = end + 1
            buf.add_expansion(s[start:self.i])
        elif nxt == "'" and not in_double_quotes:
            end = self.i + 2
            while end < self.n and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            if end >= self.n:
                raise ShellDoubt("unbalanced $'...' quote")
            self.i = end + 1
            buf.add_expansion(s[start:self.i])
        elif nxt == '"' and not in_double_quotes:
            self.i += 1
            self._read_double_quoted(buf)
        elif nxt and _NAME_START.match(nxt):
            m = _NAME_CHARS.match(s, self.i + 2)
            self.i = m.end() if m else self.i + 2
            buf.add_expansion(s[start:self.i])
        elif nxt and nxt in _SPECIAL_PARAMS:
            self.i += 2
            buf.add_expansion(s[start:self.i])
        else:
            buf.add("$", in_double_quotes)
            self.i += 1

    def _read_backticks(self, buf: _WordBuf) -> None:
        s = self.s
        start = self.i
        self.i += 1
        inner: list[str] = []
        while self.i < self.n:
            c = s[self.i]
            if c == "\\" and self.i + 1 < self.n and s[self.i + 1] in "`$\\":
                inner.append(s[self.i + 1])
                self.i += 2
                continue
            if c == "`":
                self.i += 1
                sub = _Parser("".join(inner), self.depth + 1)
                try:
                    sub.parse()
                finally:
                    self.commands.extend(sub.commands)
                buf.add_expansion(s[start:self.i])
                return
            inner.append(c)
            self.i += 1
        raise ShellDoubt("unbalanced backquote")


def _is_assignment(word: Word) -> bool:
    m = ASSIGNMENT.match(word.raw)
    return m is not None and not any(q in m.group(0) for q in ("'", '"', "\\"))
