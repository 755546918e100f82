"""What the warm server imports before it forks: never a module that imports Ray (Ray
reads its user's environment and ~/.ray when imported; a child must do that itself)."""

from __future__ import annotations

import re
from pathlib import Path

from loom_cli.warm.server import NOT_PRELOADED

ROOT = Path(__file__).resolve().parents[3]
_IMPORTS_RAY = re.compile(r"^\s*(import ray\b|from ray\b)", re.MULTILINE)


def test_every_module_that_imports_ray_is_left_to_the_child() -> None:
    importing = [".".join(path.relative_to(ROOT).with_suffix("").parts)
                 for package in ("loom_cli", "loom_engine", "builtin_tools")
                 for path in (ROOT / package).rglob("*.py") if _IMPORTS_RAY.search(path.read_text())]
    assert importing, "no module imports ray: the check looks in the wrong place"
    assert [name for name in importing if not name.startswith(NOT_PRELOADED)] == []
