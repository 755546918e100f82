"""No engine module imports OpenTelemetry when it is imported: only inside the functions
that run with telemetry on (and under TYPE_CHECKING, for annotations)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _module_level_imports(tree: ast.Module) -> list[str]:
    found: list[str] = []

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.append(node.module)
            elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)  # a class body runs at import too

    visit(tree.body)
    return found


def test_the_engine_imports_opentelemetry_only_when_telemetry_runs() -> None:
    offenders = []
    for path in sorted((ROOT / "loom_engine").rglob("*.py")):
        for name in _module_level_imports(ast.parse(path.read_text(), str(path))):
            if name.split(".")[0] in ("opentelemetry", "prometheus_client", "grpc"):
                offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []
    # The rule has teeth: a module-level import is found.
    assert _module_level_imports(ast.parse("import opentelemetry.trace\nif x:\n    from grpc import y")) == [
        "opentelemetry.trace", "grpc"]
