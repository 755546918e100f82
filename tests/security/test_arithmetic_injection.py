"""A prefix allow rule on a builtin must not let the code inside an arithmetic
expression through: bash expands `$(...)` found in an array subscript (`printf -v`,
`declare`, `read`, `test -v`...) or in a `let` expression, even from a quoted word."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import CommandRun
from loom_engine.workspace import Workspace

CASES = [
    ("printf", "printf -v 'a[$(touch {marker})]' x"),
    ("declare", "declare 'b[$(touch {marker})]=1'"),
    ("read", "read 'c[$(touch {marker})]' <<< x"),
    ("test", "test -v 'd[$(touch {marker})]'"),
    ("let", "let 'e[`touch {marker}`]=1'"),
]


def _check(root: Path, command: str, allow: tuple[str, ...]) -> str:
    manager = PermissionManager(Workspace.at(root), layers=[RuleLayer("cli", allow=allow)])
    return manager.check("bash", CommandRun(command, str(root)), is_read_only=False).behavior


@pytest.mark.parametrize(("name", "template"), CASES, ids=[c[0] for c in CASES])
def test_the_payload_really_runs_in_bash(tmp_path: Path, name: str, template: str) -> None:
    marker = tmp_path / "PWNED"
    subprocess.run(["bash", "-c", template.format(marker=marker)], cwd=tmp_path, capture_output=True,
                   timeout=10)
    assert marker.exists()  # so the check below guards something real


@pytest.mark.parametrize(("name", "template"), CASES, ids=[c[0] for c in CASES])
def test_a_prefix_allow_rule_does_not_cover_the_subscript_code(tmp_path: Path, name: str,
                                                              template: str) -> None:
    command = template.format(marker=tmp_path / "PWNED")
    assert _check(tmp_path, command, (f"bash({name}:*)",)) == "ask"


def test_plain_uses_still_match_their_allow_rule(tmp_path: Path) -> None:
    assert _check(tmp_path, "printf -v out '%s' hello", ("bash(printf:*)",)) == "allow"
    assert _check(tmp_path, "declare -a names", ("bash(declare:*)",)) == "allow"
    assert _check(tmp_path, "let 'x = 1 + 2'", ("bash(let:*)",)) == "allow"


def test_the_bare_bash_rule_still_allows_everything(tmp_path: Path) -> None:
    assert _check(tmp_path, CASES[0][1].format(marker=tmp_path / "x"), ("bash",)) == "allow"
