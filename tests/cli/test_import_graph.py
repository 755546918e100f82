"""``loom_cli``'s modules import each other without a circle.

Two rules, read from the source:

- Nothing that runs makes a circle in ``loom_cli``: every import counts, at module level
  or inside a function, except those under ``if TYPE_CHECKING:``.
- Inside the chat (``loom_cli.tui``) the type-only imports count too. They never run, but
  a handler typed against `LoomApp` tied every module the app imports into one knot that
  could only be read together; the commands take the `ChatHost` Protocol instead, and
  this keeps it so. Only edges from a chat module to a chat module are in that graph:
  the chat's types may name the engine's or the CLI's freely.
"""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "loom_cli"
CHAT = "loom_cli.tui"


def _module_name(path: Path) -> str:
    parts = path.relative_to(CLI.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _imports(path: Path, modules: set[str], *, type_only: bool) -> set[str]:
    """The modules ``path`` imports; with ``type_only``, those under TYPE_CHECKING too."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _is_type_checking_block(node) and not type_only:
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
            found.update(c for c in candidates if c in modules)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    found.discard(name)
    # Importing a package's submodule runs the package's __init__ first; our
    # __init__ files import nothing eagerly, so the submodule edge is what counts.
    return found


def _runtime_graph() -> dict[str, set[str]]:
    paths = sorted(CLI.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p, modules, type_only=False) for p in paths}


def _chat_graph() -> dict[str, set[str]]:
    """The chat's modules and every import between them, type-only ones included."""
    paths = [p for p in sorted(CLI.rglob("*.py")) if _in(_module_name(p), CHAT)]
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p, modules, type_only=True) for p in paths}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                found = walk(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = walk(node)
            if found:
                return found
    return None


def test_the_graphs_are_read() -> None:
    runtime, chat = _runtime_graph(), _chat_graph()
    assert "loom_cli.tui.commands.registry" in runtime["loom_cli.tui.app"]
    assert "loom_cli.tui.commands.session" in runtime["loom_cli.tui.commands.registry"]  # from . import session
    assert "loom_cli.bootstrap" in runtime["loom_cli.tui.options"]  # inside a function
    assert "loom_cli.tui.chat_host" not in runtime["loom_cli.tui.commands.rewind"]  # only under TYPE_CHECKING
    assert "loom_cli.tui.chat_host" in chat["loom_cli.tui.commands.rewind"]
    assert "loom_cli.bootstrap" not in chat["loom_cli.tui.options"]  # not a chat module


def test_no_import_circle_inside_loom_cli() -> None:
    cycle = _find_cycle(_runtime_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_no_circle_inside_the_chat_counting_type_only_imports() -> None:
    cycle = _find_cycle(_chat_graph())
    assert cycle is None, "import circle (type-only imports count in the chat): " + " -> ".join(cycle or [])


def test_a_circle_is_found_when_there_is_one() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
