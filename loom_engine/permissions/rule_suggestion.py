"""The rule "always allow" saves for a simple command that asked: ``bash(npm test:*)``
when the second word names a subcommand, otherwise the exact command."""

from __future__ import annotations

from .commands import strip_wrappers
from .shell import SimpleCommand, quote_words

# Second words that name a subcommand (`npm test`, `git commit`), for "always allow".
_NO_PREFIX_SUGGESTION = frozenset({"rm", "rmdir", "mv", "cp", "dd", "chmod", "chown", "chgrp",
                                   "sudo", "su", "doas", "kill", "pkill", "killall", "ln",
                                   "truncate", "shred", "eval", "exec", "source", ".", "cd",
                                   # their second word is a file or a pattern
                                   "ls", "cat", "head", "tail", "wc", "grep", "rg", "find",
                                   "diff", "stat", "du", "echo", "which", "touch", "mkdir"})


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
