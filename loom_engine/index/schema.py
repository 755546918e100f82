"""The index file's tables, and opening it: a file that is missing, not a database, or
of another schema version is rebuilt empty (the session files are the truth; the index
is only a cache of them).

One row of ``sources`` per indexed file, holding its searchable text in columns; two
FTS5 tables index those columns (external content, kept in step by triggers):

``words``  unicode61 (diacritics folded), for ranked word search (bm25), every column;
``substrings``  trigram, over the short columns only (title, paths, tool names, project), so
           part of a path or identifier (``fig_load`` in ``config_loader.py``) is found.
A trigram index over the whole conversation would be several times the text's size for
matches words already find; over paths it costs little.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from ..private_files import FILE_MODE, private_folder

# Bump whenever a table or what goes into it changes: an older file is rebuilt.
SCHEMA_VERSION = 2
MMAP_BYTES = 256 * 1024 * 1024

# The searchable columns, in the order bm25 weights are given (query.WEIGHTS).
TEXT_COLUMNS = ("title", "prompts", "answers", "tools", "refs")

_TABLES = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources(
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,              -- 'session', or 'memory' (memory_rows)
    name TEXT NOT NULL,              -- the session id
    path TEXT NOT NULL UNIQUE,       -- the file indexed
    project TEXT NOT NULL,           -- the workspace the session ran in
    created REAL NOT NULL,
    updated REAL NOT NULL,           -- the file's mtime when last read
    prompt_count INTEGER NOT NULL DEFAULT 0,
    inode INTEGER NOT NULL,          -- a new file at the same path is indexed afresh
    head TEXT NOT NULL,              -- a hash of the first line: the same file, not a rewrite
    indexed_bytes INTEGER NOT NULL,  -- read up to here (always the end of a whole line)
    title TEXT NOT NULL DEFAULT '',  -- the first prompt
    prompts TEXT NOT NULL DEFAULT '',
    answers TEXT NOT NULL DEFAULT '',
    tools TEXT NOT NULL DEFAULT '',  -- tool names and commands
    refs TEXT NOT NULL DEFAULT ''    -- paths touched, and the project
);
CREATE INDEX sources_kind_project ON sources(kind, project);
-- What a catch-up compares with each file's stat, read without touching the rows' text
-- (a scan of sources itself reads every page of it: 74 ms of a 10,000-session catch-up).
CREATE INDEX sources_files ON sources(kind, path, inode, indexed_bytes, head);
CREATE VIRTUAL TABLE words USING fts5(title, prompts, answers, tools, refs, content='sources',
    content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3');
CREATE VIRTUAL TABLE substrings USING fts5(title, refs, content='sources', content_rowid='id',
    tokenize='trigram');
CREATE TRIGGER sources_added AFTER INSERT ON sources BEGIN
    INSERT INTO words(rowid, title, prompts, answers, tools, refs)
        VALUES (new.id, new.title, new.prompts, new.answers, new.tools, new.refs);
    INSERT INTO substrings(rowid, title, refs) VALUES (new.id, new.title, new.refs);
END;
-- Recall by meaning (only with an embeddings endpoint; see memory_rows, session_vectors):
-- a memory file's vector, keyed by its version; each exchange of a session's, keyed by
-- its place and a digest of its text; and up to where each session was embedded.
CREATE TABLE vectors(source INTEGER PRIMARY KEY, version TEXT NOT NULL, model TEXT NOT NULL,
    vector BLOB NOT NULL);
CREATE TABLE exchange_vectors(
    source INTEGER NOT NULL,
    seq INTEGER NOT NULL,            -- the exchange's place in its session
    digest TEXT NOT NULL,            -- of the text embedded
    model TEXT NOT NULL,
    excerpt TEXT NOT NULL,           -- its start, shown with a hit
    bits BLOB NOT NULL,              -- the vector's sign bits (vectors.sign_bits)
    vector BLOB NOT NULL,            -- float32, unit length
    PRIMARY KEY (source, seq)
);
-- A search's first pass reads the sign bits of a project's exchanges from here alone.
CREATE INDEX exchange_bits ON exchange_vectors(model, source, seq, bits);
CREATE TABLE embedded(source INTEGER PRIMARY KEY, head TEXT NOT NULL, indexed_bytes INTEGER NOT NULL,
    model TEXT NOT NULL);
CREATE TRIGGER sources_removed AFTER DELETE ON sources BEGIN
    INSERT INTO words(words, rowid, title, prompts, answers, tools, refs)
        VALUES ('delete', old.id, old.title, old.prompts, old.answers, old.tools, old.refs);
    INSERT INTO substrings(substrings, rowid, title, refs) VALUES ('delete', old.id, old.title, old.refs);
    DELETE FROM vectors WHERE source = old.id;
    DELETE FROM exchange_vectors WHERE source = old.id;
    DELETE FROM embedded WHERE source = old.id;
END;
CREATE TRIGGER sources_changed AFTER UPDATE OF title, prompts, answers, tools, refs ON sources BEGIN
    INSERT INTO words(words, rowid, title, prompts, answers, tools, refs)
        VALUES ('delete', old.id, old.title, old.prompts, old.answers, old.tools, old.refs);
    INSERT INTO substrings(substrings, rowid, title, refs) VALUES ('delete', old.id, old.title, old.refs);
    INSERT INTO words(rowid, title, prompts, answers, tools, refs)
        VALUES (new.id, new.title, new.prompts, new.answers, new.tools, new.refs);
    INSERT INTO substrings(rowid, title, refs) VALUES (new.id, new.title, new.refs);
END;
"""


class IndexUnusable(Exception):
    """The index file cannot be used as it is (missing, corrupt, another version)."""


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the index at ``path``, checked to be of this schema version;
    :class:`IndexUnusable` otherwise. Readers and the writer both use it (WAL: a reader
    never waits for the writer)."""
    if not path.exists():
        raise IndexUnusable(f"no index at {path}")
    connection = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    try:
        # Pages read in place (memory-mapped), not copied through the page cache one read
        # at a time: a query touching thousands of rows takes half the time.
        connection.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as error:
        connection.close()
        raise IndexUnusable(f"the index at {path} cannot be read ({error})") from None
    if row is None or row[0] != str(SCHEMA_VERSION):
        connection.close()
        raise IndexUnusable(f"the index at {path} is of schema version {row[0] if row else '?'}")
    return connection


def create(path: Path) -> sqlite3.Connection:
    """A new, empty index at ``path``, replacing whatever file was there. Only the
    holder of the writer lock calls it."""
    private_folder(path.parent)
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    # Created 0600 before SQLite opens it: it holds what the sessions said (the WAL
    # and shared-memory files take the database's permission bits).
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    connection = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("BEGIN")
    for statement in _statements(_TABLES):
        connection.execute(statement)
    connection.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    connection.execute("COMMIT")
    return connection


def _statements(script: str) -> list[str]:
    """``script`` split into whole statements (a trigger's body holds semicolons)."""
    statements: list[str] = []
    current = ""
    for line in script.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return statements
