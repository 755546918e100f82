"""The syntax walk behind :func:`.shell.analyze`: a tree-sitter-bash parse tree turned
into the simple commands bash would run.

The walker follows a whitelist. Lists, pipelines, ``{ }`` groups, subshells, ``if``,
``!``, redirections, here-documents, ``$(...)``, backquotes, ``<(...)`` and the literal
script of ``bash -c``/``sh -c`` are followed; anything else (loops, ``case``, functions,
arithmetic, ``[[ ]]``, complex ``${...}``, a node the grammar marks as an error) is a
*doubt*. tree-sitter-bash is more forgiving than bash, so the walker also checks what
lies between the nodes: a gap that is not blank, a backquote inside a here-document
(the grammar does not parse those) or a here-document whose end the grammar placed
elsewhere than bash would is a doubt too. After a doubt the walk goes on, collecting
every command it can still see, so that deny rules match as much as possible.

The walker reads words through :mod:`._bash_word_reader` and redirections and
here-documents through :mod:`._bash_redirects`; this module follows the statements.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from ._bash_checks import (
    check_comment,
    check_negation,
    check_not_empty,
    inline_script,
    looks_like_assignment,
)
from ._bash_errors import describe_error, only_read_write_errors
from ._bash_redirects import REDIRECTS, RedirectReader
from ._bash_word_reader import BLANK_GAP, LINE_GAP
from ._bash_words import WordBuf
from .shell_words import Redirect, ShellDoubt, SimpleCommand, Word

if TYPE_CHECKING:
    from tree_sitter import Language, Node

MAX_DEPTH = 40  # nesting beyond this is not written by hand; refusing keeps recursion bounded
_CONTAINERS = frozenset({"program", "list", "pipeline", "compound_statement", "subshell",
                         "negated_command", "if_statement", "elif_clause", "else_clause"})
_CONTAINER_TOKENS = frozenset({";", "&", "&&", "||", "|", "|&", "!", "{", "}", "(", ")", "if",
                               "then", "elif", "else", "fi", "\n"})
_COMMANDS = frozenset({"command", "declaration_command", "unset_command", "variable_assignment",
                       "variable_assignments", "test_command"})
# Their commands may run in an order, or a number of times, that a flat list cannot
# represent (a `cd` inside a loop changes where later iterations read).
_DOUBTFUL_NODES = frozenset({"while_statement", "for_statement", "c_style_for_statement",
                             "case_statement", "function_definition"})
# Reserved words that, read as a command name, mean the grammar and bash disagree, or
# constructs whose commands may run in an order a flat list cannot represent.
_DOUBTFUL_NAMES = frozenset({"while", "until", "for", "select", "case", "esac", "do", "done",
                             "function", "coproc", "[[", "]]", "if", "then", "else", "elif",
                             "fi", "{", "}", "!", "in"})
_SUBSCRIPT_START = re.compile(r"[A-Za-z_]\w*\[")


@functools.cache
def _bash_language() -> Language:
    # Loaded on first use: start-up never pays for the grammar.
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


def walk_source(text: str, depth: int = 0) -> tuple[list[SimpleCommand], str]:
    """The simple commands of ``text`` in the order bash meets them, and the first doubt."""
    import tree_sitter

    try:
        source = text.encode("utf-8")
    except UnicodeEncodeError:
        return [], "the command is not valid text"
    # A parser per call: cheap (under a microsecond), and checks may run in threads.
    tree = tree_sitter.Parser(_bash_language()).parse(_ascii_stand_in(text, source))
    walker = _Walker(source, depth)
    if tree.root_node.has_error and not only_read_write_errors(tree.root_node):
        walker.note(describe_error(text, tree.root_node))
    root = tree.root_node
    if not LINE_GAP.fullmatch(source, 0, root.start_byte) or \
            not LINE_GAP.fullmatch(source, root.end_byte):
        walker.note("text this check could not read (around the start or end)")
    try:
        walker.statement(root)
    except (RecursionError, IndexError, ValueError, AttributeError) as exc:
        # A tree shape this walker never met: fail closed rather than crash the check.
        walker.note(f"the analysis failed on this line ({type(exc).__name__})")
    return walker.commands, walker.doubt


def _ascii_stand_in(text: str, source: bytes) -> bytes:
    """What the grammar parses: every non-ASCII character replaced by as many '%' as it
    has bytes. tree-sitter-bash 0.25.1 crashes the process (a segfault) on some rare
    code points after '{' (`a{\U00058bcc`); for bash any non-ASCII character is an
    ordinary word character, and so is '%' (never part of a name), so the tree keeps
    its shape and offsets while the walker reads the real text."""
    if source.isascii():
        return source
    return "".join(c if c.isascii() else "%" * len(c.encode("utf-8")) for c in text).encode("ascii")


class _Walker(RedirectReader):
    def __init__(self, source: bytes, depth: int) -> None:
        super().__init__(source)
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.doubt = ""

    def note(self, doubt: str) -> None:
        if not self.doubt:  # shown to the user on one line
            self.doubt = doubt.replace("\r", "\\r").replace("\n", "\\n")

    # -- statements --------------------------------------------------------------------

    def statement(self, node: Node) -> None:
        if self.depth > MAX_DEPTH:
            self.note("nesting too deep")
            return
        self.depth += 1
        try:
            self._statement(node)
        except ShellDoubt as exc:
            self.note(str(exc))
            self.salvage(node)
        finally:
            self.depth -= 1

    def _statement(self, node: Node) -> None:
        kind = node.type
        if kind in _CONTAINERS:
            self._container(node)
        elif kind in _COMMANDS:
            self._command(node, ())
        elif kind == "redirected_statement":
            self._redirected(node)
        elif kind == "comment":
            check_comment(self.src, node)
        elif kind in _DOUBTFUL_NODES:
            if kind == "function_definition":
                raise ShellDoubt("a function definition")
            keyword = node.children[0].type if node.children else kind
            raise ShellDoubt(f"bash '{keyword}' construct")
        elif node.is_error or node.is_missing:
            raise ShellDoubt("a syntax error")
        else:
            raise ShellDoubt(f"unsupported syntax ({kind.replace('_', ' ')})")

    def salvage(self, node: Node) -> None:
        """After a doubt: every command still visible below ``node``, for the deny rules."""
        if self.depth > MAX_DEPTH:
            return
        self.depth += 1
        try:
            for child in node.named_children:
                if child.type in _COMMANDS or child.type in ("redirected_statement",
                                                             "command_substitution",
                                                             "process_substitution"):
                    try:
                        if child.type.endswith("substitution"):
                            self._substitution(child)
                        else:
                            self._statement(child)
                    except ShellDoubt as exc:
                        self.note(str(exc))
                        self.salvage(child)
                else:
                    self.salvage(child)
        finally:
            self.depth -= 1

    def _container(self, node: Node) -> None:
        # Lists nest to the left (a && b && c is list(list(a, b), c)): flatten them with
        # a stack, so that a long chain cannot reach the recursion limit.
        check_negation(node)
        check_not_empty(node)
        if node.type == "compound_statement" and node.children[0].type == "{" and self.between(
                node.start_byte + 1, node.start_byte + 2) not in (" ", "\t", "\n"):
            raise ShellDoubt("'{' not followed by a blank (bash reads a word)")
        self._check_gaps(node, LINE_GAP)
        stack = [iter(node.children)]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
            elif not child.is_named:
                if child.type == "((":
                    raise ShellDoubt("arithmetic command '(( ))'")
                if child.type not in _CONTAINER_TOKENS:
                    raise ShellDoubt(f"unsupported syntax '{child.type}'")
            elif child.type in ("list", "pipeline"):
                check_negation(child)
                self._check_gaps(child, LINE_GAP)
                stack.append(iter(child.children))
            else:
                self.statement(child)

    def _redirected(self, node: Node) -> None:
        self._check_gaps(node, BLANK_GAP)
        body = node.child_by_field_name("body")
        redirects: list[Redirect] = []
        after: list[Node] = []
        for child in node.children:
            if child == body:
                continue
            if child.type not in REDIRECTS:
                raise ShellDoubt(f"unsupported syntax ({child.type.replace('_', ' ')})")
            redirects.extend(self._redirect(child, after))
        if body is not None and body.type in _COMMANDS:
            self._command(body, tuple(redirects))
        else:
            if body is not None:
                self.statement(body)
            self.commands.append(SimpleCommand((), (), tuple(redirects)))
        for statement in after:
            self.statement(statement)

    # -- simple commands ---------------------------------------------------------------

    def _command(self, node: Node, extra: tuple[Redirect, ...]) -> None:
        if node.type == "test_command":
            return self._test_command(node, extra)
        if node.type in ("variable_assignment", "variable_assignments"):
            named = [node] if node.type == "variable_assignment" else node.named_children
            self.commands.append(SimpleCommand((), tuple(self._assignment(n) for n in named), extra))
            return None
        self._check_gaps(node, BLANK_GAP)
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        after: list[Node] = []
        parts: list[Word | list[Node]] = []  # a word, or the nodes that make one
        children = node.children
        for idx, child in enumerate(children):
            kind = child.type
            before = children[idx - 1] if idx else child
            # Backslash-newline vanishes before bash splits words: `r\<newline>m` is rm.
            glued = idx > 0 and not self.src[before.end_byte:child.start_byte].replace(b"\\\n", b"")
            if glued and kind not in REDIRECTS and (before.type in REDIRECTS or not before.is_named
                                                     or before.type == "variable_assignment"):
                # `>f''x` or `A=1''x`: one word for bash, two nodes for the grammar.
                raise ShellDoubt(f"a word this check reads differently from bash "
                                 f"({self.between(before.start_byte, child.end_byte)!r})")
            if kind == "variable_assignment":
                if parts:
                    parts.append(self._assignment(child))
                else:
                    assignments.append(self._assignment(child))
            elif kind == "variable_assignments":
                assignments.extend(self._assignment(c) for c in child.named_children)
            elif kind in REDIRECTS:
                redirects.extend(self._redirect(child, after))
            elif not child.is_named:
                if node.type in ("declaration_command", "unset_command") and idx == 0:
                    parts.append(Word(text=child.type, raw=child.type))
                else:
                    raise ShellDoubt(f"unsupported syntax '{child.type}'")
            elif kind == "comment":
                check_comment(self.src, child)
            elif glued and parts and isinstance(parts[-1], list) and parts[-1][-1] == before:
                parts[-1].append(child)  # the grammar splits `''\;` in two; bash reads one word
            else:
                parts.append([child])
        words = [p if isinstance(p, Word) else self.word(*p) for p in parts]
        if words and words[0].brace:
            # `{rm,-rf,x}` runs rm: the name is not the word as written.
            raise ShellDoubt("brace expansion in a command name")
        if words and not words[0].quoted and words[0].literal:
            if words[0].text in _DOUBTFUL_NAMES and node.type == "command":
                raise ShellDoubt(f"bash '{words[0].text}' construct")
            if _SUBSCRIPT_START.match(words[0].raw.replace("\\\n", "")):
                raise ShellDoubt("an array subscript where bash expects a command")  # a[$(x)]=1
            if node.type == "command" and not assignments and looks_like_assignment(words[0].raw):
                raise ShellDoubt("an assignment this check reads differently from bash")
        cmd = SimpleCommand(tuple(words), tuple(assignments), (*redirects, *extra))
        cmd = self._inline_script(cmd)
        self.commands.append(cmd)
        for statement in after:
            self.statement(statement)
        return None

    def _assignment(self, node: Node) -> Word:
        raw = self.text(node)
        if not looks_like_assignment(raw):
            raise ShellDoubt("an assignment this check reads differently from bash")
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or name.type != "variable_name":
            raise ShellDoubt("array element assignment")
        if value is not None and value.type == "array":
            raise ShellDoubt("array assignment '(...)'")
        buf = WordBuf()
        head_end = value.start_byte if value is not None else node.end_byte
        for ch in self.between(node.start_byte, head_end):
            buf.add(ch, False)
        if value is not None:
            self._parts(value, buf)
        return buf.build(raw)

    def _test_command(self, node: Node, extra: tuple[Redirect, ...]) -> None:
        opener = node.children[0].type if node.children else ""
        if opener != "[":
            raise ShellDoubt(f"bash '{opener}' construct" if opener == "[[" else
                             "arithmetic command '(( ))'")
        self._check_gaps(node, BLANK_GAP)
        words: list[Word] = []
        pending = list(reversed(node.children))
        last_end = -1
        while pending:
            child = pending.pop()
            if child.type in ("unary_expression", "binary_expression",
                              "parenthesized_expression"):
                pending.extend(reversed(child.children))
                continue
            if child.start_byte == last_end:
                raise ShellDoubt("a '[ ]' test this check reads differently from bash")
            last_end = child.end_byte
            if child.is_named and child.type != "test_operator":
                words.append(self.word(child))
            else:
                raw = self.text(child)
                if not re.fullmatch(r"[-!=<>()\[\]a-z]+", raw):
                    raise ShellDoubt("a '[ ]' test this check reads differently from bash")
                words.append(Word(text=raw, raw=raw))
        self.commands.append(SimpleCommand(tuple(words), (), extra))

    def _inline_script(self, cmd: SimpleCommand) -> SimpleCommand:
        """``bash -c 'script'``: the script's commands count too (see module docs)."""
        words = cmd.words
        script = inline_script(words)
        if script is None:
            return cmd
        inner, doubt = walk_source(script, self.depth + 1)
        self.commands.extend(inner)
        if doubt:
            self.note(f"in the script of '{words[0].text} -c': {doubt}")
        return SimpleCommand(cmd.words, cmd.assignments, cmd.redirects, walked_script=not doubt)

    def _substitution(self, node: Node) -> None:
        raw = self.text(node)
        if raw.startswith("`"):
            if "\\" in raw:
                raise ShellDoubt("backquote substitution with escapes (nested backquotes)")
            if len(raw) < 2 or not raw.endswith("`"):
                raise ShellDoubt("unbalanced backquote")
            if "`" in raw[1:-1]:  # bash ends a backquote at the next one; the grammar nests
                raise ShellDoubt("backquote substitution this check reads differently from bash")
        elif not raw.endswith(")") or node.children[-1].is_missing:
            raise ShellDoubt("missing ')'")
        if self.depth > MAX_DEPTH:
            raise ShellDoubt("nesting too deep")
        self.depth += 1
        try:
            self._check_gaps(node, LINE_GAP)
            for child in node.named_children:
                if child.type in REDIRECTS:  # $(<file)
                    self.commands.append(SimpleCommand((), (), tuple(self._redirect(child, []))))
                else:
                    self.statement(child)
        finally:
            self.depth -= 1

