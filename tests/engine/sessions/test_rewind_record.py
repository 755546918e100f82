"""A rewind is one more record: loading gives the rewound conversation, the abandoned
branch stays in the file, and the last rewind can be undone."""

from __future__ import annotations

from pathlib import Path

from loom_engine.messages import Message, TextPart
from loom_engine.sessions.store import SessionStore
from loom_engine.transcript import Transcript


def test_loading_gives_the_rewound_conversation_and_nothing_is_lost(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(tmp_path, provider="anthropic", model="m")
    transcript = Transcript((), writer)
    first, second = Message.user("first prompt"), Message.user("second prompt")
    for message in (first, Message.assistant(TextPart("one")), second, Message.assistant(TextPart("two"))):
        transcript.append(message)
    assert transcript.rewind_to(second.id, undo_snapshot=7)
    assert [m.text for m in transcript.messages] == ["first prompt", "one"]
    transcript.append(Message.user("[files reverted]", reminder=True, rewind=True))
    writer.close()
    loaded = store.load(writer.id)
    assert [m.text for m in loaded.messages] == ["first prompt", "one", "[files reverted]"]
    assert "second prompt" in loaded.info.path.read_text()  # the branch is kept
    last = loaded.last_rewind
    assert last is not None and last.prompt_id == second.id and last.undo_snapshot == 7
    assert [m.text for m in last.before] == ["first prompt", "one", "second prompt", "two"]
    assert not last.added_since  # only a reminder came after: an undo loses nothing

    writer, loaded = store.resume(loaded)
    again = Transcript(loaded.messages, writer)
    again.restore_history(last.before)
    again.append(Message.user("third prompt"))
    again.append(Message.assistant(TextPart("three")))
    writer.close()
    reloaded = store.load(writer.id)
    assert [m.text for m in reloaded.messages] == ["first prompt", "one", "second prompt", "two", "third prompt",
                                                  "three"]
    assert reloaded.last_rewind is not None and reloaded.last_rewind.added_since


def test_a_prompt_not_in_the_conversation_changes_nothing(tmp_path: Path) -> None:
    transcript = Transcript([Message.user("hi")])
    assert not transcript.rewind_to("msg_unknown")
    assert [m.text for m in transcript.messages] == ["hi"]
