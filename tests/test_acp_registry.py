"""The ACP registry entry (acp/registry/loom/): what Harbor validates (its own
AcpRegistryEntry, from its wheel), the agentclientprotocol/registry's build rules, and the
one fact it repeats — the version — equal to the package's."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

from loom_cli.version import __version__
from tests.doubles.harbor_models import registry_entry_model

ROOT = Path(__file__).resolve().parent.parent
ENTRY_DIR = ROOT / "acp" / "registry" / "loom"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _entry() -> dict[str, object]:
    entry: dict[str, object] = json.loads((ENTRY_DIR / "agent.json").read_text())
    return entry


def test_harbor_accepts_the_entry_and_runs_loom_acp_with_uvx() -> None:
    entry = registry_entry_model().model_validate(_entry())
    uvx = entry.distribution.uvx  # type: ignore[attr-defined]
    assert (entry.id, uvx.package, uvx.args) == ("loom", f"loom-agent=={__version__}", ["acp"])  # type: ignore[attr-defined]
    # Harbor runs `uvx PACKAGE ARGS`: uvx runs the script named as the package, which must be Loom's.
    assert PYPROJECT["project"]["name"] == "loom-agent"
    assert PYPROJECT["project"]["scripts"]["loom-agent"] == PYPROJECT["project"]["scripts"]["loom"]


def test_the_version_is_the_packages() -> None:
    assert _entry()["version"] == __version__ == PYPROJECT["project"]["version"] == version("loom-agent")


def test_the_registry_build_rules_hold() -> None:
    """What agentclientprotocol/registry's build checks of an entry and its folder."""
    entry = _entry()
    assert set(entry) <= {"id", "name", "version", "description", "repository", "website", "authors", "license",
                          "license_url", "icon", "distribution"}
    assert re.fullmatch(r"[a-z][a-z0-9-]*", str(entry["id"])) and entry["id"] == ENTRY_DIR.name
    assert re.match(r"\d+\.\d+\.\d+", str(entry["version"])) and entry["name"] and entry["description"]
    assert set(entry["distribution"]) <= {"binary", "npx", "uvx"}  # type: ignore[arg-type]
    svg = ET.fromstring((ENTRY_DIR / "icon.svg").read_text())
    assert svg.tag.endswith("svg") and (svg.get("width"), svg.get("height")) == ("16", "16")
    colours = {e.get(a) for e in svg.iter() for a in ("fill", "stroke") if e.get(a) is not None}
    assert colours <= {"currentColor", "none"} and "currentColor" in colours
