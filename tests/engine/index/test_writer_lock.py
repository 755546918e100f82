"""One writer at a time, across processes; readers never wait for it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from loom_engine.index.session_index import SessionIndex
from tests.doubles.saved_sessions import Exchange, save_session

_HOLD = """
import sys
from pathlib import Path
from loom_engine.index.update import writer_lock
with writer_lock(Path(sys.argv[1]), wait=True):
    print("held", flush=True)
    sys.stdin.readline()  # until the test says so
"""

_BUILD = """
import sys
from pathlib import Path
from loom_engine.index.session_index import SessionIndex
index = SessionIndex(Path(sys.argv[1]), Path(sys.argv[2]))
print("ready", flush=True)
sys.stdin.readline()
print(index.catch_up(wait=True), flush=True)
"""


def _python(code: str, *args: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def test_a_second_writer_skips_while_the_lock_is_held_and_readers_still_read(index: SessionIndex,
                                                                              sessions: Path) -> None:
    first = save_session(sessions, "/p", [Exchange("the lighthouse keeper")])
    index.catch_up()
    later = save_session(sessions, "/p", [Exchange("the lighthouse lamp")])
    holder = _python(_HOLD, index.lock_path)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert index.catch_up() is None  # another process writes: this one does not wait
        assert [hit.session_id for hit in index.search("lighthouse")] == [first.id]  # read what is there
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait()
    assert sorted(hit.session_id for hit in index.search("lighthouse")) == sorted([first.id, later.id])


def test_two_processes_building_at_once_leave_one_whole_index(tmp_path: Path, sessions: Path) -> None:
    written = [save_session(sessions, f"/p{n % 3}", [Exchange(f"task {n} about gravel"), Exchange("more")]).id
               for n in range(60)]
    db_path = tmp_path / "index" / "search.db"
    builders = [_python(_BUILD, db_path, sessions) for _ in range(2)]
    for builder in builders:
        assert builder.stdout is not None and builder.stdout.readline() == "ready\n"
    for builder in builders:  # both start as nearly together as two processes can
        assert builder.stdin is not None
        builder.stdin.write("go\n")
        builder.stdin.flush()
    outputs = [builder.communicate()[0] for builder in builders]
    assert all(builder.returncode == 0 for builder in builders), outputs
    # One built it (60 read); the other, after it, found nothing new to read.
    reads = sorted(line.split("read=")[1].split(",")[0] for line in outputs)
    assert reads == ["0", "60"], outputs
    with sqlite3.connect(db_path) as connection:
        names = [row[0] for row in connection.execute("SELECT name FROM sources")]
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert sorted(names) == sorted(written)
    assert len(SessionIndex(db_path, sessions).search("gravel", limit=100, refresh=False)) == 60


def test_a_reader_is_not_blocked_by_a_write_in_progress(index: SessionIndex, sessions: Path) -> None:
    first = save_session(sessions, "/p", [Exchange("the harbour crane")])
    index.catch_up()
    writer = sqlite3.connect(index.db_path, isolation_level=None, timeout=0)
    try:
        assert writer.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # what lets readers through
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM sources")  # not committed: readers still see the index before it
        assert [hit.session_id for hit in index.search("harbour", refresh=False)] == [first.id]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
