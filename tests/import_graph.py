"""Reading a package's import graph from its source, and finding a circle in it.

Shared by the engine's and the command line's import-graph tests. An import counts
wherever it is written (module level or inside a function); one under
``if TYPE_CHECKING:`` never runs, and counts only when ``type_only`` asks for it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def imports(path: Path, modules: set[str], *, type_only: bool = False) -> set[str]:
    """The ``modules`` that ``path`` imports; with ``type_only``, those under TYPE_CHECKING too."""
    name = module_name(path)
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


def graph(paths: list[Path], *, type_only: bool = False) -> dict[str, set[str]]:
    """Each module of ``paths`` and the modules among them it imports."""
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports(p, modules, type_only=type_only) for p in paths}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle, as the path that closes it (``[a, b, a]``), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                found = walk(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = walk(node)
            if found:
                return found
    return None
