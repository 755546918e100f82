"""``SessionIndex``: search every session of the user, keeping the index up to date.

A search first catches the index up with the session files (unless another process
holds the writer lock and is doing just that: then it reads what is there, as WAL lets
it), then queries it. A missing, corrupt or older index is rebuilt from the files by
whichever process takes the lock first; the others wait for it only when they have no
usable index to read meanwhile.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from ..paths import data_dir, sessions_dir
from ..redact import Redactor
from . import schema
from .query import SearchHit, search
from .session_vectors import BATCH, BUDGET, Embedding, embed_missing, nearest_sessions
from .update import CatchUp, catch_up, catch_up_file, writer_lock
from .vectors import Embed

INDEX_FOLDER = "index"
INDEX_FILE = "search.db"
LOCK_FILE = "write.lock"


class SessionIndex:
    def __init__(self, db_path: Path, sessions_root: Path, *, redactor: Redactor | None = None) -> None:
        self.db_path = db_path
        self.lock_path = db_path.with_name(LOCK_FILE)
        self.sessions_root = sessions_root
        self._redactor = redactor or Redactor()

    @classmethod
    def for_user(cls, redactor: Redactor | None = None) -> SessionIndex:
        """The index of every session of this user, in the user's data dir."""
        return cls(data_dir() / INDEX_FOLDER / INDEX_FILE, sessions_dir(), redactor=redactor)

    @classmethod
    def in_data_dir(cls, folder: Path, redactor: Redactor | None = None) -> SessionIndex:
        """The index of the sessions kept in data folder ``folder`` (its ``sessions/``)."""
        return cls(folder / INDEX_FOLDER / INDEX_FILE, folder / sessions_dir().name, redactor=redactor)

    def catch_up(self, *, wait: bool = False) -> CatchUp | None:
        """Index what the session files gained since the last catch-up; None when another
        process holds the writer lock (and ``wait`` is False)."""
        with writer_lock(self.lock_path, wait=wait) as held:
            if not held:
                return None
            return catch_up(self.db_path, self.sessions_root, self._redactor)

    def index_session(self, path: Path) -> None:
        """Index what one session file gained (at its end); skipped when another process
        is writing the index (its catch-up or the next search's takes it in)."""
        with writer_lock(self.lock_path, wait=False) as held:
            if held:
                catch_up_file(self.db_path, path, self._redactor)

    def search(self, query: str, *, project: str | None = None, limit: int = 20, exclude: Sequence[str] = (),
               as_you_type: bool = False, refresh: bool = True) -> list[SearchHit]:
        """Sessions matching ``query``, best first (see ``query.search``). ``refresh``:
        catch up first (a picker that searches at each key catches up once, then not)."""
        if refresh:
            self.catch_up()
        connection = self._reader()
        try:
            return search(connection, query, project=project, limit=limit, exclude=exclude, as_you_type=as_you_type)
        except sqlite3.DatabaseError:
            # Damaged under us: rebuild from the files, then ask once more.
            connection.close()
            with writer_lock(self.lock_path, wait=True):
                schema.create(self.db_path).close()
                catch_up(self.db_path, self.sessions_root, self._redactor)
            connection = self._reader()
            return search(connection, query, project=project, limit=limit, exclude=exclude, as_you_type=as_you_type)
        finally:
            connection.close()

    def embed_sessions(self, project: str, embed: Embed, model: str, *, budget: int = BUDGET,
                       batch: int = BATCH) -> Embedding:
        """Embed the exchanges of ``project``'s sessions that have no current vector (at
        most ``budget``; see ``session_vectors``). The index is caught up first by a search."""
        return embed_missing(self.db_path, self.lock_path, project, embed, model, self._redactor, budget=budget,
                             batch=batch)

    def nearest(self, query: Sequence[float], model: str, project: str, *, exclude: Sequence[str] = (),
                limit: int = 20) -> list[SearchHit]:
        """``project``'s sessions nearest in meaning to the unit vector ``query``."""
        return nearest_sessions(self.db_path, query, model, project, exclude=exclude, limit=limit)

    def _reader(self) -> sqlite3.Connection:
        try:
            return schema.connect(self.db_path)
        except schema.IndexUnusable:
            self.catch_up(wait=True)  # being built by another process, or never built: wait for it
            return schema.connect(self.db_path)
