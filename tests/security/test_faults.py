"""Issue 9, items 14-17: faults and bad input, end to end through `loom run`.

14. a server that never answers or stalls mid-stream is timed out and retried; a 413
    is reported as a request that is too large, once;
15. a lone surrogate in model output and a NUL byte in a file tool's path are results
    the model reads, and the session stays one `--continue` can use;
16. bad bytes on the prompt, a config.toml that is not UTF-8 and session lines of the
    wrong shape give one line naming the cause and the file;
17. two runs on one session at once: the second is refused (with the holder's pid)
    and can fork a copy instead.

(The property test over every tool's arguments is tests/security/test_tool_fuzz.py.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM, loom, loom_env


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / "hello.py").write_text("print('hello')\n")
    return workspace


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The run's error: exactly one `loom:` line, and never an internal error."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("loom: ") and "internal error" not in lines[0] and "Traceback" not in done.stderr
    return lines[0]


def sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "data" / "sessions").glob("*.jsonl"))


def write_config(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text)
    else:
        path.write_bytes(text)
    return path


# --- 14: stalls and 413 -------------------------------------------------------------------------


def test_14_a_server_that_never_answers_is_retried_after_the_configured_timeout(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    write_config(tmp_path, "stream_first_byte_timeout = 0.5\nstream_idle_timeout = 0.5\n")
    fake_llm.enqueue(Reply.silent(), Reply.text("answered at last"))
    done = loom(["run", "hi"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answered at last"
    assert "did not answer within 0.5 s" in done.stderr and "retrying" in done.stderr
    # The message names the configured 0.5 s (the default is a minute): no wall-clock
    # bound, which a loaded machine's slow start would break.
    assert len(fake_llm.requests) == 2


def test_14_keep_alives_while_a_local_server_reads_the_prompt_are_waited_for(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """llama-server sends a ``: `` comment now and then (here every 0.7 s, longer than the
    0.5 s idle limit) while it reads a long prompt, and answers after longer than the
    first-byte limit: each comment restarts that limit, and there is no retry."""
    write_config(tmp_path, "stream_first_byte_timeout = 2.0\nstream_idle_timeout = 0.5\n")
    fake_llm.enqueue(Reply.slow_prompt("read it all", answer_after=3.0, keepalive_every=0.7),
                     Reply.text("a retry that must not happen"))
    done = loom(["run", "hi"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "read it all" and "retrying" not in done.stderr
    assert len(fake_llm.requests) == 1


def test_14_a_stream_that_stalls_mid_answer_is_retried_and_its_partial_text_dropped(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    write_config(tmp_path, "stream_first_byte_timeout = 0.5\nstream_idle_timeout = 0.5\n")
    fake_llm.enqueue(Reply.stall("half an answer that never ends", after=5, chunk_size=4),
                     Reply.text("the whole answer"))
    done = loom(["run", "hi", "-o", "loom-stream-json"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    retry = next(e for e in events if e["type"] == "retrying")
    assert retry["discard_partial"] is True and "went silent" in retry["reason"]
    assert events[-1]["type"] == "finished" and events[-1]["result"] == "the whole answer"


def test_14_a_413_from_a_proxy_is_one_line_and_not_retried(repo: Path, tmp_path: Path,
                                                           fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.proxy_error(413, "Request Entity Too Large"), Reply.text("unused"))
    done = loom(["run", "hi"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 1
    assert one_line_error(done) == ("loom: request too large (413 from the server or a proxy: 413 Request "
                                    "Entity Too Large); try /compact, or send fewer or smaller files and images")
    assert len(fake_llm.requests) == 1


def test_14_a_timeout_setting_that_is_not_positive_is_a_config_error(repo: Path, tmp_path: Path,
                                                                    fake_llm: FakeLLMServer) -> None:
    path = write_config(tmp_path, "stream_idle_timeout = 0\n")
    done = loom(["run", "hi"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 1
    line = one_line_error(done)
    assert str(path) in line and "stream_idle_timeout" in line


# --- 15: lone surrogates and NUL bytes from the model -------------------------------------------


def test_15_a_lone_surrogate_in_a_tool_call_is_a_result_and_the_session_stays_valid(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    # The fake server writes "\ud83d" as JSON does: half of a UTF-16 pair.
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo \ud83d"}, text="a\ud83d"), Reply.text("ran it"))
    env = loom_env(tmp_path, fake_llm)
    done = loom(["run", "go", "--permission-mode", "bypass"], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran it"
    sent = fake_llm.requests[1].body["messages"]
    call = next(b for m in sent for b in m["content"] if b.get("type") == "tool_use")
    assert call["input"] == {"command": "echo \ufffd"}
    result = next(b for m in sent for b in m["content"] if b.get("type") == "tool_result")
    assert "\ufffd" in json.dumps(result, ensure_ascii=False)
    [session] = sessions(tmp_path)
    session.read_bytes().decode("utf-8")  # whole, valid UTF-8

    fake_llm.enqueue(Reply.text("still here"))
    again = loom(["run", "and now?", "--continue"], repo, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "still here"
    assert fake_llm.requests[-1].rejected is None


@pytest.mark.parametrize(("tool", "arguments"), [
    ("read_file", {"path": "hello\x00.py"}),
    ("write_file", {"path": "new\x00.py", "content": "x"}),
    ("edit_file", {"path": "hello.py\x00", "old_string": "hello", "new_string": "bye"}),
    ("multi_edit", {"path": "\x00", "edits": [{"old_string": "hello", "new_string": "bye"}]}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: hel\x00lo.py\n@@\n-print('hello')\n"
                              "+print('bye')\n*** End Patch"}),
])
def test_15_a_nul_byte_in_a_file_tool_path_is_an_error_result(tool: str, arguments: dict[str, object], repo: Path,
                                                              tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool(tool, arguments), Reply.text("understood"))
    done = loom(["run", "go", "--permission-mode", "bypass"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "understood"
    result = next(b for m in fake_llm.requests[1].body["messages"] for b in m["content"]
                  if b.get("type") == "tool_result")
    assert result.get("is_error") is True and "internal error" not in json.dumps(result)
    assert (repo / "hello.py").read_text() == "print('hello')\n"


def test_15_a_session_written_with_a_lone_surrogate_resumes(repo: Path, tmp_path: Path,
                                                            fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.text("first"))
    assert loom(["run", "hello"], repo, env).returncode == 0
    [session] = sessions(tmp_path)
    # What an older Loom could leave: an escaped half pair (valid JSON, unencodable text).
    with session.open("a") as handle:
        handle.write(json.dumps({"type": "message", "message": {"id": "m1", "role": "user", "parts": [
            {"type": "text", "text": "broken \ud83d half"}]}}) + "\n")
        handle.write(json.dumps({"type": "message", "message": {"id": "m2", "role": "assistant", "parts": [
            {"type": "text", "text": "ok"}]}}) + "\n")
    fake_llm.enqueue(Reply.text("resumed"))
    done = loom(["run", "go on", "--continue"], repo, env)
    assert done.returncode == 0, done.stderr
    assert "broken \ufffd half" in json.dumps(fake_llm.requests[-1].body["messages"], ensure_ascii=False)


def test_15_a_session_with_an_orphan_tool_result_resumes(repo: Path, tmp_path: Path,
                                                         fake_llm: FakeLLMServer) -> None:
    # What the surrogate crash used to leave: the tool call's line lost, its result kept.
    env = loom_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.text("first"))
    assert loom(["run", "hello"], repo, env).returncode == 0
    [session] = sessions(tmp_path)
    with session.open("a") as handle:
        handle.write(json.dumps({"type": "message", "message": {"id": "m1", "role": "tool", "parts": [
            {"type": "tool_result", "tool_use_id": "toolu_lost", "content": "x", "is_error": True}]}}) + "\n")
    fake_llm.enqueue(Reply.text("resumed"))
    done = loom(["run", "go on", "--continue"], repo, env)
    assert done.returncode == 0, done.stderr
    assert fake_llm.requests[-1].rejected is None
    assert "toolu_lost" not in json.dumps(fake_llm.requests[-1].body["messages"])


# --- 16: bad bytes and bad files ---------------------------------------------------------------


def test_16_bad_bytes_on_standard_input(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    done = loom(["run", "-"], repo, loom_env(tmp_path, fake_llm), stdin=b"fix \xff")
    assert done.returncode == 2
    assert one_line_error(done) == "loom: the prompt on standard input is not UTF-8 (byte 0xff at position 4)"
    assert fake_llm.requests == []


def test_16_bad_bytes_in_the_prompt_argument(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    done = subprocess.run([*LOOM, "run", b"fix \xfe it"], cwd=repo, env=loom_env(tmp_path, fake_llm),
                          capture_output=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "loom: the prompt argument is not UTF-8 (byte 0xfe at position 4)"


def test_16_a_config_file_that_is_not_utf8(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    path = write_config(tmp_path, b'model = "caf\xe9"\n')
    done = loom(["run", "hi"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 1
    assert one_line_error(done) == f"loom: {path}: not UTF-8 text (byte 0xe9 at position 12)"


def test_16_an_answer_a_narrow_terminal_cannot_show_is_printed_with_replacements(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("done \u2713 caf\u00e9"))
    env = {**loom_env(tmp_path, fake_llm), "PYTHONIOENCODING": "ascii"}
    done = loom(["run", "hi"], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done ? caf?\n" and done.stderr == ""


BAD_LINES = {
    "not json": "{not json",
    "a list": "[1, 2]",
    "message is a string": '{"type":"message","message":"hi"}',
    "parts is a string": '{"type":"message","message":{"role":"user","parts":"abc"}}',
    "a part is a number": '{"type":"message","message":{"role":"user","parts":[5]}}',
    "text is a number": '{"type":"message","message":{"role":"user","parts":[{"type":"text","text":5}]}}',
    "input is a list": ('{"type":"message","message":{"role":"assistant","parts":[{"type":"tool_use",'
                        '"id":"t","name":"bash","input":[1]}]}}'),
    "is_error is a string": ('{"type":"message","message":{"role":"tool","parts":[{"type":"tool_result",'
                             '"tool_use_id":"t","content":"x","is_error":"yes"}]}}'),
    "unknown role": '{"type":"message","message":{"role":"wizard","parts":[]}}',
    "state is a list": '{"type":"turn_state","state":[]}',
    "turn is a word": '{"type":"turn_state","state":{"turn":"three"}}',
    "compaction without a list": '{"type":"compaction","messages":{}}',
    "meta is a list": '{"type":"message","message":{"role":"user","parts":[],"meta":[1]}}',
}


@pytest.fixture(scope="module")
def written_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The name and text of the session one `loom run` wrote: the tests below resume a
    damaged copy of it in their own data folder (a run each would cost a Loom start)."""
    root = tmp_path_factory.mktemp("written-session")
    server = FakeLLMServer().start()
    try:
        server.enqueue(Reply.text("first"))
        done = loom(["run", "hello"], root, loom_env(root, server))
        assert done.returncode == 0, done.stderr
    finally:
        server.stop()
    [session] = sessions(root)
    return session.name, session.read_text()


