"""The chat with its agent built by loom_cli.bootstrap (scripted provider), so what a test
sees is what the real start-up reads from the workspace, the config dir and the data dir."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from loom_cli.tui.app import LoomApp
from tests.cli.tui.helpers import Harness
from tests.doubles.loom_command import isolate_loom


def real_bootstrap(monkeypatch: pytest.MonkeyPatch, workspace: Path, tmp_path: Path,
                   script: Sequence[dict[str, Any]] = ({"text": "hi"},)) -> Harness:
    """Settings read from ``tmp_path/config``, data in ``tmp_path/data``, answers from ``script``
    (every agent built, after /clear too, reads the script from its start)."""
    isolate_loom(monkeypatch, tmp_path)
    (tmp_path / "config").mkdir(exist_ok=True)
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(script)))
    monkeypatch.setenv("LOOM_SCRIPT", str(path))
    return Harness(workspace=workspace, data_dir=tmp_path / "data", script=[])


def real_app(harness: Harness) -> LoomApp:
    return harness.app(agent_factory=None, provider="scripted", model="scripted")


def notices(app: LoomApp, words: str) -> list[str]:
    """The lines in the transcript (mounted or scrolled out) that contain ``words``."""
    return [entry.text for entry in app.transcript.entries if entry.kind == "notice" and words in entry.text]
