"""The README and docs/ say only what is true of this repository.

* every repository file or folder a page names exists (a path under a top-level folder
  anywhere in the text; in ``docs/architecture.md`` also each module and package it names,
  read against the package of its section and the folder its bullet starts with);
* every relative link between the pages resolves, anchors included;
* every shell block marked ``<!-- docs-test: run -->`` runs: each line is a ``loom``
  command that needs no key and no network, run in an empty folder with throwaway config
  and data folders, and must exit 0 with some output;
* every Python example parses, and the names it imports from Loom's packages exist;
* no page holds an absolute path of a developer's machine.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.doubles.loom_command import LOOM_SCRIPT

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
RUN_MARK = "<!-- docs-test: run -->"
TOP_LEVEL = ("loom_engine", "loom_cli", "builtin_tools", "tests", "bench", "docs", ".ci", "skills", "scripts")
LOOM_PACKAGES = ("loom_engine", "loom_cli", "builtin_tools")

# A path under one of the repository's top-level folders, wherever it stands in the text.
REPO_PATH = re.compile(r"(?<![\w./~-])((?:" + "|".join(re.escape(t) for t in TOP_LEVEL) + r")/[\w./-]*)")
# In the architecture page: a module (`x.py`, `dir/x.py`) or a package (`dir/`) in backticks.
CODE_NAME = re.compile(r"`([\w/]+(?:\.py|/))`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(?P<mark><!-- docs-test: run -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S)
DEVELOPER_PATH = re.compile(r"(?<![\w.~$-])/(?:work|home|Users|root)/[\w.-]+")


@dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    body: str
    checked: bool


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _blocks() -> list[Block]:
    return [Block(page, m["lang"], m["body"], m["mark"] is not None)
            for page in PAGES for m in FENCE.finditer(_text(page))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", _text(page))
    return {_slug(m[1]) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def test_the_pages_are_there_and_the_readme_is_short() -> None:
    names = {p.name for p in PAGES}
    assert {"README.md", "architecture.md", "security.md", "hooks.md", "mcp.md",
            "agents-and-commands.md", "rewind.md", "embedding.md", "development.md"} <= names
    assert len(_text(ROOT / "README.md").splitlines()) <= 250


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    missing = sorted({m[1] for m in REPO_PATH.finditer(_text(page))
                      if not (ROOT / m[1].rstrip(".")).exists()})
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def _architecture_names() -> list[tuple[str, list[Path]]]:
    """Each code name in the architecture page with the folders it may be relative to."""
    names: list[tuple[str, list[Path]]] = []
    package: Path | None = None
    bullet_folder: Path | None = None
    for line in _text(ARCHITECTURE).splitlines():
        if line.startswith("## "):
            found = re.search(r"\(`(\w+)/`\)", line)
            package = ROOT / found[1] if found else None
            bullet_folder = None
            continue
        if line.startswith("- ") and package is not None:
            first = re.search(r"`([\w/]+/)`", line)
            bullet_folder = package / first[1] if first else None
        bases = [b for b in (bullet_folder, package, ROOT) if b is not None]
        names += [(m[1], bases) for m in CODE_NAME.finditer(line)]
    return names


def test_every_module_the_architecture_names_exists() -> None:
    names = _architecture_names()
    missing = sorted({name for name, bases in names if not any((b / name).exists() for b in bases)})
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_the_architecture_describes_every_part() -> None:
    assert len(_architecture_names()) > 80, "the architecture page names the modules it describes"
    text = _text(ARCHITECTURE)
    parts = ["hooks/", "mcp/", "commands/", "snapshots/", "sandbox/", "proxy.py",
             "project_trust.py", "hook_trust.py", "workspace_records.py"]
    assert [p for p in parts if f"`{p}`" not in text and f"sandbox/{p}" not in text] == []
    engine_packages = sorted(p.name + "/" for p in (ROOT / "loom_engine").iterdir()
                             if (p / "__init__.py").exists())
    assert [p for p in engine_packages if f"`{p}`" not in text] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(FENCE.sub("", _text(page))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and (file.suffix != ".md" or anchor not in _anchors(file)):
            broken.append(target)
    assert not broken, f"{page.name} has broken links: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_holds_a_developers_absolute_path(page: Path) -> None:
    assert DEVELOPER_PATH.findall(_text(page)) == []


def test_the_readme_install_and_test_commands_are_what_ci_runs() -> None:
    readme = _text(ROOT / "README.md")
    ci = _text(ROOT / ".ci" / "run")

    def section_commands(title: str) -> list[str]:
        section = readme.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        return [line for m in FENCE.finditer(section) for line in m["body"].splitlines() if line]

    install, test = section_commands("Install"), section_commands("Run the tests")
    assert install == ["python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]'"]
    assert test == [".venv/bin/python -m pytest -q"]
    ci_lines = [line.strip() for line in ci.splitlines()]
    assert install[0] in ci_lines
    assert any(line.endswith(test[0]) for line in ci_lines)


def _checked_commands() -> list[str]:
    return [line.split("#", 1)[0].strip()
            for block in _blocks() if block.checked
            for line in block.body.splitlines() if line.split("#", 1)[0].strip()]


def test_marked_blocks_are_only_loom_commands() -> None:
    commands = _checked_commands()
    assert len(commands) >= 5
    assert all(shlex.split(c)[0] == "loom" for c in commands), commands
    unmarked = [b for b in _blocks() if not b.checked and RUN_MARK in b.body]
    assert unmarked == []


def test_the_marked_shell_examples_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    env.update(LOOM_DATA_DIR=str(tmp_path / "data"), LOOM_CONFIG_DIR=str(tmp_path / "config"))
    workspace = tmp_path / "workspace"
    workspace.mkdir()

    def run(command: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        argv = [*LOOM_SCRIPT, *shlex.split(command)[1:]]
        return command, subprocess.run(argv, cwd=workspace, env=env, capture_output=True,
                                       text=True, timeout=120)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, _checked_commands()))
    failed = [(c, r.returncode, r.stderr[-300:]) for c, r in results if r.returncode != 0 or not r.stdout.strip()]
    assert not failed


def test_the_python_examples_parse_and_import_what_exists() -> None:
    blocks = [b for b in _blocks() if b.lang == "python"]
    assert blocks
    for block in blocks:
        tree = ast.parse(block.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LOOM_PACKAGES:
                module = importlib.import_module(node.module or "")
                absent = [a.name for a in node.names if not hasattr(module, a.name)]
                assert absent == [], f"{block.page.name}: {node.module} has no {absent}"