def copy_of(written: tuple[str, str], tmp_path: Path) -> Path:
    name, text = written
    session = tmp_path / "data" / "sessions" / name
    session.parent.mkdir(parents=True)
    session.write_text(text)
    return session


@pytest.mark.parametrize("shape", sorted(BAD_LINES))
def test_16_a_session_line_of_the_wrong_shape_names_the_file_and_line(
        shape: str, repo: Path, tmp_path: Path, fake_llm: FakeLLMServer, written_session: tuple[str, str]) -> None:
    env = loom_env(tmp_path, fake_llm)
    session = copy_of(written_session, tmp_path)
    lines = session.read_text().splitlines()
    session.write_text("\n".join([lines[0], BAD_LINES[shape], *lines[1:]]) + "\n")
    done = loom(["run", "go on", "--resume", session.stem], repo, env)
    assert done.returncode == 1
    line = one_line_error(done)
    assert line.startswith(f"loom: cannot resume: session file {session.name} is malformed at line 2: "), line


def test_16_a_session_that_is_not_utf8(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                      written_session: tuple[str, str]) -> None:
    env = loom_env(tmp_path, fake_llm)
    session = copy_of(written_session, tmp_path)
    with session.open("ab") as handle:
        handle.write(b'{"type":"message","message":{"role":"user","parts":[{"type":"text","text":"\xff"}]}}\n')
    done = loom(["run", "go on", "--resume", session.stem], repo, env)
    assert done.returncode == 1
    assert "is not UTF-8 text (byte 0xff at line" in one_line_error(done)


