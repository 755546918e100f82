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

from tests.import_graph import ROOT, find_cycle, graph, module_name

CLI = ROOT / "loom_cli"
CHAT = "loom_cli.tui"


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _runtime_graph() -> dict[str, set[str]]:
    return graph(sorted(CLI.rglob("*.py")))


def _chat_graph() -> dict[str, set[str]]:
    """The chat's modules and every import between them, type-only ones included."""
    return graph([p for p in sorted(CLI.rglob("*.py")) if _in(module_name(p), CHAT)], type_only=True)


def test_the_graphs_are_read() -> None:
    runtime, chat = _runtime_graph(), _chat_graph()
    assert "loom_cli.tui.commands.registry" in runtime["loom_cli.tui.app"]
    assert "loom_cli.tui.commands.session" in runtime["loom_cli.tui.commands.registry"]  # from . import session
    assert "loom_cli.bootstrap" in runtime["loom_cli.tui.options"]  # inside a function
    assert "loom_cli.tui.chat_host" not in runtime["loom_cli.tui.commands.rewind"]  # only under TYPE_CHECKING
    assert "loom_cli.tui.chat_host" in chat["loom_cli.tui.commands.rewind"]
    assert "loom_cli.bootstrap" not in chat["loom_cli.tui.options"]  # not a chat module


def test_no_import_circle_inside_loom_cli() -> None:
    cycle = find_cycle(_runtime_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_no_circle_inside_the_chat_counting_type_only_imports() -> None:
    cycle = find_cycle(_chat_graph())
    assert cycle is None, "import circle (type-only imports count in the chat): " + " -> ".join(cycle or [])


def test_a_circle_is_found_when_there_is_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
