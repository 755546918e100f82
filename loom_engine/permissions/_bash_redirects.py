"""The reading of redirections and here-documents in a tree-sitter-bash parse tree:
the operators bash knows (each a read, a write, a descriptor copy), and here-document
delimiters and bodies read the way bash reads them, or a doubt."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._bash_checks import check_descriptor_before
from ._bash_errors import is_read_write_operator
from ._bash_word_reader import BLANK_GAP, LINE_GAP, WordReader
from ._bash_words import WordBuf, add_double_quoted
from .shell_words import Redirect, RedirectKind, ShellDoubt, Word

if TYPE_CHECKING:
    from tree_sitter import Node

# The grammar's redirection nodes (a command, a statement or a $(...) may hold them).
REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_REDIRECT_KINDS: dict[str, RedirectKind] = {
    "&>>": "write", "&>": "write", ">>": "write", ">|": "write", ">": "write", "<>": "write",
    "<": "read", "<&": "dup", ">&": "dup", "<&-": "dup", ">&-": "dup"}


class RedirectReader(WordReader):
    """The redirections of a command (and what a here-document leaves for later)."""

    def _redirect(self, node: Node, after: list[Node]) -> list[Redirect]:
        check_descriptor_before(self.src, node)
        if node.type == "heredoc_redirect":
            self._check_gaps(node, LINE_GAP)
            return self._heredoc(node, after)
        self._check_gaps(node, BLANK_GAP)
        fd: int | None = None
        op = ""
        targets: list[Node] = []
        for child in node.children:
            if child.type == "file_descriptor":
                if not child.text or not self.text(child).isdigit():
                    raise ShellDoubt("named file descriptor redirection")
                fd = int(self.text(child))
            elif is_read_write_operator(child):
                op = "<>"  # the grammar does not know '<>' (read and write)
            elif not child.is_named:
                op = child.type
            else:
                targets.append(child)
        if node.type == "herestring_redirect":
            if op != "<<<" or len(targets) != 1:
                raise ShellDoubt("unusual here-string")
            return [Redirect("<<<", "herestring", self.word(targets[0]), fd)]
        kind = _REDIRECT_KINDS.get(op)
        if kind is None:
            raise ShellDoubt(f"unusual redirection '{op}'")
        if op.endswith("-"):
            if targets:
                raise ShellDoubt(f"unusual redirection '{self.text(node)}'")
            return [Redirect(op[:-1], "dup", Word(text="-", raw="-"), fd)]
        if len(targets) != 1:
            raise ShellDoubt(f"redirection '{op}' without a target" if not targets else
                             f"unusual redirection '{self.text(node)}'")
        target = self.word(targets[0])
        if kind == "dup" and not (target.literal and re.fullmatch(r"\d+-?|-", target.text)):
            if op == ">&" and fd is None:
                kind = "write"  # `>&file` sends stdout and stderr to a file
            else:
                raise ShellDoubt(f"unusual redirection '{op}{target.raw}'")
        return [Redirect(op, kind, target, fd)]

    def _heredoc(self, node: Node, after: list[Node]) -> list[Redirect]:
        op, start, body, end = "", None, None, None
        extra: list[Redirect] = []
        for child in node.children:
            kind = child.type
            if not child.is_named:
                op = op or kind
            elif kind == "heredoc_start":
                start = child
            elif kind == "heredoc_body":
                body = child
            elif kind == "heredoc_end":
                end = child
            elif kind in REDIRECTS:
                extra.extend(self._redirect(child, after))
            else:
                after.append(child)  # the rest of the line: `cat <<EOF | grep x`
        if start is None or end is None or op not in ("<<", "<<-"):
            raise ShellDoubt("unterminated here-document")
        start_raw = self.text(start)
        if "$" in start_raw or "`" in start_raw:
            raise ShellDoubt("here-document delimiter with an expansion")
        bare = re.sub(r"'[^']*'|\"[^\"]*\"|\\.", "", start_raw, flags=re.DOTALL)
        if not start_raw or any(c in " \t\n;&|<>()" for c in bare):
            raise ShellDoubt("a here-document delimiter this check reads differently from bash")
        delimiter = re.sub(r"\\(.)|['\"]", lambda m: m.group(1) or "", start_raw)
        if self.text(end) != delimiter:
            raise ShellDoubt("unterminated here-document")
        expands = not any(q in start_raw for q in "'\"\\")
        if body is not None:
            self._heredoc_body(body, delimiter, op == "<<-", expands)
        target = Word(text=delimiter, raw=start_raw, quoted=not expands)
        return [Redirect(op, "heredoc", target), *extra]

    def _heredoc_body(self, body: Node, delimiter: str, strip_tabs: bool, expands: bool) -> None:
        for line in self.text(body).split("\n"):
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                raise ShellDoubt("a here-document that ends where this check does not expect")
        if not expands:
            return  # a quoted delimiter: the body is data
        buf = WordBuf()
        pos = body.start_byte
        for child in body.named_children:
            if child.type == "heredoc_content":
                continue
            add_double_quoted(buf, self.between(pos, child.start_byte),
                              self.between(child.start_byte, child.start_byte + 1), heredoc=True)
            self._parts(child, buf)
            pos = child.end_byte
        add_double_quoted(buf, self.between(pos, body.end_byte), "", heredoc=True)