def test_16_continue_skips_a_corrupt_newest_session_and_says_so(repo: Path, tmp_path: Path,
                                                                fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.text("older answer"), Reply.text("newer answer"))
    assert loom(["run", "the older one"], repo, env).returncode == 0
    time.sleep(0.05)
    assert loom(["run", "the newer one"], repo, env).returncode == 0
    older, newer = sorted(sessions(tmp_path), key=lambda p: p.stat().st_mtime)
    with newer.open("a") as handle:
        handle.write("garbage in the middle\n{\"type\":\"turn_state\",\"state\":{}}\n")
    fake_llm.enqueue(Reply.text("continued"))
    done = loom(["run", "go on", "--continue"], repo, env)
    assert done.returncode == 0, done.stderr
    assert f"loom: warning: skipped {newer}: session file {newer.name} is malformed at line" in done.stderr
    assert "the older one" in json.dumps(fake_llm.requests[-1].body["messages"])

    older.write_text("{broken\n")
    done = loom(["run", "go on", "--continue"], repo, env)
    assert done.returncode == 1
    line = one_line_error(done)
    assert line.startswith(f"loom: no earlier session in {repo} to continue (skipped ")
    assert older.name in line and newer.name in line


# --- 17: two runs on one session --------------------------------------------------------------


def test_17_a_second_continue_of_a_session_in_use_is_refused_and_can_fork(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.text("first answer"))
    assert loom(["run", "start"], repo, env).returncode == 0
    [original] = sessions(tmp_path)

    held, gate = Reply.text("answer of run A").held()
    fake_llm.enqueue(held)
    run_a = subprocess.Popen([*LOOM, "run", "message of run A", "--continue"], cwd=repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert fake_llm.wait_for_requests(2, timeout=30)  # A is mid-answer, holding the session
        second = loom(["run", "message of run B", "--continue"], repo, env)
        assert second.returncode == 1
        assert one_line_error(second) == (f"loom: session {original.stem} is in use by another loom "
                                          f"(pid {run_a.pid}); use --fork-session to continue a copy")
        assert len(fake_llm.requests) == 2  # B never reached the model

        fake_llm.enqueue(Reply.text("answer of the fork"))
        fork = loom(["run", "message of the fork", "--continue", "--fork-session"], repo, env)
        assert fork.returncode == 0, fork.stderr
        assert fork.stdout.strip() == "answer of the fork"
        sent = json.dumps(fake_llm.requests[-1].body["messages"])
        # A copy of the file as it stood: A's question, closed as cut off, not A's answer.
        assert "start" in sent and "first answer" in sent and "answer of run A" not in sent
    finally:
        gate.set()
        _, err = run_a.communicate(timeout=30)
    assert run_a.returncode == 0, err
    text = original.read_text()
    assert "message of run A" in text and "answer of run A" in text
    assert "message of run B" not in text and "message of the fork" not in text
    forked = [p for p in sessions(tmp_path) if p != original]
    assert len(forked) == 1 and "message of the fork" in forked[0].read_text()
    assert json.loads(forked[0].read_text().splitlines()[0])["forked_from"] == original.stem


def test_17_the_lock_goes_with_a_killed_run(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm)
    held, gate = Reply.text("never delivered").held()
    fake_llm.enqueue(held)
    run_a = subprocess.Popen([*LOOM, "run", "start"], cwd=repo, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert fake_llm.wait_for_requests(1, timeout=30)
        os.kill(run_a.pid, signal.SIGKILL)
        run_a.wait(timeout=30)
    finally:
        gate.set()
    fake_llm.enqueue(Reply.text("picked up"))
    done = loom(["run", "again", "--continue"], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "picked up"


def test_17_fork_session_needs_a_session_to_fork(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    done = loom(["run", "hi", "--fork-session"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 2
    assert one_line_error(done) == "loom: --fork-session needs --continue or --resume"


async def test_15_surrogates_from_the_prompt_and_from_file_names_reach_neither_session_nor_request(
        repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    # An embedder's prompt with half a pair, and a file whose name is not UTF-8 (Python
    # spells the byte as a lone surrogate, which ls then prints).
    from builtin_tools import default_tools
    from loom_engine.agent import Agent
    from loom_engine.config import AgentConfig
    from loom_engine.events import Finished
    from loom_engine.parts import AgentParts
    from loom_engine.permissions.manager import PermissionManager
    from loom_engine.providers.anthropic_provider import AnthropicProvider
    from loom_engine.sessions.store import SessionStore
    from loom_engine.workspace import Workspace

    (repo / os.fsdecode(b"bad-\xff-name.txt")).write_text("x")
    fake_llm.enqueue(Reply.tool("ls", {"path": "."}), Reply.text("listed"))
    workspace = Workspace.at(repo)
    store = SessionStore(tmp_path / "sessions")
    session = store.create(repo, provider="anthropic", model="claude-haiku-4-5")
    agent = Agent(AgentConfig(model="claude-haiku-4-5", interactive=False),
                  AgentParts(provider=AnthropicProvider(api_key="k", base_url=fake_llm.anthropic_base_url),
                             tools=default_tools(), workspace=workspace,
                             permissions=PermissionManager(workspace, mode="default")), session=session)
    try:
        events = [e async for e in agent.run("list \ud83d the files")]
    finally:
        await agent.aclose()
        session.close()
    assert isinstance(events[-1], Finished) and events[-1].result == "listed"
    sent = json.dumps(fake_llm.requests[-1].body["messages"], ensure_ascii=False)
    assert "list \ufffd the files" in sent and "bad-\ufffd-name.txt" in sent
    assert all(r.rejected is None for r in fake_llm.requests)
    loaded = store.load(session.id)
    assert "list \ufffd the files" in json.dumps([m.to_dict() for m in loaded.messages], ensure_ascii=False)
