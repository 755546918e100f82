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
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from ._bash_checks import (
    check_comment,
    check_descriptor_before,
    check_negation,
    check_not_empty,
    inline_script,
    looks_like_assignment,
)
from ._bash_errors import describe_error, is_read_write_operator, only_read_write_errors
from ._bash_words import (
    SAFE_BRACED_EXPANSION,
    SIMPLE_EXPANSION,
    WordBuf,
    add_double_quoted,
    add_unquoted,
    bare_word,
)
from .shell_words import Redirect, RedirectKind, ShellDoubt, SimpleCommand, Word

if TYPE_CHECKING:
    from tree_sitter import Language, Node

MAX_DEPTH = 40  # nesting beyond this is not written by hand; refusing keeps recursion bounded
_CONTAINERS = frozenset({"program", "list", "pipeline", "compound_statement", "subshell",
                         "negated_command", "if_statement", "elif_clause", "else_clause"})
_CONTAINER_TOKENS = frozenset({";", "&", "&&", "||", "|", "|&", "!", "{", "}", "(", ")", "if",
                               "then", "elif", "else", "fi", "\n"})
_COMMANDS = frozenset({"command", "declaration_command", "unset_command", "variable_assignment",
                       "variable_assignments", "test_command"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
# Nodes whose text is one bare word (read by add_unquoted).
_BARE_WORDS = frozenset({"word", "number", "variable_name"})
# Their commands may run in an order, or a number of times, that a flat list cannot
# represent (a `cd` inside a loop changes where later iterations read).
_DOUBTFUL_NODES = frozenset({"while_statement", "for_statement", "c_style_for_statement",
                             "case_statement", "function_definition"})
# Reserved words that, read as a command name, mean the grammar and bash disagree, or
# constructs whose commands may run in an order a flat list cannot represent.
_DOUBTFUL_NAMES = frozenset({"while", "until", "for", "select", "case", "esac", "do", "done",
                             "function", "coproc", "[[", "]]", "if", "then", "else", "elif",
                             "fi", "{", "}", "!", "in"})
_REDIRECT_KINDS: dict[str, RedirectKind] = {
    "&>>": "write", "&>": "write", ">>": "write", ">|": "write", ">": "write", "<>": "write",
    "<": "read", "<&": "dup", ">&": "dup", "<&-": "dup", ">&-": "dup"}
# Matched on the source's bytes, where they stand (no slice decoded per gap).
_BLANK_GAP = re.compile(rb"(?:[ \t]|\\\n)*")
_LINE_GAP = re.compile(rb"(?:[ \t\n]|\\\n)*")
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
    if not _LINE_GAP.fullmatch(source, 0, root.start_byte) or \
            not _LINE_GAP.fullmatch(source, root.end_byte):
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


class _Walker:
    def __init__(self, source: bytes, depth: int) -> None:
        self.src = source
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.doubt = ""
        self.bare_words: dict[str, Word | None] = {}

    def note(self, doubt: str) -> None:
        if not self.doubt:  # shown to the user on one line
            self.doubt = doubt.replace("\r", "\\r").replace("\n", "\\n")

    def text(self, node: Node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def between(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "replace")

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
        self._check_gaps(node, _LINE_GAP)
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
                self._check_gaps(child, _LINE_GAP)
                stack.append(iter(child.children))
            else:
                self.statement(child)

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

    def _redirected(self, node: Node) -> None:
        self._check_gaps(node, _BLANK_GAP)
        body = node.child_by_field_name("body")
        redirects: list[Redirect] = []
        after: list[Node] = []
        for child in node.children:
            if child == body:
                continue
            if child.type not in _REDIRECTS:
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
        self._check_gaps(node, _BLANK_GAP)
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
            if glued and kind not in _REDIRECTS and (before.type in _REDIRECTS or not before.is_named
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
            elif kind in _REDIRECTS:
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
        self._check_gaps(node, _BLANK_GAP)
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

    # -- redirections ------------------------------------------------------------------

    def _redirect(self, node: Node, after: list[Node]) -> list[Redirect]:
        check_descriptor_before(self.src, node)
        if node.type == "heredoc_redirect":
            self._check_gaps(node, _LINE_GAP)
            return self._heredoc(node, after)
        self._check_gaps(node, _BLANK_GAP)
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
            elif kind in _REDIRECTS:
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

    # -- words -------------------------------------------------------------------------

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
            self._check_gaps(node, _LINE_GAP)
            for child in node.named_children:
                if child.type in _REDIRECTS:  # $(<file)
                    self.commands.append(SimpleCommand((), (), tuple(self._redirect(child, []))))
                else:
                    self.statement(child)
        finally:
            self.depth -= 1

