"""Harbor's own pydantic models, loaded from its published wheel, for the tests that
check Loom's output against them.

Harbor (the harness behind Terminal-Bench) requires Python 3.12, so it cannot be installed
into Loom's 3.11 venv. Two parts of it are all these tests need, and both run on 3.11:

- the ATIF models, ``harbor/models/trajectories/`` (pydantic only): imported straight
  from the wheel (a wheel is a zip, and Python imports from zips); ``harbor/__init__``
  loads its heavy parts lazily, so nothing else of Harbor is imported;
- ``AcpRegistryEntry`` and the distribution models it nests, in
  ``harbor/agents/installed/acp.py``: that module as a whole needs 3.12 and the rest of
  Harbor, so only those classes (and the two validators they call) are taken from its
  source and executed — Harbor's code as published, not a copy in this repository.

The wheel is fetched once with ``pip download`` into ``$LOOM_TEST_HARBOR_DIR`` or
``~/.cache/loom-tests/harbor``; ``.ci/run`` fetches it before the tests
(``python -m tests.doubles.harbor_models``). A test skips, naming the reason, only when
the package index cannot be reached.
"""

from __future__ import annotations

import ast
import fcntl
import os
import subprocess
import sys
import types
import zipfile
from functools import cache
from pathlib import Path

import pytest
from pydantic import BaseModel

HARBOR_VERSION = "0.25.0"
WHEEL_NAME = f"harbor-{HARBOR_VERSION}-py3-none-any.whl"
# What AcpRegistryEntry needs of acp.py: the classes and the helpers their validators call.
_REGISTRY_NAMES = ("_ENV_KEY_PATTERN", "_validate_shell_env", "_normalize_binary_checksum", "AcpBinaryTarget",
                   "AcpPackageDistribution", "AcpLocalTarget", "AcpDistribution", "AcpRegistryEntry")


def cache_dir() -> Path:
    override = os.environ.get("LOOM_TEST_HARBOR_DIR")
    return Path(override) if override else Path.home() / ".cache" / "loom-tests" / "harbor"


def fetch_wheel() -> Path:
    """The wheel, downloaded on first use (one process at a time: the tests run in several).
    Raises RuntimeError with pip's last line when it cannot be had."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / WHEEL_NAME
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not wheel.exists():
            done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", f"harbor=={HARBOR_VERSION}",
                                   "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "-d", str(folder)],
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0 or not wheel.exists():
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"pip could not download harbor {HARBOR_VERSION}: {last}")
    return wheel


def _wheel_or_skip() -> Path:
    try:
        return fetch_wheel()
    except RuntimeError as error:
        pytest.skip(str(error))


@cache
def trajectory_model() -> type[BaseModel]:
    """Harbor's ``Trajectory`` (ATIF, current version v1.8)."""
    wheel = str(_wheel_or_skip())
    if wheel not in sys.path:
        sys.path.append(wheel)  # last: nothing of Loom's own can be shadowed by it
    from harbor.models.trajectories import Trajectory

    model: type[BaseModel] = Trajectory
    return model


@cache
def registry_entry_model() -> type[BaseModel]:
    """Harbor's ``AcpRegistryEntry``, executed from the wheel's acp.py."""
    with zipfile.ZipFile(_wheel_or_skip()) as wheel:
        source = wheel.read("harbor/agents/installed/acp.py").decode()
    tree = ast.parse(source)
    wanted = [node for node in tree.body if _defines(node) in _REGISTRY_NAMES]
    missing = set(_REGISTRY_NAMES) - {_defines(node) for node in wanted}
    assert not missing, f"harbor {HARBOR_VERSION}'s acp.py no longer defines {sorted(missing)}"
    preamble = ast.parse("import re\nfrom pydantic import BaseModel, Field, field_validator, model_validator\n")
    # A module of its own, known to sys.modules: pydantic resolves the classes' annotations there.
    module = types.ModuleType("harbor_acp_registry")
    sys.modules[module.__name__] = module
    exec(compile(ast.Module(body=[*preamble.body, *wanted], type_ignores=[]), "harbor/acp.py", "exec"),
         module.__dict__)
    model: type[BaseModel] = module.AcpRegistryEntry
    return model


def _defines(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


if __name__ == "__main__":
    print(fetch_wheel())
