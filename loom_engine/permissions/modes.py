"""The permission modes, their order of width, and the Shift+Tab cycle.

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

This module is the one list of modes: the CLI imports it at start-up, so it imports
nothing else.
"""

from __future__ import annotations

from typing import Literal, get_args

# In the order Shift+Tab cycles them.
PermissionMode = Literal["default", "accept-edits", "plan", "bypass"]
MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)
# The same modes in Claude Code's words: agent files use them, and hook scripts compare
# the payload's permission_mode against them.
CLAUDE_MODE_NAMES: dict[PermissionMode, str] = {"default": "default", "accept-edits": "acceptEdits",
                                                "plan": "plan", "bypass": "bypassPermissions"}
# From the mode that lets least through to the one that lets most: a sub-agent's mode is
# never wider than its parent's, and an untrusted project may only narrow the mode.
_NARROW_TO_WIDE: tuple[PermissionMode, ...] = ("plan", "default", "accept-edits", "bypass")


def check_mode(mode: str) -> PermissionMode:
    """``mode`` itself when it names a mode; ValueError naming the choices otherwise."""
    for known in MODES:
        if known == mode:
            return known
    raise ValueError(f"unknown permission mode {mode!r}; use one of: {', '.join(MODES)}")


def is_wider(mode: PermissionMode, than: PermissionMode) -> bool:
    """Whether ``mode`` lets more run without asking than ``than`` does."""
    return _NARROW_TO_WIDE.index(mode) > _NARROW_TO_WIDE.index(than)


def narrower(a: PermissionMode, b: PermissionMode) -> PermissionMode:
    """The mode of the two that lets less through."""
    return a if is_wider(b, a) else b


def next_mode(mode: str, *, include_bypass: bool = False) -> PermissionMode:
    """The mode Shift+Tab switches to after ``mode``."""
    cycle = MODES if include_bypass else tuple(m for m in MODES if m != "bypass")
    if mode not in cycle:
        return cycle[0]
    return cycle[(cycle.index(mode) + 1) % len(cycle)]
