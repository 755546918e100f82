import json
import os
from pathlib import Path

import pytest

from loom_engine.messages import Message, TextPart, ToolResultPart, ToolUsePart
from loom_engine.sessions.store import SessionError, SessionStore
from loom_engine.turn_state import TurnState


def test_write_list_and_load(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(Path("/work/repo"), provider="anthropic", model="m")
    writer.append_message(Message.user("fix the bug"))
    writer.append_message(Message.assistant(TextPart("done")))
    writer.append_turn_state(TurnState.initial().next_turn(), run_end="end_turn")
    writer.close()
    infos, warnings = store.list(Path("/work/repo"))
    assert warnings == [] and len(infos) == 1
    assert infos[0].first_prompt == "fix the bug" and infos[0].prompts == 1
    loaded = store.load(infos[0].id)
    assert [m.text for m in loaded.messages] == ["fix the bug", "done"]
    assert loaded.repaired == ()
    assert store.newest(Path("/elsewhere")) is None


def test_a_session_is_as_long_as_the_prompts_the_user_sent(tmp_path: Path) -> None:
    """Model turns, tool results, notes for the model and `!command`s are not prompts: one
    count, the one /clear, /resume and `loom sessions` show."""
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    state = TurnState.initial()
    for prompt in ("read it", "and again"):
        writer.append_message(Message.user(prompt))
        writer.append_message(Message.assistant(ToolUsePart(f"c-{prompt}", "read_file", {"path": "a"})))
        writer.append_message(Message.tool_results([ToolResultPart(f"c-{prompt}", "text")]))
        writer.append_message(Message.user("<system-reminder>a.py changed</system-reminder>", reminder=True))
        writer.append_message(Message.assistant(TextPart("read")))
        state = state.next_turn().next_turn()
        writer.append_turn_state(state, run_end="end_turn")
    writer.append_message(Message.user("ls", user_command={"command": "ls", "output": ""}))
    writer.close()
    infos, _ = store.list(Path("/w"))
    assert state.turn == 4 and infos[0].prompts == 2


def test_session_cut_mid_tool_resumes_valid(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    writer.append_message(Message.user("run it"))
    writer.append_message(Message.assistant(ToolUsePart("c1", "bash", {"command": "sleep 30"})))
    writer.close()  # killed here: no tool result, no turn end
    loaded = store.load(writer.id)
    roles = [m.role for m in loaded.messages]
    assert roles == ["user", "assistant", "tool", "user"]
    result = loaded.messages[2].tool_results_parts[0]
    assert result.tool_use_id == "c1" and result.is_error
    assert "interrupted" in loaded.messages[3].text.lower()
    # Reopening writes the repair so the file itself is whole again.
    store.open_writer(loaded).close()
    again = store.load(writer.id)
    assert again.repaired == () and len(again.messages) == 4


def test_truncated_last_line_is_tolerated_but_middle_garbage_is_not(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="openai", model="m")
    writer.append_message(Message.user("hello"))
    writer.close()
    with open(writer.path, "a") as handle:
        handle.write('{"type": "message", "mess')  # cut off by kill -9
    assert store.load(writer.id).messages[0].text == "hello"
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"type":"session","id":"broken"}\nnot json\n{"type":"turn_state","state":{}}\n')
    with pytest.raises(SessionError, match=r"broken\.jsonl is malformed at line 2"):
        store.load("broken")
    infos, warnings = store.list()
    assert [i.id for i in infos] == [writer.id]
    assert len(warnings) == 1 and "broken.jsonl" in warnings[0]


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    key = "sk-ant-api03-" + "A" * 60
    writer.append_message(Message.tool_results([ToolResultPart("c", f"KEY={key}")]))
    writer.close()
    assert key not in writer.path.read_text()
    for line in writer.path.read_text().splitlines():
        json.loads(line)


def test_bad_ids_are_refused(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with pytest.raises(SessionError, match="invalid session id"):
        store.load("../etc/passwd")
    with pytest.raises(SessionError, match="no session 'nope'"):
        store.load("nope")


def test_a_session_open_for_writing_is_locked_until_closed(tmp_path: Path) -> None:
    from loom_engine.sessions.store import SessionLocked

    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    writer.append_message(Message.user("hello"))
    loaded = store.load(writer.id)  # reading is always allowed
    with pytest.raises(SessionLocked) as info:
        store.open_writer(loaded)
    assert info.value.pid == os.getpid()
    assert str(info.value) == (f"session {writer.id} is in use by another loom (pid {os.getpid()}); "
                               "use --fork-session to continue a copy")
    writer.close()
    store.open_writer(loaded).close()  # free again


def test_fork_copies_the_history_into_a_new_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    writer.append_message(Message.user("fix the bug"))
    writer.append_message(Message.assistant(TextPart("done")))
    writer.append_turn_state(TurnState.initial().next_turn(), run_end="end_turn")
    loaded = store.load(writer.id)
    fork = store.fork(loaded, Path("/w"), provider="anthropic", model="m")  # while the original is open
    fork.append_message(Message.user("only in the fork"))
    fork.append_message(Message.assistant(TextPart("forked answer")))
    fork.close()
    writer.close()
    copy = store.load(fork.id)
    assert [m.text for m in copy.messages] == ["fix the bug", "done", "only in the fork", "forked answer"]
    assert copy.info.first_prompt == "fix the bug" and copy.turn_state.turn == 1
    assert [m.text for m in store.load(writer.id).messages] == ["fix the bug", "done"]


def test_latest_skips_unreadable_sessions_and_other_workspaces(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    mine = store.create(Path("/w"), provider="anthropic", model="m")
    mine.append_message(Message.user("mine"))
    mine.close()
    theirs = store.create(Path("/elsewhere"), provider="anthropic", model="m")
    theirs.close()
    broken = tmp_path / "zz-broken.jsonl"
    broken.write_text('{"type":"session","id":"zz-broken","workspace":"/w"}\n{"type":"message","message":5}\n')
    now = os.path.getmtime(mine.path)
    os.utime(theirs.path, (now + 1, now + 1))
    os.utime(broken, (now + 2, now + 2))
    loaded, skipped = store.latest(Path("/w"))
    assert loaded is not None and loaded.info.id == mine.id
    assert skipped == [f"skipped {broken}: session file zz-broken.jsonl is malformed at line 2: "
                       "the message is not a JSON object"]
    # A file whose header names another workspace is not this workspace's to report.
    assert store.latest(Path("/nowhere")) == (None, [])


def test_lone_surrogates_are_scrubbed_on_write_and_on_load(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    writer.append_message(Message.assistant(ToolUsePart("t1", "bash", {"command": "echo \ud83d"})))
    writer.append_message(Message.tool_results([ToolResultPart("t1", "\udcff")]))
    with open(writer.path, "a") as handle:  # an older Loom's escaped half pair
        handle.write(json.dumps({"type": "message", "message": {"role": "user", "parts": [
            {"type": "text", "text": "a\ud800b"}]}}) + "\n")
    writer.close()
    writer.path.read_bytes().decode("utf-8")
    texts = json.dumps([m.to_dict() for m in store.load(writer.id).messages], ensure_ascii=False)
    assert "echo \ufffd" in texts and "a\ufffdb" in texts and "\\ud" not in texts


def test_a_session_written_between_read_and_lock_is_read_again(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    writer = store.create(Path("/w"), provider="anthropic", model="m")
    writer.append_message(Message.user("one"))
    writer.append_message(Message.assistant(TextPart("first")))
    stale = store.load(writer.id)
    writer.append_message(Message.user("two"))  # another run's turn, after our read
    writer.append_message(Message.assistant(TextPart("second")))
    writer.close()
    resumed, fresh = store.resume(stale)
    resumed.close()
    assert [m.text for m in fresh.messages] == ["one", "first", "two", "second"]
    unchanged_writer, same = store.resume(fresh)
    unchanged_writer.close()
    assert same is fresh
