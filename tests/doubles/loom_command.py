"""Running the installed `loom` as a user does, against the fake LLM server.

One place for the command line, and for an environment that points Loom at the fake
server with a throwaway data and config folder (and none of the caller's own keys).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.doubles.fake_llm import FakeLLMServer

# Loom started cold in a fresh interpreter (for tests that add interpreter options, or
# read what the process itself imported, or hold its pid).
LOOM = [sys.executable, "-m", "loom_cli"]
# The installed `loom`, as a user's shell runs it: through a warm server when one is up
# (tests/conftest.py gives each test process its own; ``LOOM_WARM=0`` in the environment
# makes a run cold, as for a user).
LOOM_SCRIPT = [str(Path(sys.executable).with_name("loom"))]


def loom_env(tmp_path: Path, server: FakeLLMServer, *, api_key: str = "test-key", **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    env.update(ANTHROPIC_API_KEY=api_key, ANTHROPIC_BASE_URL=server.anthropic_base_url,
               LOOM_DATA_DIR=str(tmp_path / "data"), LOOM_CONFIG_DIR=str(tmp_path / "config"),
               LOOM_PROVIDER="anthropic", LOOM_MODEL="claude-sonnet-4-6",
               CLAUDE_CONFIG_DIR=str(tmp_path / "claude-home"))  # never the caller's own ~/.claude
    env.update(extra)
    return env


def loom(args: list[str], cwd: Path, env: dict[str, str], *, stdin: bytes | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `loom ARGS` in ``cwd``; output decoded leniently, so a test can assert on bad bytes.
    Without ``stdin`` its standard input is empty (not the test runner's, which `loom run`
    would wait for as piped input)."""
    feed: dict[str, Any] = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    done = subprocess.run(LOOM_SCRIPT + args, cwd=cwd, env=env, capture_output=True, timeout=timeout, **feed)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


def isolate_loom(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *,
                 script: Sequence[Mapping[str, Any]] | None = None) -> None:
    """Loom in this test process reads none of the caller's keys, settings or data: its data
    and config folders are ``tmp_path/data`` and ``tmp_path/config``; with ``script``, the
    scripted provider gives those answers (``LOOM_SCRIPT``)."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOOM_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))  # never the caller's own ~/.claude
    if script is not None:
        path = tmp_path / "script.json"
        path.write_text(json.dumps(list(script)))
        monkeypatch.setenv("LOOM_SCRIPT", str(path))
