"""A workspace with ways out, for the getopt tests (issue 19, hole 2): a symlink to a
folder outside holding a secret, a folder pair for diff whose left side links outside,
and a NUL-separated list naming a file outside.

What shows that a program read outside: the secret text, the name of a file found only
by walking the outside folder, or the name of the file only the list names. (The
symlinks' own targets, which `ls -l` prints, are none of these.)"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import CommandRun
from loom_engine.workspace import Workspace

SECRET = "s3cret-outside-the-workspace"
MODES = ("default", "accept-edits", "plan")
_WALKED_ONLY = "found-by-walking.txt"
_LISTED_ONLY = "named-by-the-list.txt"


@dataclass
class Lab:
    root: Path
    outside: Path

    def behavior(self, command: str, mode: str) -> str:
        pm = PermissionManager(Workspace.at(self.root), mode=mode)  # type: ignore[arg-type]
        return pm.check("bash", CommandRun(command, str(self.root)), is_read_only=False).behavior

    def run(self, argv: list[str], env: dict[str, str] | None = None) -> str:
        """What the real program prints on its standard output, run in the workspace."""
        try:
            done = subprocess.run(argv, cwd=self.root, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=60,
                                  env={**os.environ, "LC_ALL": "C", **(env or {})})
        except subprocess.TimeoutExpired as exc:
            return exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return done.stdout

    def leaks(self, argv: list[str], env: dict[str, str] | None = None) -> bool:
        """Whether the program shows something only reading outside can show."""
        out = self.run(argv, env)
        return any(marker in out for marker in (SECRET, _WALKED_ONLY, _LISTED_ONLY))


def make_lab(tmp_path: Path) -> Lab:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / _WALKED_ONLY).write_text(f"{SECRET}\n")
    (outside / _LISTED_ONLY).write_text(f"{SECRET}\n")
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "file_out").symlink_to(outside / "secret.txt")
    (root / "a").mkdir()
    (root / "a" / "link").symlink_to(outside, target_is_directory=True)
    (root / "b").mkdir()
    (root / "names").write_text(f"{outside / _LISTED_ONLY}\0")
    return Lab(root, outside)
