"""Search over 1,000 generated sessions (the issue's scale): the right one comes first,
and the index, once built, is found again by a new process's index object."""

from __future__ import annotations

import random
from pathlib import Path

from loom_engine.index.session_index import SessionIndex
from tests.doubles.saved_sessions import Exchange, save_session

TOPICS = ("parser", "migration", "websocket", "cache", "login", "checkout", "logging", "retry", "config")
FILLER = ("the function now checks its input", "tests pass after the change", "the old code swallowed the error",
          "a retry with backoff covers the flaky call", "the loader read the wrong key")


def test_a_thousand_sessions_put_the_right_one_first(tmp_path: Path) -> None:
    sessions, db = tmp_path / "sessions", tmp_path / "index" / "search.db"
    rng = random.Random(24)
    planted = about_retry = ""
    for number in range(1000):
        topic = rng.choice(TOPICS)
        exchanges = [Exchange(f"fix the {topic} bug", answer=". ".join(rng.sample(FILLER, 3)),
                              tools=[("read_file", {"path": f"src/{topic}/core_{number % 7}.py"})])
                     for _ in range(rng.randint(1, 3))]
        if number == 500:
            exchanges.insert(1, Exchange("the quasar lighthouse service drops requests",
                                         answer="The quasar lighthouse pool was too small."))
        if number == 700:
            exchanges = [Exchange("the retry storm after the outage", answer="Retry budgets cap the retry storm: "
                                  "each retry waits, a retry after the budget fails fast.")]
        writer = save_session(sessions, f"/home/dev/repo{number % 20}", exchanges)
        planted = writer.id if number == 500 else planted
        about_retry = writer.id if number == 700 else about_retry

    first = SessionIndex(db, sessions)
    hits = first.search("quasar lighthouse")
    assert [hit.session_id for hit in hits] == [planted]
    assert first.search("retry storm")[0].session_id == about_retry
    assert first.search("retry")[0].session_id == about_retry  # among hundreds that mention it once
    assert len(first.search("retry", limit=50)) == 50

    again = SessionIndex(db, sessions)  # a later process: the same file, nothing to rebuild
    assert again.search("lighthouse", project="/home/dev/repo0")[0].session_id == planted
    assert again.search("lighthouse", project="/home/dev/repo1") == []
