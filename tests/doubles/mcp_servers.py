"""The MCP reference servers the tests run for real, installed once into a cache folder.

``@modelcontextprotocol/server-everything`` and ``server-filesystem`` come from npm,
``mcp-server-git`` and ``mcp-server-time`` from PyPI (``pip install --target``). The
folder is ``$LOOM_TEST_MCP_DIR`` or ``~/.cache/loom-tests/mcp-servers``; ``.ci/run``
fills it before the tests (``python -m tests.doubles.mcp_servers``). A test that needs a
server skips, naming the reason, only when the registry cannot be reached.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Pinned: the reference servers change their tools between releases, and the tests name them.
NPM_PACKAGES = ("@modelcontextprotocol/server-everything@2026.8.31",
                "@modelcontextprotocol/server-filesystem@2026.8.31")
PYPI_PACKAGES = ("mcp-server-git==2026.10.19", "mcp-server-time==2026.10.19")
MISBEHAVING = Path(__file__).with_name("mcp_misbehaving.py")


def cache_dir() -> Path:
    override = os.environ.get("LOOM_TEST_MCP_DIR")
    return Path(override) if override else Path.home() / ".cache" / "loom-tests" / "mcp-servers"


@dataclass(frozen=True)
class ReferenceServers:
    root: Path

    @property
    def everything_js(self) -> Path:
        return self.root / "node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

    @property
    def filesystem_js(self) -> Path:
        return self.root / "node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

    @property
    def python_path(self) -> Path:
        return self.root / "py"

    def everything(self, *args: str) -> dict[str, object]:
        return {"command": "node", "args": [str(self.everything_js), *args]}

    def filesystem(self, folder: Path) -> dict[str, object]:
        return {"command": "node", "args": [str(self.filesystem_js), str(folder)]}

    def python_server(self, module: str, *args: str) -> dict[str, object]:
        return {"command": sys.executable, "args": ["-m", module, *args],
                "env": {"PYTHONPATH": str(self.python_path)}}

    def misbehaving(self) -> dict[str, object]:
        return {"command": sys.executable, "args": [str(MISBEHAVING)]}


def install(root: Path | None = None) -> ReferenceServers:
    """Install what is missing; RuntimeError says why when it cannot."""
    root = root or cache_dir()
    servers = ReferenceServers(root)
    node_marker = root / "node" / "installed.json"
    if not (servers.everything_js.exists() and servers.filesystem_js.exists()) or not _holds(node_marker,
                                                                                             NPM_PACKAGES):
        if shutil.which("npm") is None or shutil.which("node") is None:
            raise RuntimeError("node and npm are not installed")
        (root / "node").mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["npm", "install", "--prefix", str(root / "node"), "--no-audit", "--no-fund",
                               *NPM_PACKAGES], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"npm install failed: {done.stderr.strip().splitlines()[-1:]}")
        node_marker.write_text(json.dumps(list(NPM_PACKAGES)))
    marker = root / "py" / "installed.json"
    if not _holds(marker, PYPI_PACKAGES):
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(root / "py"),
                               *PYPI_PACKAGES], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"pip install failed: {done.stderr.strip().splitlines()[-1:]}")
        marker.write_text(json.dumps(list(PYPI_PACKAGES)))
    return servers


def _holds(marker: Path, packages: tuple[str, ...]) -> bool:
    """Whether the folder the marker sits in was installed with exactly these packages."""
    try:
        return bool(json.loads(marker.read_text()) == list(packages))
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    print(install().root)
