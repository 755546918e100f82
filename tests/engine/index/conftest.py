from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.index.session_index import SessionIndex


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def index(tmp_path: Path, sessions: Path) -> SessionIndex:
    return SessionIndex(tmp_path / "index" / "search.db", sessions)
