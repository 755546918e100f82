"""protected_layer: edits of the application's own places ask, in every mode."""

from pathlib import Path

import pytest

from loom_engine.permissions.layers import protected_layer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import FileAccess
from loom_engine.workspace import Workspace


@pytest.mark.parametrize("mode", ["default", "accept-edits", "bypass"])
def test_an_edit_in_a_protected_folder_asks_in_every_mode(tmp_path: Path, mode: str) -> None:
    own = tmp_path / "cfg[1]*"  # glob characters in the name stand for themselves
    own.mkdir()
    manager = PermissionManager(Workspace.at(tmp_path), mode=mode,  # type: ignore[arg-type]
                                layers=[protected_layer("Loom's own config", [own])])
    for target in (own / "config.toml", own / "agents" / "x.md", own):
        decision = manager.check("write_file", FileAccess((str(target),), write=True), is_read_only=False)
        assert decision.behavior == "ask", target
        assert "Loom's own config" in decision.reason
    beside = manager.check("write_file", FileAccess((str(tmp_path / "cfg11"),), write=True), is_read_only=False)
    assert beside.behavior == ("ask" if mode == "default" else "allow")
    read = manager.check("read_file", FileAccess((str(own / "config.toml"),), write=False), is_read_only=True)
    assert read.behavior == "allow"
