"""The public API: ``loom_engine.__all__`` is honest, importing the engine pulls in no
UI library, and the embedding example (docs/embedding.md) runs as written."""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import loom_engine
from tests.doubles.fake_llm import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parents[2]


def test_every_exported_name_resolves_to_its_defining_object() -> None:
    for name in loom_engine.__all__:
        value = getattr(loom_engine, name)
        module = importlib.import_module(loom_engine._EXPORTS[name])
        assert value is getattr(module, name), name


def test_all_matches_what_type_checkers_see() -> None:
    """The TYPE_CHECKING imports (what IDEs and mypy read) name exactly ``__all__``."""
    tree = ast.parse((ROOT / "loom_engine" / "__init__.py").read_text())
    guarded = next(node for node in tree.body if isinstance(node, ast.If)
                   and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {alias.asname or alias.name for node in guarded.body
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported == set(loom_engine.__all__)


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        loom_engine.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def _engine_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages(loom_engine.__path__, "loom_engine."))


def test_importing_the_whole_engine_imports_no_ui_library() -> None:
    modules = _engine_modules()
    assert len(modules) > 20
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "import loom_engine\n"
            "for name in loom_engine.__all__: getattr(loom_engine, name)\n"
            "print(sorted(m for m in ('textual', 'rich', 'typer', 'click') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_docs_embedding_example_runs(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    page = (ROOT / "docs" / "embedding.md").read_text()
    example = re.search(r"```python\n(.*?)```", page, re.S)
    assert example is not None
    (tmp_path / "main.py").write_text("print('hello')\n")
    fake_llm.enqueue(Reply.tool("read_file", {"path": "main.py"}))
    fake_llm.enqueue(Reply.text("It prints hello."))
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url,
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", example.group(1)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.split()
    assert printed[0] == "turn_started" and printed[-1] == "finished"
    assert "tool_finished" in printed
    assert len(fake_llm.requests) == 2
    assert "print('hello')" in str(fake_llm.requests[1].body["messages"])
