"""The session index: what it finds, how it keeps up with growing sessions, and how it
recovers from a damaged or older file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from loom_engine.index.schema import SCHEMA_VERSION
from loom_engine.index.session_index import SessionIndex
from tests.doubles.saved_sessions import Exchange, save_session, write_exchange


def _ids(hits: list) -> list[str]:
    return [hit.session_id for hit in hits]


def test_prompts_answers_tools_paths_and_the_project_are_found(index: SessionIndex, sessions: Path) -> None:
    writer = save_session(sessions, "/home/ana/shop", [Exchange(
        "why does checkout double charge", answer="The retry loop resent the capture call.",
        tools=[("edit_file", {"path": "src/payments/capture.py"}), ("bash", {"command": "pytest -k idempotency"})])])
    for query in ("checkout", "resent capture", "edit_file", "idempotency", "payments", "shop"):
        hits = index.search(query)
        assert _ids(hits) == [writer.id], query
    hit = index.search("checkout")[0]
    assert (hit.project, hit.title, hit.prompts) == ("/home/ana/shop", "why does checkout double charge", 1)
    assert hit.updated >= hit.created > 0


def test_part_of_a_path_or_identifier_is_found_after_the_word_hits(index: SessionIndex, sessions: Path) -> None:
    by_path = save_session(sessions, "/p", [Exchange("tidy up",
                                                     tools=[("read_file", {"path": "conf/config_loader.py"})])])
    by_word = save_session(sessions, "/p", [Exchange("the loader is slow")])
    assert _ids(index.search("fig_load")) == [by_path.id]
    assert _ids(index.search("loader")) == [by_word.id, by_path.id]  # a whole word first
    assert index.search("fig_load")[0].marked_snippet() == "/p conf/con«fig_load»er.py"


def test_a_better_match_ranks_first(index: SessionIndex, sessions: Path) -> None:
    passing = save_session(sessions, "/p", [Exchange("update the readme", answer="Mentioned the websocket once.")])
    about_it = save_session(sessions, "/p", [Exchange("the websocket reconnect drops messages",
                                                      answer="The websocket reconnect now replays the buffer.")])
    save_session(sessions, "/p", [Exchange("nothing related")])
    assert _ids(index.search("websocket")) == [about_it.id, passing.id]
    assert _ids(index.search("websocket reconnect")) == [about_it.id]  # every word, not any


def test_the_project_filter_takes_the_folder_and_what_is_beneath_it(index: SessionIndex, sessions: Path) -> None:
    mine = save_session(sessions, "/src/app", [Exchange("flaky test")])
    nested = save_session(sessions, "/src/app/tools/cli", [Exchange("flaky test")])
    other = save_session(sessions, "/src/app2", [Exchange("flaky test")])
    odd = save_session(sessions, "/src/a_p", [Exchange("flaky test")])
    assert sorted(_ids(index.search("flaky", project="/src/app"))) == sorted([mine.id, nested.id])
    assert _ids(index.search("flaky", project="/src/a_p")) == [odd.id]  # _ is no LIKE wildcard
    assert len(index.search("flaky")) == 4 and other.id in _ids(index.search("flaky"))


def test_the_snippet_marks_the_match_on_one_line(index: SessionIndex, sessions: Path) -> None:
    save_session(sessions, "/p", [Exchange("first line\nthe migration failed on\tthe users table\nlast")])
    hit = index.search("migration")[0]
    assert [p.text for p in hit.snippet if p.matched] == ["migration"]
    assert "«migration»" in hit.marked_snippet() and "\n" not in hit.marked_snippet()


def test_a_session_that_grows_is_read_from_where_reading_stopped(index: SessionIndex, sessions: Path) -> None:
    writer = save_session(sessions, "/p", [Exchange("set up the database")], keep_open=True)
    first = index.catch_up()
    assert first is not None and first.read == 1
    size = writer.path.stat().st_size
    assert index.catch_up() == type(first)(read=0, removed=0, rebuilt=False)  # nothing new: nothing read
    write_exchange(writer, Exchange("now add the zeppelin cache"), 1)
    writer.close()
    assert index.catch_up() == type(first)(read=1, removed=0, rebuilt=False)
    hit = index.search("zeppelin")[0]
    assert hit.session_id == writer.id and hit.prompts == 2
    with sqlite3.connect(index.db_path) as connection:
        indexed, prompts = connection.execute("SELECT indexed_bytes, prompts FROM sources").fetchone()
    assert indexed == writer.path.stat().st_size > size
    assert prompts.count("set up the database") == 1  # not read twice


def test_a_line_being_written_is_read_once_it_is_whole(index: SessionIndex, sessions: Path) -> None:
    writer = save_session(sessions, "/p", [Exchange("start")])
    whole = writer.path.read_bytes()
    line = b'{"type":"message","message":{"id":"m9","role":"user","parts":[{"type":"text","text":"quasar"}]}}\n'
    writer.path.write_bytes(whole + line[:30])
    assert index.search("quasar") == []
    writer.path.write_bytes(whole + line)
    assert _ids(index.search("quasar")) == [writer.id]


def test_a_replaced_or_deleted_session_file_is_followed(index: SessionIndex, sessions: Path) -> None:
    writer = save_session(sessions, "/p", [Exchange("alpha topic")])
    index.catch_up()
    other = save_session(sessions, "/q", [Exchange("beta topic")])
    other.path.replace(writer.path)  # another file at the same path
    assert index.search("alpha") == [] and len(index.search("beta")) == 1
    writer.path.unlink()
    assert index.search("beta") == []
    with sqlite3.connect(index.db_path) as connection:
        assert connection.execute("SELECT count(*) FROM sources").fetchone() == (0,)


def test_one_session_is_indexed_when_it_ends(index: SessionIndex, sessions: Path) -> None:
    index.catch_up()
    writer = save_session(sessions, "/p", [Exchange("the nebula refactor")])
    index.index_session(writer.path)
    assert _ids(index.search("nebula", refresh=False)) == [writer.id]
    again = _reopen(sessions, writer.id)
    write_exchange(again, Exchange("and the comet fix"), 1)
    again.close()
    index.index_session(writer.path)
    assert _ids(index.search("comet", refresh=False)) == [writer.id]
    assert index.search("nebula", refresh=False)[0].prompts == 2


def _reopen(sessions: Path, session_id: str):  # type: ignore[no-untyped-def]
    from loom_engine.sessions.store import SessionStore

    store = SessionStore(sessions)
    return store.open_writer(store.load(session_id))


def test_a_corrupt_index_is_rebuilt(index: SessionIndex, sessions: Path) -> None:
    writer = save_session(sessions, "/p", [Exchange("orbital mechanics")])
    index.catch_up()
    index.db_path.write_bytes(b"this is not a database" * 200)
    assert _ids(index.search("orbital")) == [writer.id]


def test_an_index_of_another_schema_version_is_rebuilt(index: SessionIndex, sessions: Path) -> None:
    writer = save_session(sessions, "/p", [Exchange("orbital mechanics")])
    index.catch_up()
    with sqlite3.connect(index.db_path) as connection:
        connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION - 1),))
        connection.execute("DELETE FROM sources")
    result = index.catch_up()
    assert result is not None and result.rebuilt
    assert _ids(index.search("orbital")) == [writer.id]


def test_the_index_file_is_the_users_alone(index: SessionIndex, sessions: Path) -> None:
    save_session(sessions, "/p", [Exchange("anything")])
    index.catch_up()
    assert index.db_path.stat().st_mode & 0o077 == 0
    assert index.db_path.parent.stat().st_mode & 0o077 == 0


def test_secrets_are_not_stored_even_when_the_session_kept_them(index: SessionIndex, sessions: Path) -> None:
    key = "sk-ant-api03-" + "Q7x" * 12
    save_session(sessions, "/p", [Exchange(f"use the key {key} for staging", answer=f"password = \"hunter2{key[-9:]}\"",
                                           tools=[("bash", {"command": f"curl -H 'Authorization: Bearer {key}'"})])],
                 redactor=None)  # the user turned redaction of session files off
    assert len(index.search("staging")) == 1
    stored = b"".join(p.read_bytes() for p in index.db_path.parent.iterdir() if p.is_file())
    assert key.encode() not in stored and key[-20:].encode() not in stored
    assert b"REDACTED" in stored


def test_searching_with_no_sessions_folder_finds_nothing(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "index" / "search.db", tmp_path / "missing")
    assert index.search("anything") == []
