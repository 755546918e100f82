"""The npm ACP client ``acpx``, installed once into the test cache (as the MCP servers).

Pinned to 0.1.15: every later release needs Node >= 22.12, and this machine's Node is
20. The folder is ``~/.cache/loom-tests/acpx`` (``$LOOM_TEST_ACPX_DIR`` overrides it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

PACKAGE = "acpx@0.1.15"


def cache_dir() -> Path:
    override = os.environ.get("LOOM_TEST_ACPX_DIR")
    return Path(override) if override else Path.home() / ".cache" / "loom-tests" / "acpx"


def install(root: Path | None = None) -> Path:
    """The ``acpx`` program; RuntimeError says why it cannot be had."""
    root = root or cache_dir()
    program = root / "node_modules" / ".bin" / "acpx"
    marker = root / "installed.json"
    try:
        installed = json.loads(marker.read_text()) == PACKAGE
    except (OSError, ValueError):
        installed = False
    if installed and program.exists():
        return program
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise RuntimeError("node and npm are not installed")
    root.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--prefix", str(root), "--no-audit", "--no-fund", PACKAGE],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not program.exists():
        raise RuntimeError(f"npm install {PACKAGE} failed: {done.stderr.strip().splitlines()[-1:]}")
    marker.write_text(json.dumps(PACKAGE))
    return program


if __name__ == "__main__":
    print(install())
