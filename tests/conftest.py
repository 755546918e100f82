"""Shared fixtures for the whole suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Test helpers are imported as ``tests.<pkg>``; plain ``pytest`` (unlike
# ``python -m pytest``) does not put the repository root on sys.path.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from hypothesis import settings  # noqa: E402

# No warm server (loom_cli/warm/) behind a `loom` a test starts with this environment:
# subprocesses inherit it. tests/doubles/loom_command.py's `loom` and the tmux sessions
# of tests/doubles/terminal.py leave it out, so those runs go through a warm server as a
# user's do, paying Loom's start-up once per test process instead of once per run; its
# socket is in this test process's own runtime folder, and it is stopped when the
# process ends. The warm path's own tests use places of their own.
os.environ["LOOM_WARM"] = "0"
_RUNTIME = Path(tempfile.mkdtemp(prefix="loom-tests-run-"))  # 0700: the socket's folder must be private
os.environ["XDG_RUNTIME_DIR"] = str(_RUNTIME)

from tests.doubles.fake_llm.fixtures import fake_llm  # noqa: E402,F401  (re-exported fixture)
from tests.doubles.mcp_servers import ReferenceServers, install  # noqa: E402
from tests.doubles.proxy_origin import http_origin, https_origin  # noqa: E402,F401  (re-exported fixtures)
from tests.doubles.sandbox import lab  # noqa: E402,F401  (re-exported fixture)

# Property tests draw the same thousands of inputs on every run, so CI is repeatable;
# HYPOTHESIS_PROFILE=explore draws fresh ones each run to hunt for new counterexamples.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


# The folders whose tests start Loom (in tmux, as a process, with real MCP servers) go
# first. xdist hands tests out in collection order, and these sit at the end of the
# alphabet: a run of slow tests handed out last keeps one worker busy after the others
# have finished, while thousands of quick tests at the end even the workers out.
_SLOW_FOLDERS_FIRST = ("tests/cli/batch/", "tests/e2e/", "tests/cli/warm/", "tests/integration/", "tests/security/")


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.doubles.warm import WarmPlace, stop_servers

    stop_servers(WarmPlace(_RUNTIME, _RUNTIME / "unused", _RUNTIME / "unused"))
    shutil.rmtree(_RUNTIME, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, folder in enumerate(_SLOW_FOLDERS_FIRST) if item.nodeid.startswith(folder)),
                    len(_SLOW_FOLDERS_FIRST))

    items.sort(key=rank)  # stable: the order within each folder stays


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A temporary git repository with a couple of files."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# demo\n\nA small project for tests.\n")
    (root / "src" / "app.py").write_text('def greet(name):\n    return f"hello {name}"\n')
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture(autouse=True)
def _no_real_claude_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Loom reads Claude Code's user folder (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``): no test
    may see the developer's own; a test that wants one writes it here."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))


@pytest.fixture(scope="session")
def reference_servers() -> ReferenceServers:
    """The MCP reference servers (npm and PyPI), installed once into the test cache."""
    try:
        return install()
    except (RuntimeError, OSError) as error:  # no registry here: say so rather than fail
        pytest.skip(f"the MCP reference servers could not be installed: {error}")
