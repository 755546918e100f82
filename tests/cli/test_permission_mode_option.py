"""--permission-mode takes its choices from the engine's one list of modes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from loom_engine.permissions.modes import MODES
from tests.doubles.loom_command import LOOM_SCRIPT


def test_the_option_offers_every_mode_and_refuses_others(tmp_path: Path) -> None:
    def loom(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*LOOM_SCRIPT, *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)

    helped = loom("run", "--help")
    assert f"<{'|'.join(MODES)}>" in helped.stdout
    refused = loom("run", "x", "--permission-mode", "yolo")
    assert refused.returncode == 2 and "--permission-mode" in refused.stderr
    assert all(f"'{mode}'" in refused.stderr for mode in MODES)
