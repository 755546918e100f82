"""A chat session is taken into the search index as it closes."""

from __future__ import annotations

from pathlib import Path

from loom_cli.tui.options import index_ended_session
from loom_engine.index.session_index import SessionIndex
from tests.doubles.saved_sessions import Exchange, save_session


def test_a_closed_session_is_found_without_a_catch_up(tmp_path: Path) -> None:
    index = SessionIndex.in_data_dir(tmp_path / "data")
    index.catch_up()  # an index, of no session yet
    writer = save_session(tmp_path / "data" / "sessions", "/w", [Exchange("the gearbox refactor")])
    assert index.search("gearbox", refresh=False) == []
    index_ended_session(writer)
    hits = index.search("gearbox", refresh=False)
    assert [hit.session_id for hit in hits] == [writer.id]


def test_anything_else_is_left_alone(tmp_path: Path) -> None:
    index_ended_session(object())  # no exception, nothing written
    assert not (tmp_path / "data").exists()
