"""What a person types is never FTS5 syntax: every query runs, and finds its words."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.index.query import split_marks, substring_query, word_query
from loom_engine.index.session_index import SessionIndex
from tests.doubles.saved_sessions import Exchange, save_session

HOSTILE = ['"', '""', "'", "AND", "OR NOT", "NEAR(a b)", "a NEAR/2 b", "title:secret", "{title prompts}: x",
           "*", "a*", "^start", "-minus", "+plus", "(", ")", "((a)", "a:b:c", "\x00", "pa\x00rser", "\ud800",
           "🦀 rust", "日本語", "ÿ́", "\u200b", "\\", "%", "_", "a\nb", "   ", "", "x" * 5000,
           "'; DROP TABLE sources; --"]


@pytest.mark.parametrize("query", HOSTILE)
def test_no_query_breaks_the_search(index: SessionIndex, sessions: Path, query: str) -> None:
    save_session(sessions, "/p", [Exchange("the parser reads NEAR(a b) and title:secret")])
    for as_you_type in (False, True):
        index.search(query, as_you_type=as_you_type)  # no exception is the point
    assert len(index.search("parser")) == 1  # and the index is intact


def test_operators_are_searched_as_words(index: SessionIndex, sessions: Path) -> None:
    save_session(sessions, "/p", [Exchange("keep the AND gate and the NOT gate")])
    save_session(sessions, "/p", [Exchange("the cafe opens at nine")])
    assert len(index.search("NOT gate")) == 1
    assert len(index.search('"gate"')) == 1  # the quotes are text around a word
    assert len(index.search("café")) == 1  # diacritics folded
    assert len(index.search("pa\x00rser")) == 0


def test_words_are_quoted_and_anded() -> None:
    assert word_query('fix "the" parser') == '"fix" """the""" "parser"'
    assert word_query("half typ", as_you_type=True) == '"half" "typ"*'
    assert word_query(" \x00 ") is None
    assert substring_query("ab cde") is None and substring_query("cde") == '"cde"'


def test_a_typed_prefix_finds_the_word_only_as_you_type(index: SessionIndex, sessions: Path) -> None:
    save_session(sessions, "/p", [Exchange("speed it up", answer="the tokenizer was slow")])
    assert index.search("tok") == []  # (the answer is not searched for substrings: only titles and paths)
    assert len(index.search("tok", as_you_type=True)) == 1


def test_a_snippet_splits_into_marked_parts() -> None:
    parts = split_marks("a \x02b\x03 c\x02d\x03")
    assert [(p.text, p.matched) for p in parts] == [("a ", False), ("b", True), (" c", False), ("d", True)]
