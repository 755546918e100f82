"""Issue 19 §1 "fewer questions": accept-edits with the sandbox, on the bash corpus.

The corpus is the attack table of ``test_shell_parser`` (77 command lines written to
slip past the analysis). In accept-edits, a line the analysis asks about today runs
unasked once it runs confined with no network (Claude Code's autoAllowBashIfSandboxed);
nothing else moves: what is denied stays denied, and the same lines unconfined (a
machine where the sandbox cannot start, in mode auto) ask exactly as before.
``python -m bench bench_sandbox`` prints the counts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import CommandRun, Confinement
from loom_engine.workspace import Workspace
from tests.security.test_shell_parser import ATTACKS

LINES = [line for line, _ in ATTACKS]


def decisions(root: Path, confinement: Confinement | None) -> list[str]:
    manager = PermissionManager(Workspace.at(root), mode="accept-edits")
    return [manager.check("bash", CommandRun(line, str(root), confinement), is_read_only=False).behavior
            for line in LINES]


def test_the_sandbox_removes_the_accept_edits_questions_of_the_corpus(tmp_path: Path) -> None:
    today = decisions(tmp_path, None)
    confined = decisions(tmp_path, Confinement("off"))
    moved = Counter(zip(today, confined, strict=True))
    asked_today = today.count("ask")
    assert len(LINES) == 77 and asked_today == 60
    assert confined.count("ask") == 0 and moved[("ask", "allow")] == asked_today
    assert moved[("deny", "deny")] == today.count("deny") == 9  # writes outside: still refused
    assert all(after != "allow" or before in ("ask", "allow") for before, after in zip(today, confined, strict=True))


def test_network_on_or_the_setting_off_keeps_every_question(tmp_path: Path) -> None:
    today = decisions(tmp_path, None)
    assert decisions(tmp_path, Confinement("on")) == today
    assert decisions(tmp_path, Confinement("off", auto_allow_in_accept_edits=False)) == today
