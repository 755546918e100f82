"""`[snapshots]` in config.toml sets the caps and how many prompts are kept; a project's
file may not change them unless the workspace is trusted."""

from __future__ import annotations

from pathlib import Path

from loom_cli.bootstrap import make_checkpointer
from loom_cli.settings import load_settings
from loom_engine.snapshots.checkpoints import Checkpointer


def test_the_user_config_sets_the_caps(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    config = tmp_path / "config.toml"
    config.write_text("[snapshots]\nkeep_prompts = 7\nmax_file_mb = 0.5\nmax_total_mb = 10\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    chosen = load_settings(workspace, config).settings.snapshots
    checkpointer = make_checkpointer(workspace, chosen)
    assert isinstance(checkpointer, Checkpointer)
    assert (checkpointer.caps.keep_prompts, checkpointer.caps.max_file_bytes, checkpointer.caps.max_total_bytes) == \
        (7, 512 * 1024, 10 * 1024 * 1024)
    assert str(checkpointer.git_dir).startswith(str(tmp_path / "data" / "snapshots"))


def test_a_project_cannot_turn_snapshots_off_unless_trusted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".loom").mkdir(parents=True)
    (workspace / ".loom" / "settings.toml").write_text("[snapshots]\nenabled = false\n")
    untrusted = load_settings(workspace, tmp_path / "none.toml")
    assert untrusted.settings.snapshots.enabled
    assert [c.key for c in untrusted.ignored] == ["snapshots.enabled"]
    assert not load_settings(workspace, tmp_path / "none.toml", trusted=True).settings.snapshots.enabled
