"""A bad command line is one line on stderr naming the cause, and exit code 2 (issue 9, item 19)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.doubles.loom_command import LOOM_SCRIPT


def loom(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOOM_SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args, names, see", [
    (["run"], "prompt", "loom run --help"),
    (["--bogus"], "--bogus", "loom --help"),
    (["run", "x", "--output-format", "nope"], "--output-format", "loom run --help"),
    (["run", "x", "--max-turns", "0"], "--max-turns", "loom run --help"),
    (["nosuchcmd"], "nosuchcmd", "loom --help"),
    (["config", "--nope"], "--nope", "loom config --help"),
    (["run", "x", "--provider"], "--provider", "loom"),  # click names no subcommand here
])
def test_a_usage_error_is_one_line(args: list[str], names: str, see: str, tmp_path: Path) -> None:
    done = loom(args, tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("loom: "), done.stderr
    assert names in done.stderr and f"(see {see}" in done.stderr and done.stderr.endswith("--help)\n")


def test_help_and_version_still_work(tmp_path: Path) -> None:
    helped = loom(["run", "--help"], tmp_path)
    assert helped.returncode == 0 and "--output-format" in helped.stdout and helped.stderr == ""
    version = loom(["--version"], tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("loom ")


def test_loom_s_own_usage_errors_keep_their_code(tmp_path: Path) -> None:
    done = loom(["run", "   "], tmp_path)
    assert done.returncode == 2 and done.stderr == "loom: the prompt is empty\n"
