"""An embedder's strict type checker accepts the engine's ``@tool`` both ways it is
written, and a bare ``Tool`` in its own annotations; and the engine ships the marker
that lets that checker read the annotations at all."""

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

EMBEDDER = '''
from typing import assert_type

from loom_engine.tools.base import Tool, ToolOutput
from loom_engine.tools.function_tool import FunctionTool, tool


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@tool(read_only=True, guidance="Counts words.")
async def count(text: str) -> ToolOutput:
    """Count the words."""
    return ToolOutput(str(len(text.split())))


assert_type(shout, FunctionTool)
assert_type(count, FunctionTool)
tools: list[Tool] = [shout, count]
not_a_number: int = shout  # the one line that must fail: the decorators' types are real
'''


@pytest.mark.timeout(600)  # a cold mypy reads pydantic and the engine: half a minute idle
def test_tool_decorator_type_checks_for_an_embedder(tmp_path: Path) -> None:
    program = tmp_path / "embedder.py"
    program.write_text(textwrap.dedent(EMBEDDER))
    # The engine found on mypy's path, its own findings silenced as an installed
    # package's are: what an embedder with Loom installed sees.
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nmypy_path = {ROOT}\nfollow_imports = silent\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--config-file", str(config),
         "--cache-dir", str(tmp_path / "cache"), str(program)],
        capture_output=True, text=True, cwd=tmp_path, check=False)
    findings = [line.split(": ", 1)[1] for line in done.stdout.splitlines() if ": error: " in line]
    assert findings == ['error: Incompatible types in assignment (expression has type "FunctionTool", '
                        'variable has type "int")  [assignment]'], done.stdout + done.stderr


def test_engine_and_tools_ship_their_type_marker() -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package in ("loom_engine", "builtin_tools"):
        assert (ROOT / package / "py.typed").is_file()
        assert "py.typed" in package_data[package]
