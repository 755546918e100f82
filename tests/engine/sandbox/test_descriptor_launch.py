"""The descriptor launcher: the seccomp program at the named descriptor, or no command at all."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

from loom_engine.sandbox import descriptor_launch


def launch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-S", descriptor_launch.__file__, *args],
                          capture_output=True, text=True, timeout=30, check=False)


def test_the_command_reads_the_program_at_the_descriptor() -> None:
    program = base64.b64encode(b"\x06\x00\x00\x00\x00\x00\xff\x7f").decode("ascii")
    done = launch("9", program, sys.executable, "-c", "import os; print(os.read(9, 100).hex())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "060000000000ff7f"


def test_a_bad_program_runs_nothing(tmp_path: Path) -> None:
    done = launch("9", "not base64!", "touch", str(tmp_path / "ran"))
    assert done.returncode == descriptor_launch.FAILED
    assert done.stderr.startswith("loom descriptor launcher: cannot pass the seccomp program")
    assert not (tmp_path / "ran").exists()
