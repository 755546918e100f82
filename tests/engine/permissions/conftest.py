"""A workspace with a sibling folder outside it and symlinks both ways."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import CommandRun, FileAccess
from loom_engine.workspace import Workspace


@dataclass
class Env:
    ws: Workspace
    outside: Path

    @property
    def root(self) -> Path:
        return self.ws.root

    def manager(self, mode: str = "default", *, allow: tuple[str, ...] = (),
                deny: tuple[str, ...] = (), ask: tuple[str, ...] = ()) -> PermissionManager:
        layers = [RuleLayer("cli", allow=allow, deny=deny, ask=ask)] if (allow or deny or ask) else []
        return PermissionManager(self.ws, mode=mode, layers=layers)  # type: ignore[arg-type]


@pytest.fixture
def env(tmp_path: Path) -> Env:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "docs").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret\n")
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "link_in").symlink_to(root / "src", target_is_directory=True)
    (root / "file_out").symlink_to(outside / "secret.txt")
    return Env(Workspace.at(root), outside)


def bash(pm: PermissionManager, command: str, cwd: Path | None = None):
    return pm.check("bash", CommandRun(command, str(cwd or pm.workspace.root)), is_read_only=False)


def read(pm: PermissionManager, *paths: str, tool: str = "read_file", cwd: Path | None = None):
    return pm.check(tool, FileAccess(tuple(paths), write=False), is_read_only=True, cwd=cwd)


def write(pm: PermissionManager, *paths: str, tool: str = "edit_file", cwd: Path | None = None):
    return pm.check(tool, FileAccess(tuple(paths), write=True), is_read_only=False, cwd=cwd)
