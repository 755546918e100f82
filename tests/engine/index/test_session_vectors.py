"""Past sessions by meaning: each exchange embedded once (lazily, a budget per call),
kept in the index file, re-embedded only when its text or the model changes, dropped
with its session; ranked by the fake embedder's meaning and fused with word ranks."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from loom_engine.index import session_vectors
from loom_engine.index.query import SearchHit
from loom_engine.index.session_index import SessionIndex
from loom_engine.index.session_vectors import fuse
from loom_engine.index.vectors import unit
from tests.doubles.fake_llm.embeddings import embed as fake_embed
from tests.doubles.saved_sessions import Exchange, save_session, write_exchange


class CountingEmbedder:
    """The fake server's embedder, in-process, remembering every text sent."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [fake_embed(text) for text in texts]

    @property
    def texts(self) -> list[str]:
        return [text for batch in self.batches for text in batch]


def _vectors(index: SessionIndex) -> list[tuple[int, int, str]]:
    with sqlite3.connect(index.db_path) as connection:
        return connection.execute("SELECT source, seq, model FROM exchange_vectors ORDER BY source, seq").fetchall()


def test_each_exchange_is_embedded_once_and_kept_across_a_restart(index: SessionIndex, sessions: Path) -> None:
    save_session(sessions, "/p", [Exchange("fix the parser", answer="An off-by-one in the tokenizer."),
                                  Exchange("now the docs", answer="Documented the grammar.")])
    save_session(sessions, "/elsewhere", [Exchange("billing export")])
    index.catch_up()
    embedder = CountingEmbedder()
    done = index.embed_sessions("/p", embedder, "m1")
    assert (done.exchanges, done.requests, done.behind) == (2, 1, 0)
    assert embedder.texts == ["fix the parser An off-by-one in the tokenizer.", "now the docs Documented the grammar."]
    restarted = SessionIndex(index.db_path, index.sessions_root)
    again = restarted.embed_sessions("/p", embedder, "m1")
    assert (again.exchanges, again.requests) == (0, 0) and len(embedder.batches) == 1
    assert all(model == "m1" for _, _, model in _vectors(index)) and len(_vectors(index)) == 2  # not /elsewhere's


def test_a_grown_session_embeds_only_its_new_exchange(index: SessionIndex, sessions: Path) -> None:
    writer = save_session(sessions, "/p", [Exchange("first question"), Exchange("second question")], keep_open=True)
    index.catch_up()
    embedder = CountingEmbedder()
    index.embed_sessions("/p", embedder, "m1")
    write_exchange(writer, Exchange("third question", answer="the third answer"), 2)
    writer.close()
    index.catch_up()
    index.embed_sessions("/p", embedder, "m1")
    assert embedder.batches[1:] == [["third question the third answer"]]


def test_another_model_re_embeds_and_replaces_the_vectors(index: SessionIndex, sessions: Path) -> None:
    save_session(sessions, "/p", [Exchange("fix the parser"), Exchange("now the docs")])
    index.catch_up()
    embedder = CountingEmbedder()
    index.embed_sessions("/p", embedder, "m1")
    changed = index.embed_sessions("/p", embedder, "m2")
    assert changed.exchanges == 2 and len(embedder.texts) == 4
    assert {model for _, _, model in _vectors(index)} == {"m2"}
    query = unit(fake_embed("parser"))
    assert index.nearest(query, "m1", "/p") == []  # the old model's vectors are gone
    assert [hit.title for hit in index.nearest(query, "m2", "/p")] == ["fix the parser"]


def test_a_budget_per_call_newest_sessions_first(index: SessionIndex, sessions: Path) -> None:
    for number in range(5):
        writer = save_session(sessions, "/p", [Exchange(f"task {number} part {part}") for part in ("one", "two")])
        os.utime(writer.path, (1_700_000_000 + number, 1_700_000_000 + number))
    index.catch_up()
    embedder = CountingEmbedder()
    first = index.embed_sessions("/p", embedder, "m1", budget=5)
    assert (first.exchanges, first.behind) == (5, 3)  # two sessions whole, one half-way
    assert embedder.texts[0].startswith("task 4")  # the newest session first
    rest = index.embed_sessions("/p", embedder, "m1", budget=50)
    assert (rest.exchanges, rest.behind) == (5, 0)
    assert len({text for text in embedder.texts}) == 10  # nothing embedded twice


def test_batches_of_the_given_size(index: SessionIndex, sessions: Path) -> None:
    for number in range(3):
        save_session(sessions, "/p", [Exchange(f"task {number} part {part}") for part in range(3)])
    index.catch_up()
    embedder = CountingEmbedder()
    done = index.embed_sessions("/p", embedder, "m1", batch=4)
    assert done.requests == 3 and [len(batch) for batch in embedder.batches] == [4, 4, 1]


def test_a_session_file_removed_takes_its_vectors_with_it(index: SessionIndex, sessions: Path) -> None:
    kept = save_session(sessions, "/p", [Exchange("keep me")])
    gone = save_session(sessions, "/p", [Exchange("remove me")])
    index.catch_up()
    index.embed_sessions("/p", CountingEmbedder(), "m1")
    gone.path.unlink()
    index.catch_up()
    assert len(_vectors(index)) == 1
    assert [hit.session_id for hit in index.nearest(unit(fake_embed("keep me")), "m1", "/p")] == [kept.id]


def test_only_redacted_text_is_sent(index: SessionIndex, sessions: Path) -> None:
    key = "sk-ant-api03-" + "Q7x" * 12
    save_session(sessions, "/p", [Exchange(f"use the key {key} for staging")], redactor=None)
    index.catch_up()
    embedder = CountingEmbedder()
    index.embed_sessions("/p", embedder, "m1")
    assert len(embedder.texts) == 1 and key[-20:] not in embedder.texts[0] and "REDACTED" in embedder.texts[0]


def _hit(path: str) -> SearchHit:
    return SearchHit(session_id=path, project="/p", title="", created=0, updated=0, prompts=1, path=path, snippet=(),
                     rank=0)


def test_fusion_puts_a_session_both_rankings_agree_on_first() -> None:
    words = [_hit("a"), _hit("b"), _hit("c")]
    meaning = [_hit("d"), _hit("b")]
    assert [hit.path for hit in fuse(words, meaning, 10)] == ["b", "a", "d", "c"]
    assert [hit.path for hit in fuse(words, [], 2)] == ["a", "b"]


def test_only_the_closest_by_sign_bits_are_compared_exactly(index: SessionIndex, sessions: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for words in ("alpha beta gamma", "delta epsilon", "zeta eta theta", "iota kappa lambda"):
        save_session(sessions, "/p", [Exchange(words)])
    index.catch_up()
    index.embed_sessions("/p", CountingEmbedder(), "m1")
    compared: list[bytes] = []
    exact = session_vectors.similarity
    monkeypatch.setattr(session_vectors, "similarity", lambda query, blob: compared.append(blob) or exact(query, blob))
    monkeypatch.setattr(session_vectors, "RESCORED", 1)
    hits = index.nearest(unit(fake_embed("zeta eta theta")), "m1", "/p")
    assert [hit.title for hit in hits] == ["zeta eta theta"] and len(compared) == 1
