"""The engine's modules import each other without a circle.

Every import inside ``loom_engine`` counts — at module level or inside a function —
except those under ``if TYPE_CHECKING:``, which never run. A circle means two modules
that cannot be understood (or loaded) one without the other.
"""

from __future__ import annotations

from tests.import_graph import ROOT, find_cycle, graph

ENGINE = ROOT / "loom_engine"


def _graph() -> dict[str, set[str]]:
    return graph(sorted(ENGINE.rglob("*.py")))


def test_the_graph_is_read() -> None:
    edges = _graph()
    assert "loom_engine.run" in edges["loom_engine.agent"]
    assert "loom_engine.turn_state" in edges["loom_engine.sessions.store"]


def test_no_import_circle_inside_the_engine() -> None:
    cycle = find_cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_a_circle_is_found_when_there_is_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
