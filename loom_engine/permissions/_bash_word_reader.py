"""The reading of the source under a tree-sitter-bash parse tree: the text of a node,
the gaps between nodes (where only blanks may stand), and the word bash makes of one or
more nodes (quotes removed, expansions marked).

This is the base of the syntax walk (:mod:`._bash_tree`); a word holding ``$(...)``
hands its commands back to the walker through :meth:`WordReader._substitution`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from ._bash_words import (
    SAFE_BRACED_EXPANSION,
    SIMPLE_EXPANSION,
    WordBuf,
    add_double_quoted,
    add_unquoted,
    bare_word,
)
from .shell_words import ShellDoubt, Word

if TYPE_CHECKING:
    from tree_sitter import Node

# Nodes whose text is one bare word (read by add_unquoted).
_BARE_WORDS = frozenset({"word", "number", "variable_name"})
# Matched on the source's bytes, where they stand (no slice decoded per gap).
BLANK_GAP = re.compile(rb"(?:[ \t]|\\\n)*")
LINE_GAP = re.compile(rb"(?:[ \t\n]|\\\n)*")


class WordReader(ABC):
    """Text, gaps and words of the source ``src`` the parse tree was made from."""

    def __init__(self, source: bytes) -> None:
        self.src = source
        self.bare_words: dict[str, Word | None] = {}

    def text(self, node: Node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def between(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "replace")

    def _check_gaps(self, node: Node, allowed: re.Pattern[bytes]) -> None:
        """Between a node's children there may only be blanks: a gap holding text means
        the grammar skipped something bash reads."""
        pos = node.start_byte
        for child in node.children:
            if child.start_byte > pos and not allowed.fullmatch(self.src, pos, child.start_byte):
                raise ShellDoubt("text this check could not read "
                                 f"({self.between(pos, child.start_byte)[:30]!r})")
            pos = max(pos, child.end_byte)
        if node.end_byte > pos and not allowed.fullmatch(self.src, pos, node.end_byte):
            raise ShellDoubt("text this check could not read")

    def word(self, *nodes: Node) -> Word:
        """The word made of ``nodes`` (several when the grammar split one word)."""
        if len(nodes) == 1:
            bare = self._bare_word(nodes[0])
            if bare is not None:
                return bare
        buf = WordBuf()
        for node in nodes:
            self._parts(node, buf)
        if len(nodes) == 1 and nodes[0].type == "process_substitution":
            buf.procsub = True
        return buf.build(self.between(nodes[0].start_byte, nodes[-1].end_byte))

    def _bare_word(self, node: Node) -> Word | None:
        """The word of a node that is one bare word (a command name is one holding
        one), when its text has nothing to unquote or expand; else None."""
        if node.type == "command_name" and node.child_count == 1:
            inner = node.children[0]
            if inner.start_byte != node.start_byte or inner.end_byte != node.end_byte:
                return None
            node = inner
        if node.type not in _BARE_WORDS:
            return None
        raw = self.text(node)
        if raw not in self.bare_words:  # a line says `-n`, `ls` or a file name many times
            self.bare_words[raw] = bare_word(raw)
        return self.bare_words[raw]

    def _parts(self, node: Node, buf: WordBuf) -> None:
        kind = node.type
        raw = self.text(node)
        if kind in _BARE_WORDS or (not node.is_named and kind == "$"):
            # What follows matters only after a '$' (a lone one, or an expansion's start).
            following = self.between(node.end_byte, node.end_byte + 1) if raw.endswith("$") else ""
            add_unquoted(buf, raw, following)
        elif kind == "raw_string":
            if len(raw) < 2 or not (raw[0] == raw[-1] == "'"):
                raise ShellDoubt("unbalanced single quote")
            for ch in raw[1:-1]:
                buf.add(ch, True)
            buf.quoted = True
        elif kind == "string":
            self._double_quoted(node, buf)
        elif kind == "translated_string":
            strings = [c for c in node.named_children if c.type == "string"]
            if len(strings) != 1:
                raise ShellDoubt("unusual $\"...\" string")
            self._double_quoted(strings[0], buf)
        elif kind == "ansi_c_string":
            buf.add_expansion(raw)
        elif kind == "simple_expansion":
            if not SIMPLE_EXPANSION.fullmatch(raw):
                raise ShellDoubt(f"unusual expansion {raw!r}")
            buf.add_expansion(raw)
        elif kind == "expansion":
            if not SAFE_BRACED_EXPANSION.fullmatch(raw):
                raise ShellDoubt("complex ${...} parameter expansion")
            buf.add_expansion(raw)
        elif kind in ("command_substitution", "process_substitution"):
            self._substitution(node)
            buf.add_expansion(raw)
        elif kind == "arithmetic_expansion":
            raise ShellDoubt("arithmetic expansion $(( ))")
        elif kind == "brace_expression":
            for ch in raw:
                buf.add(ch, False)
        elif kind in ("concatenation", "command_name"):
            pos = node.start_byte
            for child in node.children:
                if child.start_byte != pos:
                    raise ShellDoubt("a word this check reads differently from bash")
                self._parts(child, buf)
                pos = child.end_byte
            if pos != node.end_byte:
                raise ShellDoubt("a word this check reads differently from bash")
        else:
            raise ShellDoubt(f"unsupported word syntax ({kind.replace('_', ' ')})")

    def _double_quoted(self, node: Node, buf: WordBuf) -> None:
        raw = self.text(node)
        if len(raw) < 2 or not (raw[0] == raw[-1] == '"') or node.children[-1].is_missing:
            raise ShellDoubt("unbalanced double quote")
        buf.quoted = True
        pos = node.start_byte + 1
        for child in node.named_children:
            if child.type == "string_content":
                continue
            add_double_quoted(buf, self.between(pos, child.start_byte),
                              self.between(child.start_byte, child.start_byte + 1))
            self._parts(child, buf)
            pos = child.end_byte
        add_double_quoted(buf, self.between(pos, node.end_byte - 1), '"')

    @abstractmethod
    def _substitution(self, node: Node) -> None:
        """A ``$(...)``, backquote or ``<(...)`` in a word: its commands are the walker's."""
