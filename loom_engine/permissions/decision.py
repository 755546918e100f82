"""What a permission check answers: the public decision, the verdicts it is built from,
and how the verdicts of a call's parts combine (deny beats ask beats allow)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .rules import Behavior

__all__ = ["PermissionDecision", "Verdict", "behavior_word", "combine", "one_line", "worst"]


@dataclass(frozen=True)
class PermissionDecision:
    behavior: Literal["allow", "deny", "ask"]
    # One line: which rule, mode or check decided.
    reason: str
    # What "always allow" would save (one rule per part of a compound command).
    suggested_rules: tuple[str, ...] = ()
    # For headless runs: which flag or rule would allow it.
    hint: str = ""
    # Only the user may answer this ask: no hook answers it for them (a command to run
    # outside the sandbox).
    user_only: bool = False
    # A run without a user may allow this ask: an allow rule the user wrote covers it.
    unattended_allow: bool = False

    @property
    def allowed(self) -> bool:
        return self.behavior == "allow"


@dataclass(frozen=True)
class Verdict:
    """The answer for one part of a call (a path, a simple command, a redirection),
    with what the combined decision needs to know about it."""

    behavior: Behavior
    reason: str
    # An explicit rule decided it, or the rules could not be checked (an ask because a
    # command hides code while deny or ask rules are in force); for a combined ask,
    # true when any part's ask is such.
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
    # See PermissionDecision.
    user_only: bool = False
    unattended_allow: bool = False

    def decision(self) -> PermissionDecision:
        """The decision shown to the user: suggestions only for an ask, a hint only for
        what is not allowed, the reason on one line."""
        asks = self.behavior == "ask"
        return PermissionDecision(self.behavior, one_line(self.reason),
                                  self.suggestions if asks else (),
                                  self.hint if self.behavior != "allow" else "",
                                  user_only=asks and self.user_only,
                                  unattended_allow=asks and self.unattended_allow)


_ORDER = {"allow": 0, "ask": 1, "deny": 2}


def worst(verdicts: Sequence[Verdict], empty_reason: str) -> Verdict:
    """The strictest verdict (the first of equals); allow with ``empty_reason`` for none."""
    if not verdicts:
        return Verdict("allow", empty_reason)
    return max(verdicts, key=lambda v: _ORDER[v.behavior])


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """Deny beats ask beats allow; an ask collects every part's "always allow" rule."""
    strictest = worst(verdicts, "nothing to check")
    if strictest.behavior == "allow":
        reasons: list[str] = []
        for v in verdicts:
            if v.reason not in reasons:
                reasons.append(v.reason)
        shown = "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
        return Verdict("allow", shown, strictest.from_rule)
    if strictest.behavior == "deny":
        return strictest
    asks = [v for v in verdicts if v.behavior == "ask"]
    ruled = any(v.from_rule for v in asks)
    if not all(v.suggestions for v in asks):
        # Some part cannot be allowed by a saved rule; say why, once per reason.
        hints: list[str] = []
        for v in asks:
            if not v.suggestions and v.hint and v.hint not in hints:
                hints.append(v.hint)
        return Verdict("ask", strictest.reason, ruled, (), "; ".join(hints))
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
    return Verdict("ask", strictest.reason, ruled, tuple(suggestions), hint)


def behavior_word(behavior: str) -> str:
    return {"deny": "denied", "ask": "always asked", "allow": "allowed"}[behavior]


def one_line(text: str) -> str:
    # Commands and file names may hold line breaks; a reason is shown on one line.
    return text.replace("\r", "\\r").replace("\n", "\\n")
